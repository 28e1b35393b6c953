package io.qgpu.benchmarks;

import com.google.common.util.concurrent.RateLimiter;
import io.github.bucket4j.Bandwidth;
import io.github.bucket4j.Bucket;
import io.github.resilience4j.ratelimiter.RateLimiterConfig;
import io.qgpu.core.gate.Gate;
import io.qgpu.core.gate.GateConfig;
import io.qgpu.core.gate.Lease;
import io.qgpu.core.gate.Tenant;
import io.qgpu.core.gate.GateTenantSpec;
import java.time.Duration;
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
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The cost of admitting one unit of work: the runtime gate's acquire + close next to the rate
 * limiters JVM services use for the same job (Guava's {@code RateLimiter}, Bucket4j's lock-free
 * bucket, Resilience4j's {@code AtomicRateLimiter}), each behind a one-method adapter and configured
 * so that it never refuses or waits: what is measured is the bookkeeping. Uncontended (1 thread) and
 * with 2 and 4 threads sharing one limiter (one tenant).
 *
 * <ul>
 *   <li>{@code gate-offline}: an offline tenant holding the GPU's token (fast path).</li>
 *   <li>{@code gate-online}: an online tenant in online mode (fast path).</li>
 *   <li>{@code gate-listener}: as {@code gate-offline}, with a listener, so every lease builds two events.</li>
 *   <li>{@code two-clock-reads}: two {@link System#nanoTime()} calls, the floor of any admission that
 *       accounts time (the gate reads the clock at acquire and at close).</li>
 *   <li>{@code gate-frozen-clock}: as {@code gate-offline} with a ticker that always reads the same
 *       time: the gate's bookkeeping without the cost of reading the clock (every busy period is
 *       empty, so none is recorded in the usage window).</li>
 *   <li>{@code gate-stepping-clock}: as {@code gate-offline} with a ticker that steps 7 ns at each
 *       read (a plain field: meaningful in {@code uncontended} only): the bookkeeping, the usage
 *       window's included, without the cost of reading the clock.</li>
 * </ul>
 *
 * <pre>
 * ./mvnw -q package -DskipTests -pl qgpu-benchmarks -am
 * java -jar qgpu-benchmarks/target/benchmarks.jar GateBenchmark -f 1 -wi 3 -i 5 -prof gc
 * </pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class GateBenchmark {

    /** One admission: take and give back. */
    interface Admission {
        void admit();
    }

    @Param({"gate-offline", "gate-online", "gate-listener", "gate-frozen-clock", "gate-stepping-clock", "guava", "bucket4j", "resilience4j",
            "two-clock-reads"})
    public String limiter;

    private Admission admission;
    private Gate gate;

    @Setup
    public void setUp() throws InterruptedException {
        switch (limiter) {
            case "gate-offline", "gate-online", "gate-listener", "gate-frozen-clock", "gate-stepping-clock" -> {
                GateConfig.Builder config = GateConfig.custom().usageReportInterval(Duration.ZERO);
                if (limiter.equals("gate-frozen-clock")) {
                    long frozen = System.nanoTime();
                    config.ticker(() -> frozen);
                } else if (limiter.equals("gate-stepping-clock")) {
                    long[] time = {System.nanoTime()};
                    config.ticker(() -> time[0] += 7);   // plain field: one thread only (uncontended)
                }
                gate = Gate.create("GPU-bench", config.build());
                boolean online = limiter.equals("gate-online");
                Tenant t = gate.register(online ? GateTenantSpec.online("t").build() : GateTenantSpec.offline("t").build());
                if (limiter.equals("gate-listener")) {
                    gate.addListener(e -> { });
                }
                gate.acquire(t).close();   // the tenant now runs (online mode / holds the token)
                Gate g = gate;
                admission = () -> {
                    try (Lease lease = g.acquire(t)) {
                        // the unit of GPU work would run here
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                };
            }
            case "guava" -> {
                RateLimiter r = RateLimiter.create(1e12);
                admission = () -> {
                    if (!r.tryAcquire()) {
                        throw new IllegalStateException("guava refused");
                    }
                };
            }
            case "bucket4j" -> {
                Bucket b = Bucket.builder()
                        .addLimit(Bandwidth.builder().capacity(1_000_000_000_000L)   // 1 token/ns: its highest rate
                                .refillGreedy(1_000_000_000L, Duration.ofSeconds(1)).build())
                        .build();
                admission = () -> {
                    if (!b.tryConsume(1)) {
                        throw new IllegalStateException("bucket4j refused");
                    }
                };
            }
            case "resilience4j" -> {
                io.github.resilience4j.ratelimiter.RateLimiter r = io.github.resilience4j.ratelimiter.RateLimiter.of("bench",
                        RateLimiterConfig.custom().limitForPeriod(Integer.MAX_VALUE)
                                .limitRefreshPeriod(Duration.ofSeconds(1)).timeoutDuration(Duration.ZERO).build());
                admission = () -> {
                    if (!r.acquirePermission()) {
                        throw new IllegalStateException("resilience4j refused");
                    }
                };
            }
            case "two-clock-reads" -> admission = () -> {
                if (System.nanoTime() == System.nanoTime() - 1) {
                    throw new IllegalStateException("time went backwards");
                }
            };
            default -> throw new IllegalArgumentException(limiter);
        }
    }

    @TearDown
    public void tearDown() {
        if (gate != null) {
            if (gate.openLeases() != 0) {
                throw new IllegalStateException("leases leaked: " + gate.openLeases());
            }
            gate.close();
        }
    }

    @Benchmark
    @Threads(1)
    public void uncontended() {
        admission.admit();
    }

    @Benchmark
    @Threads(2)
    public void threads2() {
        admission.admit();
    }

    @Benchmark
    @Threads(4)
    public void threads4() {
        admission.admit();
    }
}
