package io.qgpu.core.gate;

import static io.qgpu.core.gate.FakeClock.MS;
import static io.qgpu.core.gate.FakeClock.S;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.InvalidValueException;
import io.qgpu.core.preempt.GpuMode;
import io.qgpu.core.preempt.PreemptionConfig;
import io.qgpu.core.preempt.ReleasePolicy;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The gate runs the release rule set in its config, on the manual clock: the adaptive rule holds for
 * the switch cost until it has seen enough online idle gaps, then releases to offline work the
 * moment online work goes idle when the gaps are all longer than any hold worth keeping. The same
 * run under a fixed 100 ms delay keeps offline work waiting 100 ms every time (the control).
 */
@Timeout(60) // a hang guard only; no verdict depends on wall time
class GateReleasePolicyTest {

    private static final long T0 = 10 * S;
    private static final ReleasePolicy ADAPTIVE = ReleasePolicy.adaptive(Duration.ofMillis(1), Duration.ofMillis(200));

    /** Runs 10 online bursts of 5 ms, 40 ms apart, beside a waiting offline tenant; returns each release's hold. */
    private static long[] holds(GateConfig.Builder config, FakeClock clock) {
        long[] holds = new long[10];
        try (Gate gate = Gate.create("GPU-r", config.usageReportInterval(Duration.ZERO).build())) {
            Tenant chat = gate.register(GateTenantSpec.online("chat").build());
            Tenant train = gate.register(GateTenantSpec.offline("train").build());
            long t = T0;
            for (int i = 0; i < holds.length; i++) {
                Lease on = gate.tryAcquire(chat).orElseThrow();
                CompletableFuture<Lease> off = gate.acquireAsync(train);
                t += 5 * MS;
                clock.at(t);
                on.close();
                long idleAt = t;
                while (!off.isDone()) {                  // step the clock 1 ms at a time until offline runs
                    assertEquals(GpuMode.RELEASING, gate.mode(), "burst " + i);
                    t += MS;
                    clock.at(t);
                    assertTrue(t - idleAt <= 200 * MS, "burst " + i + ": offline still waits");
                }
                holds[i] = t - idleAt;
                off.join().close();
                t = idleAt + 40 * MS;                  // online comes back 40 ms after it went idle
                clock.at(t);
            }
        }
        return holds;
    }

    @Test
    void theAdaptiveRuleReleasesAtOnceOnceItHasSeenTheGaps() {
        FakeClock clock = new FakeClock(T0);
        long[] h = holds(clock.config().releasePolicy(ADAPTIVE), clock);
        // the first idle period has no gap before it; burst i has seen i gaps, and the rule needs 8
        for (int i = 0; i < 8; i++) {
            assertEquals(MS, h[i], "burst " + i + ": warm-up hold is the switch cost (gaps seen: " + i + ")");
        }
        assertEquals(0, h[8], "after 8 gaps of 40 ms offline gets the GPU the moment online goes idle");
        assertEquals(0, h[9]);
    }

    @Test
    void aFixedDelayHoldsEveryTime() {
        FakeClock clock = new FakeClock(T0);
        long[] h = holds(clock.config().releasePolicy(ReleasePolicy.fixed(Duration.ofMillis(20))), clock);
        for (long hold : h) {
            assertEquals(20 * MS, hold);
        }
    }

    @Test
    void theRuleAndTheDelayMustAgreeWhateverTheOrder() {
        FakeClock clock = new FakeClock(T0);
        assertEquals(ADAPTIVE, clock.config().releasePolicy(ADAPTIVE).build().preemption().releasePolicy());
        assertEquals(ReleasePolicy.fixed(Duration.ofMillis(30)), clock.config().releasePolicy(ReleasePolicy.fixed(Duration.ofMillis(30)))
                .releaseDelay(Duration.ofMillis(30)).build().preemption().releasePolicy());
        InvalidValueException a = assertThrows(InvalidValueException.class,
                () -> clock.config().releaseDelay(Duration.ofMillis(100)).releasePolicy(ADAPTIVE).build());
        assertEquals("gateConfig.releasePolicy", a.field());
        InvalidValueException b = assertThrows(InvalidValueException.class,
                () -> clock.config().releasePolicy(ADAPTIVE).releaseDelay(Duration.ofMillis(100)).build());
        assertEquals("gateConfig.releasePolicy", b.field());
        InvalidValueException c = assertThrows(InvalidValueException.class,
                () -> clock.config().releasePolicy(ADAPTIVE).preemption(PreemptionConfig.ofDefaults()).build());
        assertEquals("gateConfig.releasePolicy", c.field());
    }
}
