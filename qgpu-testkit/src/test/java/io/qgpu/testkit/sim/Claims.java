package io.qgpu.testkit.sim;

import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.PriorityClass;
import io.qgpu.core.compute.TokenSchedulerConfig;
import io.qgpu.core.preempt.PreemptionConfig;
import java.time.Duration;
import java.util.List;

/**
 * The seeds' claims as scenarios and checks in numbers. Each check returns the first violation in
 * words, or {@code null} when the claim holds.
 */
final class Claims {

    static final long S = 1_000_000_000L;
    static final long MS = 1_000_000L;
    /** The tolerance of "within one scheduling tick". */
    static final long TICK = MS;

    private Claims() {
    }

    static Workload busy(Duration kernelMin, Duration kernelMax) {
        return new Workload.ClosedLoop(Dist.uniform(kernelMin, kernelMax), Dist.constant(Duration.ZERO));
    }

    // ---- 1. best-effort: N busy tenants get 1/N each, within 1% ----

    static Scenario bestEffort(int n, Slicing slicing) {
        List<TenantSpec> ts = new java.util.ArrayList<>();
        for (int i = 0; i < n; i++) {
            // different kernel lengths on purpose: 1-3 ms, 5-15 ms, 20-40 ms, ...
            Duration lo = Duration.ofMillis(1 + 5L * i * i);
            ts.add(TenantSpec.offline("t" + i, busy(lo, lo.multipliedBy(3))));
        }
        return Scenario.builder("best-effort-" + n).duration(Duration.ofSeconds(60)).seed(11)
                .gpu(GpuSpec.of("gpu0", IsolationPolicy.BEST_EFFORT, ts).withSlicing(slicing)).build();
    }

    static String equalShares(SimResult r, double tolerance) {
        List<TenantMetrics> ts = r.tenants();
        double fair = 1.0 / ts.size();
        for (TenantMetrics t : ts) {
            if (Math.abs(t.share() - fair) > tolerance) {
                return t.tenant() + " got " + pct(t.share()) + ", fair is " + pct(fair) + " +- " + pct(tolerance);
            }
        }
        return null;
    }

    // ---- 2. fixed-share never exceeds its quota over any window ----

    static Scenario fixedShare() {
        // training with data-loading gaps: its usage history is irregular, so old usage leaves the
        // window unevenly (where a whole-quota grant near the limit would overshoot)
        TenantSpec train = TenantSpec.offline("train", new Workload.Training(
                Dist.uniform(Duration.ofMillis(200), Duration.ofMillis(600)), Dist.uniform(Duration.ofMillis(50),
                Duration.ofMillis(400)), 20)).withShare(30, 30);
        TenantSpec bursty = TenantSpec.offline("bursty", new Workload.ClosedLoop(
                Dist.uniform(Duration.ofMillis(1), Duration.ofMillis(9)), Dist.exponential(Duration.ofMillis(3))))
                .withShare(50, 50).withActive(Duration.ZERO, Duration.ofSeconds(25));
        TenantSpec busy = TenantSpec.offline("busy", busy(Duration.ofMillis(2), Duration.ofMillis(6))).withShare(20, 20);
        return Scenario.builder("fixed-share").duration(Duration.ofSeconds(60)).seed(5)
                .gpu(GpuSpec.of("gpu0", IsolationPolicy.FIXED_SHARE, List.of(train, bursty, busy))).build();
    }

    /** No tenant exceeds its request (its fixed quota) in any window of the usage window's length. */
    static String neverAboveQuota(SimResult r) {
        long w = r.scenario().compute().windowNanos();
        for (TenantMetrics t : r.tenants()) {
            double quota = t.requestPercent() / 100.0 * w;
            double worst = r.busy(t.tenant()).maxWindowUsage(w, 0, r.scenario().durationNanos());
            if (worst > quota + 1) {
                return t.tenant() + " used " + Dist.fmt(Math.round(worst)) + " in one " + Dist.fmt(w) + " window, quota "
                        + Dist.fmt(Math.round(quota));
            }
        }
        return null;
    }

    // ---- 3. burst-share: guarantee under contention, idle capacity when alone ----

    static Scenario burstShare() {
        Workload w = busy(Duration.ofMillis(2), Duration.ofMillis(8));
        TenantSpec a = TenantSpec.offline("a", w).withShare(20, 100);
        TenantSpec b = TenantSpec.offline("b", w).withShare(30, 100).withActive(Duration.ofSeconds(20), null);
        TenantSpec c = TenantSpec.offline("c", w).withShare(50, 100).withActive(Duration.ofSeconds(20), null);
        return Scenario.builder("burst-share").duration(Duration.ofSeconds(60)).seed(9)
                .gpu(GpuSpec.of("gpu0", IsolationPolicy.BURST_SHARE, List.of(a, b, c))).build();
    }

    /** Alone in [from, to): at least {@code atLeast} of the GPU. */
    static String takesIdleCapacity(SimResult r, String tenant, long from, long to, double atLeast) {
        double share = r.busy(tenant).gpuNanosBetween(from, to) / (to - from);
        return share + 1e-9 < atLeast ? tenant + " alone got " + pct(share) + " of the GPU in [" + from / S + " s, "
                + to / S + " s), expected at least " + pct(atLeast) : null;
    }

    /**
     * Under contention from {@code from}: every tenant's share over [from, end) is at least its
     * request minus {@code averageTolerance}, and every window ending after {@code from + window}
     * holds at least request x window minus one base quota (the granularity of the token: when the
     * requests add up to the whole GPU, Gemini's "lowest usage first" hands the grant that ties two
     * satisfied tenants to the smaller one).
     */
    static String keepsRequests(SimResult r, List<String> tenants, long from, double averageTolerance) {
        long w = r.scenario().compute().windowNanos();
        long end = r.scenario().durationNanos();
        long grain = r.scenario().compute().baseQuotaNanos();
        for (String id : tenants) {
            TenantMetrics t = r.tenant(id);
            double req = t.requestPercent() / 100.0;
            double share = r.busy(id).gpuNanosBetween(from, end) / (end - from);
            if (share + averageTolerance < req) {
                return id + " got " + pct(share) + " under contention, request " + pct(req) + " - " + pct(averageTolerance);
            }
            double worst = r.busy(id).minWindowUsage(w, from + w, end);
            if (worst + grain < req * w) {
                return id + " got only " + Dist.fmt(Math.round(worst)) + " in a " + Dist.fmt(w) + " window, request "
                        + Dist.fmt(Math.round(req * w));
            }
        }
        return null;
    }

    // ---- 4. Gemini's example: A 0.4/0.7, B 0.6/0.8 keep every request and limit ----

    static Scenario gemini(TokenSchedulerConfig token) {
        Workload w = busy(Duration.ofMillis(2), Duration.ofMillis(8));
        return Scenario.builder("gemini-example").duration(Duration.ofSeconds(60)).seed(4).compute(token)
                .gpu(GpuSpec.of("shared", IsolationPolicy.ELASTIC, List.of(
                        TenantSpec.offline("jobA", w).withShare(40, 70), TenantSpec.offline("jobB", w).withShare(60, 80))))
                .gpu(GpuSpec.of("alone-a", IsolationPolicy.ELASTIC, List.of(TenantSpec.offline("jobA-alone", w).withShare(40, 70))))
                .gpu(GpuSpec.of("alone-b", IsolationPolicy.ELASTIC, List.of(TenantSpec.offline("jobB-alone", w).withShare(60, 80))))
                .build();
    }

    /** No tenant exceeds its limit in any window. */
    static String neverAboveLimit(SimResult r) {
        long w = r.scenario().compute().windowNanos();
        for (TenantMetrics t : r.tenants()) {
            double limit = t.limitPercent() / 100.0 * w;
            double worst = r.busy(t.tenant()).maxWindowUsage(w, 0, r.scenario().durationNanos());
            if (worst > limit + 1) {
                return t.tenant() + " used " + Dist.fmt(Math.round(worst)) + " in one window, limit " + Dist.fmt(Math.round(limit));
            }
        }
        return null;
    }

    /** Limits exactly; requests within {@code averageTolerance} over the run and one grant per window. */
    static String geminiExample(SimResult r, double averageTolerance) {
        String v = neverAboveLimit(r);
        if (v == null) {
            v = keepsRequests(r, List.of("jobA", "jobB"), 0, averageTolerance);
        }
        if (v == null) {
            v = takesIdleCapacity(r, "jobA-alone", 0, r.scenario().durationNanos(), 0.69);
        }
        if (v == null) {
            v = takesIdleCapacity(r, "jobB-alone", 0, r.scenario().durationNanos(), 0.79);
        }
        return v;
    }

    // ---- 5-7. online beside offline ----

    static Scenario onlineOffline(Dist trainSuspendLatency) {
        TenantSpec infer = TenantSpec.online("infer", new Workload.OpenLoop(4, Dist.exponential(Duration.ofMillis(20))));
        TenantSpec train = TenantSpec.offline("train", new Workload.Training(
                Dist.uniform(Duration.ofMillis(80), Duration.ofMillis(120)), Dist.constant(Duration.ofMillis(15)), 10))
                .withSuspendLatency(trainSuspendLatency);
        TenantSpec prep = TenantSpec.offline("prep", busy(Duration.ofMillis(1), Duration.ofMillis(4)));
        return Scenario.builder("online-offline").duration(Duration.ofSeconds(60)).seed(21)
                .compute(TokenSchedulerConfig.ofDefaults()).preemption(PreemptionConfig.ofDefaults())
                .gpu(GpuSpec.of("gpu0", IsolationPolicy.BEST_EFFORT, List.of(infer, train, prep))).build();
    }

    static String offlineUsesIdle(SimResult r, double atLeast) {
        for (GpuMetrics g : r.gpus()) {
            long offlineMode = g.modeNanos().get(io.qgpu.core.preempt.GpuMode.OFFLINE);
            if (offlineMode < r.scenario().durationNanos() / 10) {
                return g.gpu() + " was left to offline work only " + Dist.fmt(offlineMode) + ": nothing to judge";
            }
            boolean uncapped = g.policy() == IsolationPolicy.BEST_EFFORT || g.policy() == IsolationPolicy.BURST_SHARE;
            if (uncapped && g.policyHeldNanos() > 0) {
                return g.gpu() + ": the " + g.policy().wireName() + " engine held offline work back for "
                        + Dist.fmt(g.policyHeldNanos()) + " although nothing caps it";
            }
            if (g.offlineUseOfIdle() < atLeast) {
                return g.gpu() + ": offline used " + pct(g.offlineUseOfIdle()) + " of the time online left idle, expected at least "
                        + pct(atLeast);
            }
        }
        return null;
    }

    static String preemptionWithinBound(SimResult r, int atLeastPreemptions) {
        long bound = r.scenario().preemption().preemptionBoundNanos();
        for (GpuMetrics g : r.gpus()) {
            if (g.preemptions() < atLeastPreemptions) {
                return g.gpu() + " preempted only " + g.preemptions() + " times: nothing to judge";
            }
            if (g.preemptionMaxNanos() > bound) {
                return g.gpu() + ": online waited up to " + Dist.fmt(g.preemptionMaxNanos()) + " for the GPU, bound "
                        + Dist.fmt(bound);
            }
        }
        for (TenantMetrics t : r.tenants()) {
            if (t.priority() == PriorityClass.ONLINE && t.preemptionMaxNanos() > bound) {
                return t.tenant() + " waited up to " + Dist.fmt(t.preemptionMaxNanos());
            }
        }
        return null;
    }

    static String resumesAtReleaseDelay(SimResult r, int atLeastReleases) {
        long delay = r.scenario().preemption().releaseDelayNanos();
        for (GpuMetrics g : r.gpus()) {
            if (g.resumes() < atLeastReleases) {
                return g.gpu() + " resumed offline work only " + g.resumes() + " times: nothing to judge";
            }
            if (g.resumeDelayMinNanos() < delay || g.resumeDelayMaxNanos() > delay + TICK) {
                return g.gpu() + ": offline ran again " + Dist.fmt(g.resumeDelayMinNanos()) + " to "
                        + Dist.fmt(g.resumeDelayMaxNanos()) + " after online went idle, expected " + Dist.fmt(delay)
                        + " within " + Dist.fmt(TICK);
            }
        }
        return null;
    }

    static String pct(double share) {
        return String.format(java.util.Locale.ROOT, "%.2f%%", share * 100);
    }
}
