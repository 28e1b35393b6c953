package io.qgpu.testkit.sim;

import static io.qgpu.testkit.sim.Claims.S;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.IsolationPolicy;
import io.qgpu.core.compute.TokenSchedulerConfig;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The seeds' claims in numbers, each on the standard engines and on a deliberately broken engine
 * that the same check must reject.
 */
class SeedClaimsTest {

    private static final Simulator STANDARD = Simulator.standard();

    private static SimResult run(Scenario s) {
        return STANDARD.run(s);
    }

    private static SimResult run(SimEngines engines, Scenario s) {
        return new Simulator(engines).run(s);
    }

    // 1. qGPU best-effort: "N busy Pods each get 1/N"

    @Test
    void bestEffortGivesNBusyTenantsOneNthEachWithinOnePercent() {
        for (int n = 2; n <= 4; n++) {
            assertNull(Claims.equalShares(run(Claims.bestEffort(n, Slicing.DRIVER)), 0.01), "n=" + n + " driver");
        }
        assertNull(Claims.equalShares(run(Claims.bestEffort(4, Slicing.LAUNCH)), 0.01), "kernels that overrun their grant");
    }

    @Test
    void theFairnessCheckRejectsAnEngineWithUnequalQuotas() {
        String v = Claims.equalShares(run(BrokenEngines.unequalRoundRobin(), Claims.bestEffort(3, Slicing.DRIVER)), 0.01);
        assertNotNull(v);
    }

    // 2. qGPU fixed-share: "a fixed quota it cannot exceed, even when the GPU is idle"

    @Test
    void fixedShareNeverExceedsItsQuotaInAnyWindowAndABusyTenantReachesIt() {
        SimResult r = run(Claims.fixedShare());
        assertNull(Claims.neverAboveQuota(r));
        assertEquals(0.20, r.tenant("busy").share(), 0.005, "a busy 20% tenant gets its 20%");
        assertTrue(r.gpu("gpu0").utilization() < 0.75, "the GPU idles rather than exceed quotas: " + r.gpu("gpu0").utilization());
    }

    @Test
    void theQuotaCheckRejectsGeminisRuleWithoutTheHeadroomCut() {
        String v = Claims.neverAboveQuota(run(BrokenEngines.fixedShareWithoutHeadroomCut(), Claims.fixedShare()));
        assertNotNull(v);
        assertTrue(v.contains("in one 10s window"), v);
    }

    // 3. qGPU burst-share: guaranteed quota, plus idle capacity, falling back when it is claimed

    @Test
    void burstShareTakesIdleCapacityAloneAndKeepsEveryGuaranteeUnderContention() {
        SimResult r = run(Claims.burstShare());
        assertNull(Claims.takesIdleCapacity(r, "a", S, 20 * S, 0.99));
        assertNull(Claims.keepsRequests(r, List.of("a", "b", "c"), 30 * S, 0.01));
        double aLater = r.busy("a").gpuNanosBetween(40 * S, 60 * S) / (20.0 * S);
        assertEquals(0.20, aLater, 0.02, "a falls back to its quota once the others claim theirs");
    }

    @Test
    void theBurstChecksRejectAFixedShareAndABestEffortEngine() {
        SimResult capped = run(BrokenEngines.policyActsAs(IsolationPolicy.FIXED_SHARE), Claims.burstShare());
        assertNotNull(Claims.takesIdleCapacity(capped, "a", S, 20 * S, 0.99));
        SimResult uncapped = run(BrokenEngines.policyActsAs(IsolationPolicy.BEST_EFFORT), Claims.burstShare());
        String v = Claims.keepsRequests(uncapped, List.of("a", "b", "c"), 30 * S, 0.01);
        assertNotNull(v);
        assertTrue(v.startsWith("c "), v);
    }

    // 4. Gemini: Job A request 0.4 limit 0.7, Job B 0.6 / 0.8

    /**
     * Gemini's defaults (250 ms grants in a 10 s window): limits exactly, requests within one grant
     * per window (2.5 points), and on average within 1.5 points over the minute.
     */
    @Test
    void geminisExampleKeepsEveryRequestAndLimit() {
        SimResult r = run(Claims.gemini(TokenSchedulerConfig.ofDefaults()));
        assertNull(Claims.geminiExample(r, 0.015));
        assertEquals(0.7, r.tenant("jobA-alone").share(), 0.01);
        assertEquals(0.8, r.tenant("jobB-alone").share(), 0.01);
    }

    /** With finer grants (50 ms, minimum 10 ms) the requests hold within 1% over the run. */
    @Test
    void finerGrantsKeepGeminisRequestsWithinOnePercent() {
        TokenSchedulerConfig fine = TokenSchedulerConfig.custom().baseQuota(Duration.ofMillis(50)).minQuota(Duration.ofMillis(10)).build();
        SimResult r = run(Claims.gemini(fine));
        assertNull(Claims.geminiExample(r, 0.01));
        assertEquals(0.4, r.tenant("jobA").share(), 0.01);
        assertEquals(0.6, r.tenant("jobB").share(), 0.01);
    }

    @Test
    void theGeminiCheckRejectsEnginesThatIgnoreLimitsOrRequests() {
        Scenario s = Claims.gemini(TokenSchedulerConfig.ofDefaults());
        String noLimits = Claims.geminiExample(run(BrokenEngines.policyActsAs(IsolationPolicy.BURST_SHARE), s), 0.015);
        assertNotNull(noLimits);
        assertTrue(noLimits.contains("limit"), noLimits);
        String noRequests = Claims.geminiExample(run(BrokenEngines.requestsIgnored(), s), 0.015);
        assertNotNull(noRequests);
        assertTrue(noRequests.startsWith("jobB got"), noRequests);
    }

    // 5. qGPU hybrid deployment: "100% utilization of the idle computing power by low-priority Pods"

    @Test
    void offlineWorkUsesAtLeast99PercentOfTheTimeOnlineLeavesIdle() {
        SimResult r = run(Claims.onlineOffline(TenantSpec.DEFAULT_SUSPEND_LATENCY));
        assertNull(Claims.offlineUsesIdle(r, 0.99));
    }

    @Test
    void theIdleUseCheckRejectsAnEngineThatPausesBetweenGrants() {
        SimResult r = run(BrokenEngines.gapAfterRelease(Duration.ofMillis(10)), Claims.onlineOffline(TenantSpec.DEFAULT_SUSPEND_LATENCY));
        String v = Claims.offlineUsesIdle(r, 0.99);
        assertNotNull(v);
        assertTrue(v.contains("held offline work back"), v);
        assertTrue(r.gpu("gpu0").policyHeldNanos() > r.scenario().durationNanos() / 100, "more than 1% of the time lost");
    }

    // 6. "all computing power within one millisecond after they submit"

    @Test
    void onlineGetsTheGpuWithinTheBoundEvenWhenOfflineIsSlowToSuspend() {
        Dist slow = Dist.uniform(Duration.ofNanos(10_000), Duration.ofMillis(3));
        SimResult r = run(Claims.onlineOffline(slow));
        assertNull(Claims.preemptionWithinBound(r, 50));
        assertTrue(r.gpu("gpu0").forcedSuspensions() > 0, "some suspensions missed the bound and were forced");
        assertTrue(r.tenant("infer").preemptionP50Nanos() < 1_000_000);
    }

    @Test
    void theBoundCheckRejectsAMachineWithoutDeadline() {
        Dist slow = Dist.uniform(Duration.ofNanos(10_000), Duration.ofMillis(3));
        String v = Claims.preemptionWithinBound(run(BrokenEngines.noPreemptionDeadline(), Claims.onlineOffline(slow)), 50);
        assertNotNull(v);
        assertTrue(v.contains("waited up to"), v);
    }

    // 7. "release the occupied computing power after 100 milliseconds"

    @Test
    void offlineResumesAtTheReleaseDelayWithinOneTick() {
        SimResult r = run(Claims.onlineOffline(TenantSpec.DEFAULT_SUSPEND_LATENCY));
        assertNull(Claims.resumesAtReleaseDelay(r, 20));
    }

    @Test
    void theReleaseCheckRejectsEarlyAndLateReleases() {
        Scenario s = Claims.onlineOffline(TenantSpec.DEFAULT_SUSPEND_LATENCY);
        assertNotNull(Claims.resumesAtReleaseDelay(run(BrokenEngines.releaseDelayTimes(0.0), s), 20));
        assertNotNull(Claims.resumesAtReleaseDelay(run(BrokenEngines.releaseDelayTimes(1.5), s), 20));
    }
}
