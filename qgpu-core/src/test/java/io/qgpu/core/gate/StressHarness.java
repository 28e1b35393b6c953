package io.qgpu.core.gate;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Real threads hammering an {@link Admission} (the gate, or a deliberately broken stand-in) with
 * online requests and offline slices; records every slice with {@link System#nanoTime()} and audits
 * the records afterwards: per tenant, usage in every window position must stay within its limit plus
 * its longest slice, and online and offline slices must never overlap.
 */
final class StressHarness {

    /** What is under test. */
    interface Admission {
        Handle acquire(int tenant) throws InterruptedException;
    }

    interface Handle {
        void checkpoint() throws InterruptedException;

        void close();
    }

    record TenantLoad(String name, boolean online, int limitPercent) {
    }

    record Report(List<String> quotaViolations, long overlaps, long slices, long[] busyNanos) {
    }

    private final List<TenantLoad> tenants;
    private final long windowNanos;
    private final long seed;

    StressHarness(List<TenantLoad> tenants, long windowNanos, long seed) {
        this.tenants = tenants;
        this.windowNanos = windowNanos;
        this.seed = seed;
    }

    Report run(Admission admission, int threadsPerTenant, long durationNanos) throws InterruptedException {
        int n = tenants.size();
        AtomicInteger onlineActive = new AtomicInteger();
        AtomicInteger offlineActive = new AtomicInteger();
        AtomicLong overlaps = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        @SuppressWarnings("unchecked")
        List<long[]>[][] slices = new List[n][threadsPerTenant];
        List<Thread> threads = new ArrayList<>();
        long end = System.nanoTime() + durationNanos;
        SplittableRandom root = new SplittableRandom(seed);
        for (int i = 0; i < n; i++) {
            for (int k = 0; k < threadsPerTenant; k++) {
                int tenant = i;
                List<long[]> mine = new ArrayList<>();
                slices[i][k] = mine;
                SplittableRandom rnd = root.split();
                boolean online = tenants.get(i).online();
                Thread th = new Thread(() -> {
                    try {
                        while (System.nanoTime() < end) {
                            if (online) {
                                Handle h = admission.acquire(tenant);
                                try {
                                    slice(mine, onlineActive, offlineActive, overlaps, 50_000 + rnd.nextInt(200_000));
                                } finally {
                                    h.close();
                                }
                                spinYield(500_000 + rnd.nextInt(2_500_000));
                            } else {
                                Handle h = admission.acquire(tenant);
                                try {
                                    int count = 1 + rnd.nextInt(20);
                                    for (int s = 0; s < count && System.nanoTime() < end; s++) {
                                        slice(mine, offlineActive, onlineActive, overlaps, 50_000 + rnd.nextInt(150_000));
                                        h.checkpoint();
                                    }
                                } finally {
                                    h.close();
                                }
                            }
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }, tenants.get(i).name() + "-" + k);
                threads.add(th);
            }
        }
        threads.forEach(Thread::start);
        for (Thread th : threads) {
            th.join();
        }
        if (failure.get() != null) {
            throw new AssertionError("worker failed", failure.get());
        }
        List<String> violations = new ArrayList<>();
        long total = 0;
        long[] busy = new long[n];
        for (int i = 0; i < n; i++) {
            List<long[]> all = new ArrayList<>();
            long longest = 0;
            for (List<long[]> l : slices[i]) {
                all.addAll(l);
                for (long[] s : l) {
                    longest = Math.max(longest, s[1] - s[0]);
                }
            }
            total += all.size();
            long[][] union = union(all);
            for (long[] u : union) {
                busy[i] += u[1] - u[0];
            }
            TenantLoad t = tenants.get(i);
            if (t.limitPercent() < 100) {
                long limit = t.limitPercent() * windowNanos / 100;
                String v = audit(union, all, windowNanos, limit, 50_000);
                if (v != null) {
                    violations.add(t.name() + ": " + v);
                }
            }
        }
        return new Report(violations, overlaps.get(), total, busy);
    }

    private static void slice(List<long[]> out, AtomicInteger mine, AtomicInteger other, AtomicLong overlaps,
                              long nanos) {
        mine.incrementAndGet();
        long start = System.nanoTime();
        if (other.get() != 0) {
            overlaps.incrementAndGet();
        }
        long stop = start + nanos;
        long now;
        do {
            Thread.onSpinWait();
            now = System.nanoTime();
        } while (now < stop);
        if (other.get() != 0) {
            overlaps.incrementAndGet();
        }
        long end = System.nanoTime();
        mine.decrementAndGet();
        out.add(new long[] {start, end});
    }

    private static void spinYield(long nanos) {
        long stop = System.nanoTime() + nanos;
        while (System.nanoTime() < stop) {
            Thread.yield();
        }
    }

    static long[][] union(List<long[]> intervals) {
        long[][] a = intervals.toArray(new long[0][]);
        Arrays.sort(a, (x, y) -> Long.compare(x[0], y[0]));
        List<long[]> out = new ArrayList<>();
        for (long[] iv : a) {
            if (!out.isEmpty() && iv[0] <= out.get(out.size() - 1)[1]) {
                long[] last = out.get(out.size() - 1);
                last[1] = Math.max(last[1], iv[1]);
            } else {
                out.add(new long[] {iv[0], iv[1]});
            }
        }
        return out.toArray(new long[0][]);
    }

    /**
     * Checks every window position: busy time must stay within {@code limit} plus the longest slice
     * that overlaps the window (the slice that was running when the limit was reached) plus
     * {@code epsilon}. Returns a description of the first violation, or null.
     */
    static String audit(long[][] union, List<long[]> slices, long w, long limit, long epsilon) {
        long[][] byStart = slices.toArray(new long[0][]);
        Arrays.sort(byStart, (x, y) -> Long.compare(x[0], y[0]));
        int n = byStart.length;
        if (n == 0) {
            return null;
        }
        long longest = 0;
        long[] starts = new long[n];
        long[] lens = new long[n];
        for (int i = 0; i < n; i++) {
            starts[i] = byStart[i][0];
            lens[i] = byStart[i][1] - byStart[i][0];
            longest = Math.max(longest, lens[i]);
        }
        RangeMax rm = new RangeMax(lens);
        long[] prefix = new long[union.length + 1];
        for (int i = 0; i < union.length; i++) {
            prefix[i + 1] = prefix[i] + (union[i][1] - union[i][0]);
        }
        for (long[] iv : union) {
            for (long t : new long[] {iv[1], iv[0] + w}) {
                long used = usage(union, prefix, t - w, t);
                // slices overlapping (t - w, t] start in (t - w - longest, t)
                int lo = lowerBound(starts, t - w - longest + 1);
                int hi = lowerBound(starts, t) - 1;
                long slice = hi >= lo ? rm.max(lo, hi) : 0;
                if (used > limit + slice + epsilon) {
                    return used + " ns busy in the window ending " + t + ", limit " + limit
                            + " + longest overlapping slice " + slice;
                }
            }
        }
        return null;
    }

    private static int lowerBound(long[] a, long key) {
        int lo = 0;
        int hi = a.length;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (a[mid] < key) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    /** Sparse table for range maximum. */
    private static final class RangeMax {
        private final long[][] table;

        RangeMax(long[] a) {
            int levels = 1;
            while ((1 << levels) <= a.length) {
                levels++;
            }
            table = new long[levels][];
            table[0] = a.clone();
            for (int k = 1; k < levels; k++) {
                int len = a.length - (1 << k) + 1;
                table[k] = new long[Math.max(0, len)];
                for (int i = 0; i < len; i++) {
                    table[k][i] = Math.max(table[k - 1][i], table[k - 1][i + (1 << (k - 1))]);
                }
            }
        }

        long max(int lo, int hi) {
            int k = 31 - Integer.numberOfLeadingZeros(hi - lo + 1);
            return Math.max(table[k][lo], table[k][hi - (1 << k) + 1]);
        }
    }

    /**
     * Largest busy time in any window {@code (t - w, t]} of sorted disjoint intervals. Usage as a
     * function of t is piecewise linear; its maxima are where t is an interval end or t - w an
     * interval start.
     */
    static long maxWindowUsage(long[][] u, long w) {
        int n = u.length;
        long[] prefix = new long[n + 1];
        for (int i = 0; i < n; i++) {
            prefix[i + 1] = prefix[i] + (u[i][1] - u[i][0]);
        }
        long max = 0;
        List<Long> ends = new ArrayList<>();
        for (long[] iv : u) {
            ends.add(iv[1]);
            ends.add(iv[0] + w);
        }
        for (long t : ends) {
            max = Math.max(max, usage(u, prefix, t - w, t));
        }
        return max;
    }

    private static long usage(long[][] u, long[] prefix, long from, long to) {
        // intervals fully or partly inside (from, to]
        int lo = firstEndAfter(u, from);
        long sum = 0;
        for (int i = lo; i < u.length && u[i][0] < to; i++) {
            sum += Math.min(u[i][1], to) - Math.max(u[i][0], from);
        }
        return sum;
    }

    private static int firstEndAfter(long[][] u, long from) {
        int lo = 0;
        int hi = u.length;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (u[mid][1] <= from) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }
}
