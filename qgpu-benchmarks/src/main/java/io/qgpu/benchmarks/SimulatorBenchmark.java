package io.qgpu.benchmarks;

import io.qgpu.api.IsolationPolicy;
import io.qgpu.testkit.sim.Dist;
import io.qgpu.testkit.sim.GpuSpec;
import io.qgpu.testkit.sim.Scenario;
import io.qgpu.testkit.sim.SimResult;
import io.qgpu.testkit.sim.Simulator;
import io.qgpu.testkit.sim.TenantSpec;
import io.qgpu.testkit.sim.Workload;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Simulated scheduling events per second: one GPU with online inference, an offline trainer and an
 * offline preprocessor (every grant, release, suspension, resumption, kernel and request is an event),
 * 10 s of virtual time per operation. The {@code events} counter is reported as events per second.
 *
 * <pre>
 * java -jar qgpu-benchmarks/target/benchmarks.jar SimulatorBenchmark
 * </pre>
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
@State(Scope.Benchmark)
public class SimulatorBenchmark {

    @Param({"best-effort", "burst-share", "elastic"})
    public String policy;

    private Scenario scenario;
    private Simulator simulator;

    /** Events processed, reported per second. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Events {
        public long events;

        @Setup(Level.Iteration)
        public void reset() {
            events = 0;
        }
    }

    @Setup
    public void setUp() {
        TenantSpec infer = TenantSpec.online("infer", new Workload.OpenLoop(20, Dist.exponential(Duration.ofMillis(5))));
        TenantSpec train = TenantSpec.offline("train", new Workload.Training(
                Dist.uniform(Duration.ofMillis(40), Duration.ofMillis(60)), Dist.constant(Duration.ofMillis(5)), 20))
                .withShare(60, 90).withSuspendLatency(Dist.uniform(Duration.ofNanos(20_000), Duration.ofNanos(800_000)));
        TenantSpec prep = TenantSpec.offline("prep", new Workload.ClosedLoop(
                Dist.uniform(Duration.ofNanos(500_000), Duration.ofMillis(3)), Dist.constant(Duration.ZERO))).withShare(30, 90);
        scenario = Scenario.builder("bench").duration(Duration.ofSeconds(10)).seed(1)
                .gpu(GpuSpec.of("gpu0", IsolationPolicy.fromName("policy", policy), List.of(infer, train, prep))).build();
        simulator = Simulator.standard();
    }

    @Benchmark
    public SimResult simulate10s(Events counter) {
        SimResult r = simulator.run(scenario);
        counter.events += r.events();
        return r;
    }
}
