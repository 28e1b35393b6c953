package io.qgpu.benchmarks;

import io.qgpu.core.gate.Gate;
import io.qgpu.core.gate.GateConfig;
import io.qgpu.core.gate.Lease;
import io.qgpu.core.gate.Tenant;
import io.qgpu.core.gate.GateTenantSpec;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The gate's own CPU cost of one whole preemption cycle, on one thread so that no thread has to be
 * woken: an online acquire preempts the running offline lease (the gate publishes the suspension),
 * the offline lease stops at its checkpoint ({@link Lease#checkpointAsync()}), the online lease is
 * granted and closed, and the offline lease resumes (release delay 0). With real threads
 * ({@link GatePreemptionBenchmark}) the same cycle adds two thread wake-ups and the wait for the
 * offline thread to reach its check.
 *
 * <pre>
 * java -jar qgpu-benchmarks/target/benchmarks.jar GateCycleBenchmark -f 1 -wi 3 -i 5 -prof gc
 * </pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class GateCycleBenchmark {

    private Gate gate;
    private Tenant online;
    private Lease offline;

    @Setup
    public void setUp() {
        gate = Gate.create("GPU-cycle", GateConfig.custom().releaseDelay(Duration.ZERO)
                .preemptionBound(Duration.ofSeconds(10)).usageReportInterval(Duration.ZERO).build());
        online = gate.register(GateTenantSpec.online("infer").build());
        Tenant train = gate.register(GateTenantSpec.offline("train").build());
        offline = gate.tryAcquire(train).orElseThrow(() -> new IllegalStateException("offline lease not granted"));
    }

    @Benchmark
    public Lease preemptAndResume() {
        CompletableFuture<Lease> on = gate.acquireAsync(online);      // publishes the suspension
        CompletableFuture<Lease> parked = offline.checkpointAsync();  // offline stops at its checkpoint
        Lease l = on.join();                                          // online runs
        l.close();                                                    // online idle, release delay 0
        if (!parked.isDone()) {
            throw new IllegalStateException("offline did not resume");
        }
        return l;
    }

    @TearDown
    public void tearDown() {
        offline.close();
        if (gate.openLeases() != 0) {
            throw new IllegalStateException("leases leaked: " + gate.openLeases());
        }
        gate.close();
    }
}
