package io.qgpu.testkit.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.IsolationPolicy;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The adaptive release rule against qGPU's fixed 100 ms, with the cost model on: online inference
 * at 20% load in Poisson arrivals (20 requests/s, exponential 10 ms of GPU time each), offline
 * training in 2 ms kernels that cannot be interrupted, 100 us per switch, 60 s, seeds 1-3.
 */
class ReleaseTargetsTest {

    static Scenario poissonTwentyPercent(long seed) {
        TenantSpec infer = TenantSpec.online("infer", new Workload.OpenLoop(20, Dist.exponential(Duration.ofMillis(10))));
        TenantSpec train = TenantSpec.offline("train", new Workload.Training(Dist.constant(Duration.ofMillis(100)),
                Dist.constant(Duration.ofMillis(5)), 50));
        return Scenario.builder("poisson-20").duration(Duration.ofSeconds(60)).seed(seed)
                .cost(PreemptionCost.of(true, Duration.ofNanos(100_000)))
                .gpu(GpuSpec.of("gpu0", IsolationPolicy.BEST_EFFORT, List.of(infer, train))).build();
    }

    private static final java.util.Map<Long, ReleaseComparison> RUNS = new java.util.concurrent.ConcurrentHashMap<>();

    /** Each seed's nine runs once for all tests (about 0.1 s of real time per 60 s run). */
    private static ReleaseComparison compare(long seed) {
        return RUNS.computeIfAbsent(seed, k -> {
            Scenario s = poissonTwentyPercent(k);
            return ReleaseComparison.run(Simulator.standard(), s, ReleaseComparison.DEFAULT_DELAYS, ReleaseComparison.adaptiveFor(s));
        });
    }

    @Test
    void adaptiveGivesOfflineAtLeastOneAndAHalfTimesTheGpuTimeOfAFixedHundredMillisecondsAtAtMostTenPercentMoreOnlineP99() {
        for (long seed = 1; seed <= 3; seed++) {
            ReleaseComparison c = compare(seed);
            ReleaseComparison.Point fixed100 = c.fixedPoint(Duration.ofMillis(100));
            ReleaseComparison.Point adaptive = c.adaptive();
            assertTrue(adaptive.offlineShare() >= 1.5 * fixed100.offlineShare(), "seed " + seed + ": " + adaptive + " vs " + fixed100);
            assertTrue(adaptive.onlineWaitP99Nanos() <= 1.1 * fixed100.onlineWaitP99Nanos(),
                    "seed " + seed + ": " + adaptive + " vs " + fixed100);
            assertTrue(fixed100.releaseIdleShare() > 0.6, "the fixed 100 ms leaves the GPU idle most of the run: " + fixed100);
        }
    }

    @Test
    void adaptiveSitsOnOrAboveTheFixedDelayFrontier() {
        for (long seed = 1; seed <= 3; seed++) {
            ReleaseComparison c = compare(seed);
            assertEquals(List.of(), c.dominating(c.adaptive(), 0), "seed " + seed + ": " + c);
        }
    }

    /** The frontier check rejects a point that a fixed delay beats, and only such a point. */
    @Test
    void theFrontierCheckRejectsADominatedRule() {
        ReleaseComparison c = compare(1);
        ReleaseComparison.Point fixed50 = c.fixedPoint(Duration.ofMillis(50));
        ReleaseComparison.Point worse = new ReleaseComparison.Point("wasteful", fixed50.offlineShare() - 0.01,
                fixed50.onlineWaitP99Nanos() + 1, 0);
        assertTrue(c.dominating(worse, 0).contains(fixed50), c.toString());
        ReleaseComparison.Point better = new ReleaseComparison.Point("better", fixed50.offlineShare() + 0.01,
                fixed50.onlineWaitP99Nanos(), 0);
        assertTrue(c.dominating(better, 0).stream().noneMatch(f -> f.onlineWaitP99Nanos() > better.onlineWaitP99Nanos()));
    }
}
