package io.qgpu.core.gate;

/**
 * One tenant's busy time in a sliding window, in bounded memory. Busy periods are kept as chunks
 * {@code [start, end)} with the busy time inside them: a period joins the last chunk if the chunk
 * would then span at most {@code span} nanoseconds, else it starts a new one. A chunk made of one
 * period is exact. A chunk of several short periods knows its busy total exactly; where a window
 * edge cuts through it, its busy time is assumed to lie as much inside the window as it can (packed
 * against the edge that is inside), so usage is never under-estimated and over-estimated by at most
 * one chunk's idle time (less than {@code span}). Limits enforced on it are therefore never passed,
 * at worst reached up to {@code span} early. Memory is bounded by about {@code window / span}
 * chunks however many leases run.
 *
 * <p>Why not {@link io.qgpu.core.compute.UsageWindow}: it keeps every interval it is given until a
 * query evicts it, which at millions of short leases a second is unbounded memory and an allocation
 * per lease; the gate needs the same answers at a bounded cost.
 *
 * <pre>{@code
 * BusyWindow w = new BusyWindow(10_000_000_000L, 10_000_000L);
 * w.record(0, 3_000_000_000L);
 * w.usage(5_000_000_000L);     // 3 s
 * }</pre>
 *
 * <p>Thread safety: not thread-safe; guarded by the tenant's books lock.
 */
final class BusyWindow {
    private final long window;
    private final long span;
    private long[] starts = new long[16];
    private long[] ends = new long[16];
    private long[] busy = new long[16];
    private int head;
    private int size;
    private long sum;

    BusyWindow(long windowNanos, long spanNanos) {
        this.window = windowNanos;
        this.span = spanNanos;
    }

    /** Records a busy period; periods come in order and do not overlap (callers clamp). */
    void record(long start, long end) {
        if (end <= start) {
            return;
        }
        if (size > 0) {
            int l = idx(size - 1);
            if (start >= ends[l] && end - starts[l] <= span) {
                ends[l] = end;
                busy[l] += end - start;
                sum += end - start;
                return;
            }
        }
        if (size == starts.length) {
            grow();
        }
        int i = idx(size++);
        starts[i] = start;
        ends[i] = end;
        busy[i] = end - start;
        sum += end - start;
    }

    /** Busy time in {@code (now - window, now]}, never less than the truth. */
    long usage(long now) {
        long from = now - window;
        evict(from);
        long u = sum;
        if (size > 0) {
            u -= leastBefore(head, from);
            for (int k = size - 1; k >= 0; k--) {      // recorded ahead of now counts up to now
                int i = idx(k);
                if (ends[i] <= now) {
                    break;
                }
                u -= leastAfter(i, now);
            }
        }
        return Math.max(0, u);
    }

    /**
     * The earliest {@code t >= now} at which usage is at most {@code target}, if nothing runs
     * meanwhile (never earlier than the truth).
     */
    long timeUsageAtMost(long target, long now) {
        long u = usage(now);
        if (u <= target) {
            return now;
        }
        long need = u - target;
        long from = now - window;
        for (int k = 0; k < size; k++) {
            int i = idx(k);
            long inside = busy[i] - leastBefore(i, from);
            if (inside >= need) {
                // its busy time (packed at its end) leaves the window one nanosecond per nanosecond
                long leaving = Math.max(from, ends[i] - busy[i]);
                return leaving + need + window;
            }
            need -= inside;
        }
        return now + window;
    }

    /** Chunks held (for tests). */
    int chunks() {
        return size;
    }

    /** The least busy time chunk {@code i} can have before {@code t} (its busy time packed at its end). */
    private long leastBefore(int i, long t) {
        if (t <= starts[i]) {
            return 0;
        }
        if (t >= ends[i]) {
            return busy[i];
        }
        return Math.max(0, busy[i] - (ends[i] - t));
    }

    /** The least busy time chunk {@code i} can have after {@code t} (its busy time packed at its start). */
    private long leastAfter(int i, long t) {
        if (t >= ends[i]) {
            return 0;
        }
        if (t <= starts[i]) {
            return busy[i];
        }
        return Math.max(0, busy[i] - (t - starts[i]));
    }

    private void evict(long from) {
        while (size > 0 && ends[head] <= from) {
            sum -= busy[head];
            head = (head + 1) % starts.length;
            size--;
        }
    }

    private int idx(int k) {
        return (head + k) % starts.length;
    }

    private void grow() {
        int n = starts.length * 2;
        long[] s = new long[n];
        long[] e = new long[n];
        long[] b = new long[n];
        for (int k = 0; k < size; k++) {
            int i = idx(k);
            s[k] = starts[i];
            e[k] = ends[i];
            b[k] = busy[i];
        }
        starts = s;
        ends = e;
        busy = b;
        head = 0;
    }
}
