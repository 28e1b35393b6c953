package io.qgpu.core.compute;

import static io.qgpu.core.compute.ManualTicker.ms;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.IsolationPolicy;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class TokenSchedulerTest {

    private final ManualTicker clock = new ManualTicker(0);

    private TokenScheduler gemini() {
        return TokenScheduler.create(TokenSchedulerConfig.ofDefaults(), clock);
    }

    private TokenScheduler strict() {
        return TokenScheduler.create(TokenSchedulerConfig.custom().limitEnforcement(LimitEnforcement.STRICT).build(), clock);
    }

    /** Grants the token to {@code tenant} (it must be the one picked), holds it {@code nanos}, releases it. */
    private ReleaseReport hold(TokenScheduler s, String tenant, long nanos) {
        s.request(tenant);
        Grant g = granted(s.schedule());
        assertEquals(tenant, g.tenant());
        clock.advance(nanos);
        return s.release(tenant, Math.max(0, nanos - g.lengthNanos()));
    }

    private static Grant granted(TokenDecision d) {
        return assertInstanceOf(TokenDecision.Granted.class, d).grant();
    }

    @Test
    void firstGrantHasTheBaseQuotaAndQuotaFollowsBurstsHalfAndHalf() {
        TokenScheduler s = gemini();
        s.addTenant("a", Share.unlimited());
        s.request("a");
        Grant g = granted(s.schedule());
        assertEquals(new Grant("a", 0, ms(250), ms(250), false), g);
        assertEquals(ms(250), g.expiresAtNanos());

        clock.set(ms(100));                                   // early return after 100 ms
        ReleaseReport r = s.release("a", 0);
        assertEquals(ms(100), r.usedNanos());
        assertEquals(ms(100), r.burstNanos());
        assertEquals(ms(175), r.nextQuotaNanos());             // 0.5 * 100 + 0.5 * 250

        s.request("a");
        g = granted(s.schedule());
        assertEquals(ms(175), g.lengthNanos());
        clock.set(ms(400));                                    // expiry at 275 ms, kernels ran 50 ms past it
        r = s.release("a", ms(50));
        assertEquals(ms(325), r.endNanos(), "end = min(now, expiry + overrun)");
        assertEquals(ms(225), r.usedNanos());
        assertEquals(ms(200), r.nextQuotaNanos());             // 0.5 * 225 + 0.5 * 175
        assertEquals(ms(100) + ms(225), s.usageNanos("a"), "both holds are in the window");
    }

    @Test
    void overrunIsCappedByTheReleaseTime() {
        TokenScheduler s = gemini();
        s.addTenant("a", Share.unlimited());
        s.request("a");
        granted(s.schedule());
        clock.set(ms(300));
        ReleaseReport r = s.release("a", ms(5_000));
        assertEquals(ms(300), r.endNanos());
    }

    @Test
    void quotaIsClampedToMinimumAndToLimitTimesWindow() {
        TokenScheduler s = gemini();
        s.addTenant("short", Share.unlimited());
        assertEquals(ms(175), hold(s, "short", ms(100)).nextQuotaNanos());
        assertEquals(ms(100), hold(s, "short", ms(10)).nextQuotaNanos());   // 0.5 * 10 + 0.5 * 175 = 92.5 -> min 100
        assertEquals(ms(100), hold(s, "short", ms(1)).nextQuotaNanos());

        s.addTenant("capped", Share.of(0.0, 0.02));                          // limit x window = 200 ms
        assertEquals(ms(200), hold(s, "capped", ms(2_000)).nextQuotaNanos());
    }

    @Test
    void aMeasuredBurstReplacesTheHold() {
        TokenScheduler s = gemini();
        s.addTenant("a", Share.unlimited());
        s.request("a");
        granted(s.schedule());
        clock.advance(ms(250));
        ReleaseReport r = s.release("a", 0, ms(400));
        assertEquals(ms(400), r.burstNanos());
        assertEquals(ms(325), r.nextQuotaNanos());
    }

    /**
     * Registers {@code ids} in the given order or reversed. Every ordering test runs both ways, so the
     * expected winner is registered first in one run and last in the other: a scheduler that picks
     * the first- or the last-registered tenant fails one of them.
     */
    private static void register(TokenScheduler s, boolean reversed, String... ids) {
        for (int i = 0; i < ids.length; i++) {
            String id = ids[reversed ? ids.length - 1 - i : i];
            s.addTenant(id, id.startsWith("job") ? Share.of(id.equals("jobA") ? 0.4 : 0.6, id.equals("jobA") ? 0.7 : 0.8)
                    : id.equals("guaranteed") ? Share.of(0.4, 1.0) : Share.unlimited());
        }
    }

    @Test
    void belowRequestFirstByRelativeDeficit() {
        for (boolean reversed : new boolean[] {false, true}) {
            TokenScheduler s = gemini();
            register(s, reversed, "jobA", "jobB");
            hold(s, "jobA", ms(1_000));
            hold(s, "jobB", ms(1_000));
            // missing: A 3 s of 4 s (0.75), B 5 s of 6 s (0.83): B first, although it asked second
            s.request("jobA");
            s.request("jobB");
            assertEquals("jobB", granted(s.schedule()).tenant(), "reversed=" + reversed);
        }
    }

    @Test
    void aTenantBelowItsRequestBeatsOneWithLessUsage() {
        for (boolean reversed : new boolean[] {false, true}) {
            TokenScheduler s = gemini();
            register(s, reversed, "guaranteed", "besteffort");
            hold(s, "guaranteed", ms(3_000));
            s.request("besteffort");
            s.request("guaranteed");
            assertEquals("guaranteed", granted(s.schedule()).tenant(), "reversed=" + reversed);
        }
    }

    @Test
    void thenLowestUsageFirstAndTiesInRequestOrder() {
        for (boolean reversed : new boolean[] {false, true}) {
            clock.advance(ms(20_000));        // a fresh window for each run
            TokenScheduler s = gemini();
            register(s, reversed, "x", "y", "z");
            hold(s, "x", ms(2_000));
            hold(s, "y", ms(1_000));
            s.request("x");
            s.request("y");
            assertEquals("y", granted(s.schedule()).tenant(), "reversed=" + reversed);
            s.release("y", 0);
            s.request("z");                       // z and x: z has no usage
            assertEquals("z", granted(s.schedule()).tenant(), "reversed=" + reversed);
            s.release("z", 0);
            assertEquals("x", granted(s.schedule()).tenant(), "reversed=" + reversed);
            s.release("x", 0);
            register(s, reversed, "p", "q");
            s.request("q");
            s.request("p");
            assertEquals("q", granted(s.schedule()).tenant(), "equal usage: first to ask, reversed=" + reversed);
        }
    }

    /**
     * STRICT ranks by the usage still in the window when the grant would end: two satisfied tenants
     * with equal usage, one of whose usage is about to leave the window. Gemini's rule (current usage,
     * then request order) picks the first to ask; STRICT picks the one about to drop.
     */
    @Test
    void strictRanksByTheUsageStillInTheWindowAtTheEndOfTheGrant() {
        for (boolean reversed : new boolean[] {false, true}) {
            clock.advance(ms(20_000));
            TokenScheduler s = strict();
            register(s, reversed, "x", "y");
            hold(s, "y", ms(250));            // y's usage is the older one
            hold(s, "x", ms(250));
            clock.advance(ms(9_400));         // 150 ms of y's usage leaves the window within the next 250 ms grant, none of x's
            s.request("x");
            s.request("y");
            assertEquals(s.usageNanos("x"), s.usageNanos("y"));
            assertEquals("y", granted(s.schedule()).tenant(), "reversed=" + reversed);
        }
    }

    @Test
    void aHundredPercentLimitIsNoCapEvenWhenTheWindowIsFull() {
        TokenScheduler s = strict();
        s.addTenant("a", Share.of(0.3, 1.0));
        for (int i = 0; i < 80; i++) {            // 20 s back to back: every window full
            Grant g = holdWholeGrant(s, "a");
            assertEquals(ms(250), g.lengthNanos(), "never cut to the headroom");
        }
        assertEquals(ms(10_000), s.usageNanos("a"));
    }

    private Grant holdWholeGrant(TokenScheduler s, String tenant) {
        s.request(tenant);
        TokenDecision d = s.schedule();
        Grant g = granted(d);
        clock.advance(g.lengthNanos());
        s.release(tenant, 0);
        return g;
    }

    @Test
    void strictTakesAnOverrunOffTheNextGrantAndKeepsTheQuota() {
        TokenScheduler s = strict();
        s.addTenant("a", Share.unlimited());
        s.request("a");
        Grant g = granted(s.schedule());
        clock.advance(ms(290));                                // 40 ms past the 250 ms grant
        ReleaseReport r = s.release("a", ms(40));
        assertEquals(ms(290), r.usedNanos(), "the overrun counts as usage");
        assertEquals(ms(250), r.nextQuotaNanos(), "but does not grow the quota");
        s.request("a");
        Grant next = granted(s.schedule());
        assertEquals(ms(250), next.quotaNanos());
        assertEquals(ms(210), next.lengthNanos(), "the next grant is 40 ms shorter");
        assertEquals(ms(250), g.lengthNanos());
    }

    @Test
    void geminiWaitsUntilTheOldestUsageLeavesTheWindow() {
        TokenScheduler s = gemini();
        s.addTenant("a", Share.of(0.0, 0.1));           // 1 s per 10 s
        for (int i = 0; i < 4; i++) {
            hold(s, "a", ms(250));
        }
        s.request("a");
        assertEquals(new TokenDecision.WaitUntil(ms(10_250)), s.schedule(), "usage 1 s = limit: not below it");
        clock.set(ms(10_250));
        Grant g = granted(s.schedule());
        assertFalse(g.cut(), "Gemini grants a whole quota");
        assertEquals(ms(250), g.lengthNanos());
    }

    @Test
    void geminiMayOvershootTheLimitByOneGrant() {
        TokenScheduler s = gemini();
        s.addTenant("a", Share.of(0.0, 0.1));
        hold(s, "a", ms(900));                           // usage 0.9 s < 1 s: still eligible
        s.request("a");
        Grant g = granted(s.schedule());
        clock.advance(g.lengthNanos());
        s.release("a", 0);
        assertTrue(s.usageNanos("a") > ms(1_000), "1.15 s in one window");
    }

    @Test
    void strictCutsTheGrantToTheHeadroomAndWaitsExactly() {
        TokenScheduler s = strict();
        s.addTenant("a", Share.of(0.0, 0.1));
        hold(s, "a", ms(900));
        s.request("a");
        Grant g = granted(s.schedule());
        assertTrue(g.cut());
        assertEquals(ms(100), g.lengthNanos(), "headroom 1 s - 0.9 s");
        clock.advance(g.lengthNanos());
        ReleaseReport r = s.release("a", 0);
        assertEquals(ms(1_000), s.usageNanos("a"));
        assertTrue(r.nextQuotaNanos() >= ms(100), "a cut grant used to the end is not a short burst");

        s.request("a");
        // eligible again when the headroom is back to the minimum quota: 100 ms of [0, 0.9 s) has left
        assertEquals(new TokenDecision.WaitUntil(ms(10_100)), s.schedule());
        clock.set(ms(10_100));
        assertEquals(ms(100), granted(s.schedule()).lengthNanos());
    }

    @Test
    void decisionsWhenHeldOrIdle() {
        TokenScheduler s = gemini();
        s.addTenant("a", Share.unlimited());
        s.addTenant("b", Share.unlimited());
        assertEquals(new TokenDecision.Idle(), s.schedule());
        s.request("a");
        s.request("a");                      // keeps its place, no duplicate
        Grant g = granted(s.schedule());
        s.request("b");
        assertEquals(new TokenDecision.Held(g), s.schedule());
        assertEquals(g, s.holder().orElseThrow());
        s.withdraw("b");
        clock.advance(ms(10));
        s.release("a", 0);
        assertEquals(new TokenDecision.Idle(), s.schedule());
    }

    @Test
    void ongoingHoldCountsUpToNow() {
        TokenScheduler s = gemini();
        s.addTenant("a", Share.unlimited());
        s.request("a");
        granted(s.schedule());
        clock.advance(ms(120));
        assertEquals(ms(120), s.usageNanos("a"));
        assertEquals(0.012, s.usageShare("a"), 1e-12);
    }

    @Test
    void removingTheHolderReleasesTheToken() {
        TokenScheduler s = gemini();
        s.addTenant("a", Share.unlimited());
        s.addTenant("b", Share.unlimited());
        s.request("a");
        granted(s.schedule());
        s.request("b");
        s.removeTenant("a");
        assertEquals("b", granted(s.schedule()).tenant());
        assertEquals(java.util.List.of("b"), s.tenants());
    }

    @Test
    void misuseGetsTypedErrorsAndChangesNothing() {
        TokenScheduler s = gemini();
        s.addTenant("a", Share.unlimited());
        s.addTenant("b", Share.unlimited());
        assertEquals("b", assertThrows(ComputeStateException.class, () -> s.release("b", 0)).tenant());
        assertThrows(ComputeStateException.class, () -> s.addTenant("a", Share.unlimited()));
        assertThrows(ComputeStateException.class, () -> s.request("ghost"));
        s.request("a");
        granted(s.schedule());
        ComputeStateException notHolder = assertThrows(ComputeStateException.class, () -> s.release("b", 0));
        assertTrue(notHolder.getMessage().contains("a does"), notHolder.getMessage());
        assertThrows(ComputeStateException.class, () -> s.request("a"));
        assertThrows(ComputeStateException.class, () -> s.withdraw("a"));
        InvalidValueException negative = assertThrows(InvalidValueException.class, () -> s.release("a", -1));
        assertEquals("release[a].overrunNanos", negative.field());
        assertEquals("a", s.holder().orElseThrow().tenant(), "still held after the refused calls");
    }

    @Test
    void policiesMapRequestAndLimit() {
        assertEquals(Share.unlimited(), ComputeEngine.shareFor(IsolationPolicy.BEST_EFFORT, 30, 50));
        assertEquals(Share.of(0.3, 0.3), ComputeEngine.shareFor(IsolationPolicy.FIXED_SHARE, 30, 50));
        assertEquals(Share.of(0.3, 1.0), ComputeEngine.shareFor(IsolationPolicy.BURST_SHARE, 30, 50));
        assertEquals(Share.of(0.3, 0.5), ComputeEngine.shareFor(IsolationPolicy.ELASTIC, 30, 50));
        InvalidValueException zero = assertThrows(InvalidValueException.class,
                () -> ComputeEngine.shareFor(IsolationPolicy.FIXED_SHARE, 0, 100));
        assertEquals("share.requestPercent", zero.field());
        assertEquals("share.limitPercent",
                assertThrows(InvalidValueException.class, () -> Share.ofPercent(10, 0)).field());
        assertEquals("share.requestPercent",
                assertThrows(InvalidValueException.class, () -> Share.ofPercent(60, 50)).field());
        assertEquals("share.limit", assertThrows(InvalidValueException.class, () -> Share.of(0, 1.5)).field());
    }

    @Test
    void policyEnginesEnforceLimitsStrictly() {
        ComputeEngine e = ComputeEngine.create(IsolationPolicy.ELASTIC, TokenSchedulerConfig.ofDefaults(), clock);
        assertEquals(IsolationPolicy.ELASTIC, e.policy());
        assertEquals(LimitEnforcement.STRICT, ((TokenScheduler) e).config().limitEnforcement());
        assertEquals(ms(10_000), e.windowNanos());
    }

    @Test
    void configValidatesAndNamesTheField() {
        TokenSchedulerConfig d = TokenSchedulerConfig.ofDefaults();
        assertEquals(Duration.ofSeconds(10), d.window());
        assertEquals(Duration.ofMillis(250), d.baseQuota());
        assertEquals(Duration.ofMillis(100), d.minQuota());
        assertEquals(0.5, d.burstWeight());
        assertEquals(LimitEnforcement.GEMINI, d.limitEnforcement());
        assertEquals(d, d.toBuilder().build());
        assertEquals("tokenScheduler.baseQuota", assertThrows(InvalidValueException.class,
                () -> TokenSchedulerConfig.custom().minQuota(Duration.ofMillis(300)).build()).field());
        assertEquals("tokenScheduler.baseQuota", assertThrows(InvalidValueException.class,
                () -> TokenSchedulerConfig.custom().window(Duration.ofMillis(200)).build()).field());
        assertEquals("tokenScheduler.window", assertThrows(InvalidValueException.class,
                () -> TokenSchedulerConfig.custom().window(Duration.ofSeconds(-1))).field());
        assertEquals("tokenScheduler.burstWeight", assertThrows(InvalidValueException.class,
                () -> TokenSchedulerConfig.custom().burstWeight(0).build()).field());
        assertEquals("tokenScheduler.minQuota", assertThrows(InvalidValueException.class,
                () -> TokenSchedulerConfig.custom().minQuota(null)).field());
    }
}
