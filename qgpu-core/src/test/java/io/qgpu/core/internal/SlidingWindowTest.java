package io.qgpu.core.internal;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The gate's bounded usage window against a brute-force reference, with seeded random periods. */
class SlidingWindowTest {

    private static final long W = 10_000;
    private static final long SPAN = 100;

    interface Window {
        void record(long s, long e);

        long usage(long now);
    }

    /** Exact busy time of {@code periods} in {@code (now - w, now]}. */
    private static long reference(List<long[]> periods, long w, long now) {
        long u = 0;
        for (long[] p : periods) {
            u += Math.max(0, Math.min(p[1], now) - Math.max(p[0], now - w));
        }
        return u;
    }

    /**
     * Records random periods and compares usage with the reference at random times: exact when every
     * gap is longer than the span (each period its own chunk); otherwise never below the reference
     * and at most one span above it.
     *
     * @return the first mismatch, or null
     */
    static String check(Window window, long seed, boolean sparse) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<long[]> periods = new ArrayList<>();
        long t = 0;
        for (int i = 0; i < 2_000; i++) {
            long gap = sparse ? SPAN + 1 + rnd.nextLong(3 * SPAN) : rnd.nextLong(30);
            long len = 1 + rnd.nextLong(sparse ? 400 : 40);
            long s = t + gap;
            long e = s + len;
            window.record(s, e);
            periods.add(new long[] {s, e});
            t = e;
            if (rnd.nextInt(4) == 0) {
                long now = t + rnd.nextLong(2 * W);
                long expected = reference(periods, W, now);
                long got = window.usage(now);
                long tolerance = sparse ? 0 : SPAN;
                if (got < expected || got - expected > tolerance) {
                    return "seed " + seed + " at " + now + ": usage " + got + ", reference " + expected;
                }
                t = Math.max(t, now);
            }
        }
        return null;
    }

    private static Window busyWindow() {
        return wrap(SlidingWindow.bounded(W, SPAN));
    }

    private static Window wrap(SlidingWindow w) {
        return new Window() {
            @Override
            public void record(long s, long e) {
                w.record(s, e);
            }

            @Override
            public long usage(long now) {
                return w.usage(now);
            }
        };
    }

    @Test
    void matchesTheReferenceExactlyForSparsePeriodsAndWithinASpanForDenseOnes() {
        long seed = Long.getLong("qgpu.seed", 42L);
        for (long s = seed; s < seed + 20; s++) {
            assertNull(check(busyWindow(), s, true));
            assertNull(check(busyWindow(), s, false));
        }
    }

    /** The exact form keeps every period apart: dense periods too match the reference exactly. */
    @Test
    void theExactFormMatchesTheReferenceForDensePeriodsToo() {
        long seed = Long.getLong("qgpu.seed", 42L);
        for (long s = seed; s < seed + 20; s++) {
            SlidingWindow exact = SlidingWindow.exact(W);
            Window strict = new Window() {
                final List<long[]> periods = new ArrayList<>();

                @Override
                public void record(long st, long e) {
                    exact.record(st, e);
                    periods.add(new long[] {st, e});
                }

                @Override
                public long usage(long now) {
                    long got = exact.usage(now);
                    assertEquals(reference(periods, W, now), got, "exact usage at " + now);
                    return got;
                }
            };
            assertNull(check(strict, s, false));
            assertEquals(W, exact.windowNanos());
        }
    }

    @Test
    void accessorsOfTheWindow() {
        SlidingWindow w = SlidingWindow.exact(1_000);
        assertTrue(w.isEmpty());
        assertEquals(Long.MIN_VALUE, w.lastEnd());
        assertEquals(Long.MAX_VALUE, w.oldestEnd(0));
        w.record(10, 20);
        w.record(30, 30);                              // empty: ignored
        w.record(40, 60);
        assertFalse(w.isEmpty());
        assertEquals(2, w.chunks());
        assertEquals(60, w.lastEnd());
        assertEquals(20, w.oldestEnd(100));
        assertEquals(60, w.oldestEnd(1_020));         // the first left the window at 1020
        assertEquals(1, w.chunks());
        assertEquals(Long.MAX_VALUE, w.oldestEnd(1_060));
        assertTrue(w.isEmpty());
        assertThrows(IllegalArgumentException.class, () -> SlidingWindow.exact(0));
        assertThrows(IllegalArgumentException.class, () -> SlidingWindow.bounded(10, -1));
        SlidingWindow many = SlidingWindow.exact(1_000_000);
        for (int i = 0; i < 100; i++) {
            many.record(i * 10L, i * 10L + 5);         // grows past its first arrays
        }
        assertEquals(500, many.usage(1_000));
        assertEquals(100, many.chunks());
        assertEquals(1_000_000 + 495, many.timeUsageAtMost(250, 1_000));
    }

    @Test
    void theCheckCatchesAWindowThatNeverForgets() {
        Window broken = new Window() {
            long sum;

            @Override
            public void record(long s, long e) {
                sum += e - s;
            }

            @Override
            public long usage(long now) {
                return sum;
            }
        };
        assertNotNull(check(broken, 1, true));
    }

    @Test
    void memoryStaysBoundedUnderMillionsOfTinyPeriods() {
        SlidingWindow w = SlidingWindow.bounded(10_000_000_000L, 10_000_000L);
        long t = 0;
        for (int i = 0; i < 2_000_000; i++) {
            w.record(t, t + 100);
            t += 150;
        }
        w.usage(t);
        assertTrue(w.chunks() <= 1_100, "chunks: " + w.chunks());
        assertEquals(2_000_000L * 100, w.usage(t));
    }

    /**
     * A window that is never queried (a gate tenant whose leases all take the lock-free path) must not
     * grow with the periods it is given: before, the arrays doubled for as long as periods came
     * (262,144 chunks of capacity here).
     */
    @Test
    void memoryStaysBoundedWhenNothingQueriesTheWindow() {
        SlidingWindow bounded = SlidingWindow.bounded(W, SPAN);
        SlidingWindow exact = SlidingWindow.exact(W);
        long t = 0;
        for (int i = 0; i < 200_000; i++) {   // 300 windows' worth of periods, no query
            bounded.record(t, t + 10);
            exact.record(t, t + 10);
            t += 15;
        }
        // the arrays grow only when all they hold lies within two windows: capacity under twice that
        // bounded: a chunk per span, 201 in two windows
        assertTrue(bounded.capacity() < 2 * 2 * (W / SPAN + 1), "capacity: " + bounded.capacity());
        // exact: a chunk per period, 1,334 in two windows
        assertTrue(exact.capacity() < 2 * 2 * (W / 15 + 1), "capacity: " + exact.capacity());
        // and what is kept still answers: the last window holds 10 of every 15 ns
        long expected = W / 15 * 10;
        assertEquals(expected, exact.usage(t), 10);
        assertTrue(bounded.usage(t) >= exact.usage(t) && bounded.usage(t) - exact.usage(t) <= SPAN);
    }

    /** A query up to one window behind the last period recorded still counts everything in its window. */
    @Test
    void aQueryLaggingAWindowBehindTheLastPeriodStillFindsItsChunks() {
        SlidingWindow w = SlidingWindow.exact(W);
        long t = 0;
        for (int i = 0; i < 100_000; i++) {
            w.record(t, t + 10);
            t += 15;
        }
        long now = t - W;   // a window behind the last period's start
        List<long[]> lastPeriods = new ArrayList<>();
        for (long s = 0; s < t; s += 15) {
            if (s + 10 > now - W) {
                lastPeriods.add(new long[] {s, s + 10});
            }
        }
        assertEquals(reference(lastPeriods, W, now), w.usage(now));
    }

    @Test
    void extendLastJoinsOnlyWhatRecordWouldHaveJoined() {
        SlidingWindow w = SlidingWindow.bounded(W, SPAN);
        assertEquals(SPAN, w.span());
        assertEquals(Long.MIN_VALUE, w.lastStart());
        assertThrows(IllegalStateException.class, () -> w.extendLast(10, 1));
        w.record(100, 110);
        assertEquals(100, w.lastStart());
        assertThrows(IllegalStateException.class, () -> w.extendLast(105, 0));     // before the chunk's end
        assertThrows(IllegalStateException.class, () -> w.extendLast(201, 1));     // past the span
        assertThrows(IllegalStateException.class, () -> w.extendLast(150, -1));
        assertThrows(IllegalStateException.class, () -> w.extendLast(150, 41));    // more than the time added
        w.extendLast(200, 90);
        assertEquals(100, w.usage(200));
        assertEquals(200, w.lastEnd());
        assertEquals(1, w.chunks());
        assertEquals(0, SlidingWindow.exact(W).span());
    }

    @Test
    void timeUsageAtMostIsExactForSinglePeriodChunks() {
        SlidingWindow w = SlidingWindow.bounded(10_000, 100);
        w.record(0, 2_000);
        w.record(2_500, 3_500);
        assertEquals(3_000, w.usage(3_500));
        assertEquals(3_500, w.timeUsageAtMost(3_000, 3_500));
        assertEquals(10_000 + 1_000, w.timeUsageAtMost(2_000, 3_500));
        assertEquals(10_000 + 2_500 + 500, w.timeUsageAtMost(500, 3_500));
        assertEquals(0, w.usage(20_000));
    }

    @Test
    void aDenseChunkIsCountedConservativelyAtTheWindowEdges() {
        SlidingWindow w = SlidingWindow.bounded(1_000, 100);
        for (long s = 0; s < 100; s += 10) {
            w.record(s, s + 5);                       // 50 busy in [0, 95)
        }
        assertEquals(1, w.chunks());
        assertEquals(50, w.usage(500));
        // busy time assumed packed at the chunk's end: it leaves during [1045, 1095)
        assertEquals(1_070, w.timeUsageAtMost(25, 500));
        assertEquals(50, w.usage(1_045));
        assertEquals(25, w.usage(1_070));             // the truth is 20: never less than the truth
        SlidingWindow ahead = SlidingWindow.bounded(1_000, 100);
        for (long s = 0; s < 100; s += 10) {
            ahead.record(s, s + 5);
        }
        assertEquals(40, ahead.usage(40));            // the part ahead of now packed at the start: truth 20
    }
}
