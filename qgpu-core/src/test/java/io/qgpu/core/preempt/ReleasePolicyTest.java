package io.qgpu.core.preempt;

import static io.qgpu.core.compute.ManualTicker.ms;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.PriorityClass;
import io.qgpu.core.compute.ManualTicker;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class ReleasePolicyTest {

    private static IdleGaps gaps(long... nanos) {
        IdleGaps g = IdleGaps.empty(ReleasePolicy.DEFAULT_HISTORY);
        for (long n : nanos) {
            g = g.plus(n);
        }
        return g;
    }

    private static final ReleasePolicy ADAPTIVE = ReleasePolicy.adaptive(Duration.ofMillis(1), Duration.ofMillis(200));

    @Test
    void fixedAlwaysHoldsItsDelay() {
        ReleasePolicy p = ReleasePolicy.fixed(Duration.ofMillis(100));
        assertEquals(ms(100), p.holdNanos(IdleGaps.empty(0)));
        assertEquals(ms(100), p.holdNanos(gaps(1, 2, 3)));
        assertEquals(0, p.history());
        assertEquals("100ms", p.describe());
    }

    @Test
    void adaptiveHoldsForTheSwitchCostUntilItHasSeenEnoughGaps() {
        assertEquals(ms(1), ADAPTIVE.holdNanos(gaps()));
        assertEquals(ms(1), ADAPTIVE.holdNanos(gaps(ms(50), ms(50), ms(50), ms(50), ms(50), ms(50), ms(50))), "7 of 8 gaps");
        assertEquals(0, ADAPTIVE.holdNanos(gaps(ms(50), ms(50), ms(50), ms(50), ms(50), ms(50), ms(50), ms(50))));
    }

    /** Exponential gaps with a mean (50 ms) far above the switch cost (1 ms): release at once. */
    @Test
    void adaptiveReleasesAtOnceWhenGapsAreMemorylessAndLongerThanTheSwitchCost() {
        SplittableRandom rnd = new SplittableRandom(7);
        IdleGaps g = IdleGaps.empty(ReleasePolicy.DEFAULT_HISTORY);
        for (int i = 0; i < 200; i++) {
            g = g.plus(Math.round(-Math.log(1 - rnd.nextDouble()) * ms(50)));
        }
        assertEquals(0, ADAPTIVE.holdNanos(g));
    }

    /**
     * Bursts: within a burst online comes back after 2-4 ms, between bursts after 300 ms; a switch
     * costs 5 ms. Holding past 4 ms saves a switch for each short gap (which would lose 1-3 ms) and
     * gives up 4 ms of each long one: hold 4 ms. With a 1 ms switch even a 2 ms gap pays: release at once.
     */
    @Test
    void adaptiveHoldsJustPastTheGapsInsideABurstWhenASwitchCostsMoreThanThem() {
        long[] g = new long[40];
        for (int i = 0; i < g.length; i++) {
            g[i] = i % 5 == 4 ? ms(300) : ms(2 + i % 3);
        }
        assertEquals(ms(4), ReleasePolicy.adaptive(Duration.ofMillis(5), Duration.ofMillis(200)).holdNanos(gaps(g)));
        assertEquals(0, ADAPTIVE.holdNanos(gaps(g)));
    }

    /** Eight 30 ms gaps and one of 1 s, a 40 ms switch: the best hold is 30 ms, unless the maximum is lower. */
    @Test
    void adaptiveNeverHoldsLongerThanItsMaximum() {
        IdleGaps g = gaps(ms(30), ms(30), ms(30), ms(30), ms(30), ms(30), ms(30), ms(30), ms(1_000));
        assertEquals(ms(30), ReleasePolicy.adaptive(Duration.ofMillis(40), Duration.ofMillis(50)).holdNanos(g));
        ReleasePolicy capped = ReleasePolicy.adaptive(Duration.ofMillis(40), Duration.ofMillis(20));
        assertEquals(0, capped.holdNanos(g), "holding 20 ms saves no short gap: releasing at once loses less");
        assertEquals(ms(20), capped.maxHoldNanos());
    }

    @Test
    void idleGapsKeepTheMostRecentOnes() {
        IdleGaps g = IdleGaps.empty(3).plus(1).plus(2).plus(3).plus(4);
        assertEquals(3, g.size());
        assertEquals(List.of(2L, 3L, 4L), java.util.Arrays.stream(g.toArray()).boxed().toList());
        assertEquals(g, IdleGaps.empty(3).plus(2).plus(3).plus(4));
        assertEquals(0, IdleGaps.empty(0).plus(5).size());
    }

    @Test
    void badSettingsNameTheField() {
        assertEquals("preemption.releaseDelay",
                assertThrows(InvalidValueException.class, () -> ReleasePolicy.fixed(Duration.ofMillis(-1))).field());
        assertEquals("preemption.release.switchCost", assertThrows(InvalidValueException.class,
                () -> ReleasePolicy.adaptive(Duration.ofMillis(-1), Duration.ofMillis(1))).field());
        assertEquals("preemption.release.minSamples", assertThrows(InvalidValueException.class,
                () -> new ReleasePolicy.Adaptive(0, 1, 4, 5)).field());
        assertEquals("idleGaps.gapNanos", assertThrows(InvalidValueException.class, () -> IdleGaps.empty(2).plus(-1)).field());
    }

    /**
     * The adaptive rule through a {@link PreemptionController} on a manual clock (what a runtime gate
     * does): the machine records each idle gap, and the release timer is due the picked hold after
     * online went idle.
     */
    @Test
    void theControllerAppliesTheAdaptiveHoldOnAManualClock() {
        ManualTicker clock = new ManualTicker(0);
        PreemptionController c = PreemptionController.create(PreemptionConfig.custom().releasePolicy(ADAPTIVE).build(), clock);
        c.register("infer", PriorityClass.ONLINE);
        c.register("train", PriorityClass.OFFLINE);
        c.submit("train");
        c.start("train");
        for (int i = 0; i < 10; i++) {
            c.submit("infer");
            if (c.state().mode() == GpuMode.PREEMPTING) {
                c.suspended("train");
            }
            clock.advance(ms(5));
            c.idle("infer");
            if (i < 8) {
                assertEquals(ms(1), c.state().nextTimerNanos() - clock.read(), "idle period " + i + ": warm-up hold");
                clock.advance(ms(40));         // online stays away 40 ms: longer than the hold
                c.tick();
            } else {
                assertEquals(GpuMode.OFFLINE, c.state().mode(), "idle period " + i + ": released at once after "
                        + c.state().idleGaps());
                clock.advance(ms(40));
            }
            assertEquals(GpuMode.OFFLINE, c.state().mode());
            c.start("train");
        }
        assertEquals(9, c.state().idleGaps().size(), "the first idle period had no gap before it");
        assertEquals(ms(40), c.state().idleGaps().toArray()[0]);
    }
}
