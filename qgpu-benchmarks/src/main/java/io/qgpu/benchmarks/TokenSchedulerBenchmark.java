package io.qgpu.benchmarks;

import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.Ticker;
import io.qgpu.core.compute.ComputeEngine;
import io.qgpu.core.compute.TokenDecision;
import io.qgpu.core.compute.TokenSchedulerConfig;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The cost of one grant-and-release of the token with N busy tenants on a GPU under the elastic
 * policy (usage in the sliding window, Gemini's selection, quota adaptation), on a virtual clock
 * that advances by each grant.
 *
 * <pre>
 * java -jar qgpu-benchmarks/target/benchmarks.jar TokenSchedulerBenchmark
 * </pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class TokenSchedulerBenchmark {

    @Param({"2", "8", "16"})
    public int tenants;

    private long now;
    private ComputeEngine engine;

    @Setup
    public void setUp() {
        Ticker clock = () -> now;
        engine = ComputeEngine.create(IsolationPolicy.ELASTIC, TokenSchedulerConfig.ofDefaults(), clock);
        for (int i = 0; i < tenants; i++) {
            engine.addTenant("t" + i, 100 / tenants / 2, 100);
            engine.request("t" + i);
        }
    }

    @Benchmark
    public TokenDecision grantAndRelease() {
        TokenDecision d = engine.schedule();
        if (d instanceof TokenDecision.Granted g) {
            now = g.grant().expiresAtNanos();
            engine.release(g.grant().tenant(), 0);
            engine.request(g.grant().tenant());
        } else if (d instanceof TokenDecision.WaitUntil w) {
            now = w.atNanos();
        }
        return d;
    }
}
