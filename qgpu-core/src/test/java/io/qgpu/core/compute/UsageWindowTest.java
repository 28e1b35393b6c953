package io.qgpu.core.compute;

import static io.qgpu.core.compute.ManualTicker.ms;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.InvalidValueException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class UsageWindowTest {

    @Test
    void usageStillInTheWindowAheadDropsWhatLeavesMeanwhileAndEvictsNothingNeededNow() {
        UsageWindow w = new UsageWindow(Duration.ofSeconds(10));
        w.record("a", ms(0), ms(1_000));
        w.record("a", ms(2_000), ms(3_000));
        w.record("a", ms(9_000), ms(9_500));
        assertEquals(ms(2_500), w.usageStillInWindowNanos("a", ms(9_800), 0));
        assertEquals(ms(2_000), w.usageStillInWindowNanos("a", ms(9_800), ms(700)), "(500 ms, 9.8 s]: 500 ms of the first left");
        assertEquals(ms(1_500), w.usageStillInWindowNanos("a", ms(9_800), ms(1_200)), "(1 s, 9.8 s]: the first is gone");
        assertEquals(ms(1_000), w.usageStillInWindowNanos("a", ms(9_800), ms(2_700)), "(2.5 s, 9.8 s]: half the second too");
        assertEquals(ms(0), w.usageStillInWindowNanos("a", ms(9_800), ms(20_000)), "nothing is left a whole window ahead");
        assertEquals(ms(2_500), w.usageNanos("a", ms(9_800)), "the look ahead evicted nothing");
        assertEquals(0, w.usageStillInWindowNanos("ghost", ms(9_800), ms(100)));
    }

    @Test
    void countsOnlyTheWindowAndClipsTheStraddlingInterval() {
        UsageWindow w = new UsageWindow(Duration.ofSeconds(10));
        w.record("a", 0, ms(3000));
        w.record("a", ms(4000), ms(5000));
        assertEquals(ms(4000), w.usageNanos("a", ms(6000)));
        assertEquals(ms(4000), w.usageNanos("a", ms(10_000)));
        assertEquals(ms(2000), w.usageNanos("a", ms(12_000)));   // (2 s, 12 s]: 1 s of the first, all of the second
        assertEquals(0.05, w.share("a", ms(14_500)), 1e-12);      // (4.5 s, 14.5 s]: 0.5 s
        assertEquals(0, w.usageNanos("a", ms(15_000)));
        assertEquals(0, w.usageNanos("nobody", ms(15_000)));
    }

    @Test
    void timeUsageAtMostIsExact() {
        UsageWindow w = new UsageWindow(Duration.ofSeconds(10));
        w.record("a", 0, ms(250));
        w.record("a", ms(250), ms(500));
        w.record("a", ms(500), ms(750));
        w.record("a", ms(750), ms(1000));
        assertEquals(ms(1000), w.timeUsageAtMost("a", ms(1000), ms(1000)));
        assertEquals(ms(10_100), w.timeUsageAtMost("a", ms(900), ms(1000)));
        assertEquals(ms(10_600), w.timeUsageAtMost("a", ms(400), ms(1000)));
        assertEquals(ms(11_000), w.timeUsageAtMost("a", 0, ms(1000)));
    }

    /** What the property needs from a usage meter, so that it can also be run on a broken one. */
    interface Meter {
        void record(long start, long end);

        long usage(long now);

        long timeAtMost(long target, long now);
    }

    static Meter real(long window) {
        UsageWindow w = new UsageWindow(window);
        return new Meter() {
            public void record(long s, long e) {
                w.record("x", s, e);
            }

            public long usage(long now) {
                return w.usageNanos("x", now);
            }

            public long timeAtMost(long target, long now) {
                return w.timeUsageAtMost("x", target, now);
            }
        };
    }

    /** Deliberately broken: counts whole intervals that overlap the window (no clipping at its start). */
    static Meter unclipped(long window) {
        List<long[]> ivs = new ArrayList<>();
        return new Meter() {
            public void record(long s, long e) {
                ivs.add(new long[] {s, e});
            }

            public long usage(long now) {
                long sum = 0;
                for (long[] iv : ivs) {
                    if (iv[1] > now - window && iv[1] > iv[0]) {
                        sum += iv[1] - iv[0];
                    }
                }
                return sum;
            }

            public long timeAtMost(long target, long now) {
                long t = now;
                while (usage(t) > target) {
                    t++;
                }
                return t;
            }
        };
    }

    /** The first disagreement with a brute-force sum over random histories, or null. */
    static String bruteForceViolation(java.util.function.LongFunction<Meter> meters, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        for (int run = 0; run < 200; run++) {
            long window = 1 + rnd.nextLong(1000);
            Meter w = meters.apply(window);
            List<long[]> recorded = new ArrayList<>();
            long t = rnd.nextLong(50);
            for (int i = 0; i < 30; i++) {
                long s = t + rnd.nextLong(100);
                long e = s + rnd.nextLong(200);
                w.record(s, e);
                recorded.add(new long[] {s, e});
                t = e;
            }
            long now = t;
            for (int q = 0; q < 20; q++) {
                now += rnd.nextLong(300);
                long expected = brute(recorded, now - window, now);
                long got = w.usage(now);
                if (got != expected) {
                    return "run " + run + ": usage at " + now + " is " + got + ", brute force says " + expected;
                }
                long target = expected == 0 ? 0 : rnd.nextLong(expected + 1);
                long at = w.timeAtMost(target, now);
                if (brute(recorded, at - window, at) > target) {
                    return "run " + run + ": usage at " + at + " is still above " + target;
                }
                if (at > now && brute(recorded, at - 1 - window, at - 1) <= target) {
                    return "run " + run + ": " + at + " is later than needed for " + target;
                }
            }
        }
        return null;
    }

    @Test
    void matchesABruteForceSumOnRandomHistories() {
        long seed = Long.getLong("qgpu.seed", 7L);
        assertEquals(null, bruteForceViolation(UsageWindowTest::real, seed));
    }

    @Test
    void theBruteForcePropertyCatchesAMeterThatDoesNotClip() {
        String violation = bruteForceViolation(UsageWindowTest::unclipped, 7L);
        assertTrue(violation != null, "the property must reject a meter that does not clip the window start");
    }

    private static long brute(List<long[]> intervals, long from, long to) {
        long sum = 0;
        for (long[] iv : intervals) {
            sum += Math.max(0, Math.min(iv[1], to) - Math.max(iv[0], from));
        }
        return sum;
    }

    @Test
    void oldestEndIsTheEarliestEndStillInTheWindow() {
        UsageWindow w = new UsageWindow(Duration.ofSeconds(1));
        w.record("a", 0, ms(100));
        w.record("b", ms(100), ms(300));
        assertEquals(ms(100), w.oldestEnd(ms(500)));
        assertEquals(ms(300), w.oldestEnd(ms(1100)));
        assertEquals(Long.MAX_VALUE, w.oldestEnd(ms(1300)));
    }

    @Test
    void refusesOverlapsReversedIntervalsAndTimeGoingBack() {
        UsageWindow w = new UsageWindow(Duration.ofSeconds(1));
        w.record("a", 0, 100);
        InvalidValueException overlap = assertThrows(InvalidValueException.class, () -> w.record("a", 50, 200));
        assertEquals("usageWindow.record[a].start", overlap.field());
        InvalidValueException reversed = assertThrows(InvalidValueException.class, () -> w.record("a", 300, 200));
        assertEquals("usageWindow.record[a].end", reversed.field());
        w.usageNanos("a", 1000);
        InvalidValueException back = assertThrows(InvalidValueException.class, () -> w.usageNanos("a", 999));
        assertEquals("usageWindow.now", back.field());
        assertThrows(InvalidValueException.class, () -> new UsageWindow(Duration.ZERO));
    }
}
