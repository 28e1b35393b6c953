package io.qgpu.testkit.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class BusyLogTest {

    /** A sliding-window extreme: (log, window, fromEnd, toEnd) -> max or min usage. */
    interface Extreme {
        double of(BusyLog log, long window, long fromEnd, long toEnd);
    }

    @Test
    void gpuTimeAndWindowsOnAKnownLog() {
        BusyLog.Builder b = new BusyLog.Builder();
        b.add(0, 30, 1.0);
        b.add(30, 50, 0.5);     // two online tenants sharing
        b.add(70, 100, 1.0);
        BusyLog log = b.build();
        assertEquals(70, log.gpuNanos(), 1e-9);
        assertEquals(3, log.segments());
        assertEquals(35, log.gpuNanosBefore(40), 1e-9);
        assertEquals(15, log.gpuNanosBetween(40, 80), 1e-9);
        assertEquals(35, log.maxWindowUsage(40, 0, 100), 1e-9);   // (0, 40]: 30 alone + 10 at half the GPU
        assertEquals(0, log.minWindowUsage(10, 60, 70), 1e-9);
    }

    /** The first disagreement with evaluating every integer window end, or null. */
    static String bruteForceViolation(Extreme max, Extreme min, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        for (int run = 0; run < 300; run++) {
            BusyLog.Builder b = new BusyLog.Builder();
            long t = rnd.nextLong(20);
            for (int i = 0; i < 12; i++) {
                long s = t + rnd.nextLong(30);
                long e = s + 1 + rnd.nextLong(40);
                b.add(s, e, rnd.nextBoolean() ? 1.0 : 0.5);
                t = e;
            }
            BusyLog log = b.build();
            long window = 1 + rnd.nextLong(60);
            long from = rnd.nextLong(100);
            long to = from + rnd.nextLong(400);
            double bruteMax = Double.NEGATIVE_INFINITY;
            double bruteMin = Double.POSITIVE_INFINITY;
            for (long end = from; end <= to; end++) {
                double u = log.gpuNanosBetween(end - window, end);
                bruteMax = Math.max(bruteMax, u);
                bruteMin = Math.min(bruteMin, u);
            }
            double gotMax = max.of(log, window, from, to);
            double gotMin = min.of(log, window, from, to);
            if (Math.abs(gotMax - bruteMax) > 1e-9 || Math.abs(gotMin - bruteMin) > 1e-9) {
                return "run " + run + ": max " + gotMax + " vs " + bruteMax + ", min " + gotMin + " vs " + bruteMin;
            }
        }
        return null;
    }

    @Test
    void windowExtremesAreExact() {
        assertNull(bruteForceViolation(BusyLog::maxWindowUsage, BusyLog::minWindowUsage, Long.getLong("qgpu.seed", 17L)));
    }

    @Test
    void theBruteForceCheckCatchesExtremesTakenOnlyAtSegmentEnds() {
        Extreme endsOnlyMax = (log, w, a, b) -> {
            double best = log.gpuNanosBetween(a - w, a);
            for (long t = a; t <= b; t++) {
                // broken: looks only where some segment ends, like a sampler aligned to completions
                if (log.gpuNanosBefore(t) != log.gpuNanosBefore(t + 1) || t == b) {
                    continue;
                }
                best = Math.max(best, log.gpuNanosBetween(t - w, t));
            }
            return best;
        };
        assertNotNull(bruteForceViolation(endsOnlyMax, BusyLog::minWindowUsage, 17L));
    }
}
