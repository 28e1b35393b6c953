package io.qgpu.core.gate;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.PriorityQueue;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;

/**
 * Many online and offline workers driving an {@link Admission} (the gate, or a deliberately broken
 * stand-in) in virtual time, on one thread, in an order fixed by the seed: online workers run one
 * slice per lease with idle gaps between; offline workers run bounded slices with a checkpoint after
 * each. Every slice is recorded with its virtual start and end, and the records are audited
 * afterwards: per tenant, usage in every window position must stay within its limit plus its longest
 * slice, and online and offline slices must never overlap. CPU load cannot change the outcome: time
 * moves only when every worker waits for the next event.
 */
final class StressHarness {

    /** What is under test. Futures may complete inside any call; the harness only queues the follow-up. */
    interface Admission {
        CompletableFuture<Handle> acquire(int tenant);
    }

    interface Handle {
        /** Completes when the work may go on. */
        CompletableFuture<?> checkpoint();

        void close();
    }

    /** Virtual time and the timer work due in it. */
    interface VirtualTime {
        long now();

        /** When timer work is next due ({@link Long#MAX_VALUE}: none). */
        long nextTimer();

        /** Moves time forward to {@code t}, running the timer work due by then. */
        void advanceTo(long t);
    }

    record TenantLoad(String name, boolean online, int limitPercent) {
    }

    record Report(List<String> quotaViolations, long overlapNanos, long slices, long[] busyNanos) {
    }

    private final List<TenantLoad> tenants;
    private final long windowNanos;
    private final long seed;
    private final PriorityQueue<Event> queue = new PriorityQueue<>();
    private long seq;

    StressHarness(List<TenantLoad> tenants, long windowNanos, long seed) {
        this.tenants = tenants;
        this.windowNanos = windowNanos;
        this.seed = seed;
    }

    private record Event(long at, long seq, Runnable action) implements Comparable<Event> {
        @Override
        public int compareTo(Event o) {
            int c = Long.compare(at, o.at);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    /** One worker: a little state machine driven by events. */
    private final class Worker {
        final int tenant;
        final boolean online;
        final SplittableRandom rnd;
        final List<long[]> slices = new ArrayList<>();
        final VirtualTime time;
        final long end;
        CompletableFuture<Handle> pendingAcquire;
        CompletableFuture<?> pendingCheckpoint;
        Handle handle;
        int slicesLeft;

        Worker(int tenant, boolean online, SplittableRandom rnd, VirtualTime time, long end) {
            this.tenant = tenant;
            this.online = online;
            this.rnd = rnd;
            this.time = time;
            this.end = end;
        }

        void acquire() {
            if (time.now() >= end) {
                return;
            }
            CompletableFuture<Handle> f = admission.acquire(tenant);
            pendingAcquire = f;
            f.whenComplete((h, ex) -> at(time.now(), () -> granted(f, h, ex)));
        }

        void granted(CompletableFuture<Handle> f, Handle h, Throwable ex) {
            if (f != pendingAcquire) {
                return;
            }
            pendingAcquire = null;
            if (ex != null) {
                throw new AssertionError("acquire failed", ex);
            }
            handle = h;
            slicesLeft = online ? 1 : 1 + rnd.nextInt(20);
            slice();
        }

        void slice() {
            long start = time.now();
            long len = online ? 50_000 + rnd.nextInt(200_000) : 50_000 + rnd.nextInt(150_000);
            at(start + len, () -> {
                slices.add(new long[] {start, time.now()});
                slicesLeft--;
                if (online || slicesLeft == 0 || time.now() >= end) {
                    Handle h = handle;
                    handle = null;
                    h.close();
                    if (online) {
                        at(time.now() + 1_000_000 + rnd.nextInt(9_000_000), this::acquire);
                    } else {
                        acquire();
                    }
                    return;
                }
                CompletableFuture<?> c = handle.checkpoint();
                pendingCheckpoint = c;
                c.whenComplete((v, ex) -> at(time.now(), () -> resumed(c, ex)));
            });
        }

        void resumed(CompletableFuture<?> c, Throwable ex) {
            if (c != pendingCheckpoint) {
                return;
            }
            pendingCheckpoint = null;
            if (ex != null) {
                throw new AssertionError("checkpoint failed", ex);
            }
            slice();
        }

        /** At the end: withdraw what waits (cancelling its future) and close what is open. */
        void stop() {
            if (pendingAcquire != null) {
                CompletableFuture<Handle> f = pendingAcquire;
                pendingAcquire = null;
                if (!f.cancel(false) && !f.isCompletedExceptionally()) {
                    f.join().close();   // granted, but its follow-up was not run
                }
            }
            if (pendingCheckpoint != null) {
                CompletableFuture<?> c = pendingCheckpoint;
                pendingCheckpoint = null;
                c.cancel(false);
            }
            if (handle != null) {
                handle.close();
                handle = null;
            }
        }
    }

    private Admission admission;

    private void at(long t, Runnable action) {
        queue.add(new Event(t, seq++, action));
    }

    Report run(Admission admission, VirtualTime time, int workersPerTenant, long durationNanos) {
        this.admission = admission;
        int n = tenants.size();
        long start = time.now();
        long end = start + durationNanos;
        SplittableRandom root = new SplittableRandom(seed);
        List<Worker> workers = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            for (int k = 0; k < workersPerTenant; k++) {
                Worker w = new Worker(i, tenants.get(i).online(), root.split(), time, end);
                workers.add(w);
                at(start + root.nextInt(1_000_000), w::acquire);
            }
        }
        while (true) {
            long next = Math.min(queue.isEmpty() ? Long.MAX_VALUE : queue.peek().at, time.nextTimer());
            if (next > end) {
                break;
            }
            if (next > time.now()) {
                time.advanceTo(next);
            }
            while (!queue.isEmpty() && queue.peek().at <= time.now()) {
                queue.poll().action().run();
            }
        }
        time.advanceTo(end);
        queue.clear();
        for (Worker w : workers) {
            w.stop();
        }
        queue.clear();   // follow-ups of the cancellations are not run
        return audit(workers, n);
    }

    private Report audit(List<Worker> workers, int n) {
        List<String> violations = new ArrayList<>();
        long total = 0;
        long[] busy = new long[n];
        List<long[]> online = new ArrayList<>();
        List<long[]> offline = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            List<long[]> all = new ArrayList<>();
            for (Worker w : workers) {
                if (w.tenant == i) {
                    all.addAll(w.slices);
                }
            }
            total += all.size();
            (tenants.get(i).online() ? online : offline).addAll(all);
            long[][] union = union(all);
            for (long[] u : union) {
                busy[i] += u[1] - u[0];
            }
            TenantLoad t = tenants.get(i);
            if (t.limitPercent() < 100) {
                long limit = t.limitPercent() * windowNanos / 100;
                String v = audit(union, all, windowNanos, limit, 0);
                if (v != null) {
                    violations.add(t.name() + ": " + v);
                }
            }
        }
        return new Report(violations, overlap(union(online), union(offline)), total, busy);
    }

    /** Time covered by both sorted disjoint interval lists. */
    static long overlap(long[][] a, long[][] b) {
        long sum = 0;
        int i = 0;
        int j = 0;
        while (i < a.length && j < b.length) {
            long lo = Math.max(a[i][0], b[j][0]);
            long hi = Math.min(a[i][1], b[j][1]);
            if (hi > lo) {
                sum += hi - lo;
            }
            if (a[i][1] < b[j][1]) {
                i++;
            } else {
                j++;
            }
        }
        return sum;
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
        for (long[] iv : union) {
            for (long t : new long[] {iv[1], iv[0] + w}) {
                long used = usage(union, t - w, t);
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
        long max = 0;
        for (long[] iv : u) {
            max = Math.max(max, usage(u, iv[1] - w, iv[1]));
            max = Math.max(max, usage(u, iv[0], iv[0] + w));
        }
        return max;
    }

    private static long usage(long[][] u, long from, long to) {
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
