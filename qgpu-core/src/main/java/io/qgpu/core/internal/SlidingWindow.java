package io.qgpu.core.internal;

/**
 * One busy timeline's time in a sliding window, the one window implementation of qgpu: the token
 * scheduler (through {@link io.qgpu.core.compute.UsageWindow}, which keeps one per tenant), the
 * runtime gate (one per tenant, bounded) and, through the token scheduler, the simulator.
 *
 * <p>Busy periods are kept as chunks {@code [start, end)} with the busy time inside them: a period
 * joins the last chunk if the chunk would then span at most {@code span} nanoseconds, else it starts
 * a new one. A chunk made of one period is exact, so {@link #exact(long)} (span 0: every period its
 * own chunk) answers exactly. {@link #bounded(long, long)} keeps memory bounded by about
 * {@code 4 * window / span} chunks however many periods come, queried or not (see Memory below): a
 * chunk of several short periods knows its busy total exactly; where a window edge cuts through it, its busy time is assumed to lie as much
 * inside the window as it can (packed against the edge that is inside), so usage is never
 * under-estimated and over-estimated by at most one chunk's idle time (less than {@code span}).
 * Limits enforced on it are therefore never passed, at worst reached up to {@code span} early.
 *
 * <pre>{@code
 * SlidingWindow w = SlidingWindow.bounded(10_000_000_000L, 10_000_000L);
 * w.record(0, 3_000_000_000L);
 * w.usage(5_000_000_000L);     // 3 s
 * }</pre>
 *
 * <p>Memory: a query forgets what has left its window; a {@link #record} that finds the arrays full
 * first forgets the chunks that ended two windows or more before the period it records, and grows
 * them only if that freed nothing. So the arrays of a window that is never queried grow only while
 * all they hold lies within two windows: their capacity stays under twice the chunks two windows can
 * hold. A query for a {@code now} at most one window earlier than the start of the last period
 * recorded still finds everything it counts. (A later {@code now} is the usual case; the gate's queries can lag behind a lease recorded concurrently, by the time
 * between reading the ticker and taking the tenant's books lock.)
 *
 * <p>Not part of the exported API. Thread safety: not thread-safe; callers guard it.
 */
public final class SlidingWindow {
    private final long window;
    private final long span;
    private long[] starts = new long[16];
    private long[] ends = new long[16];
    private long[] busy = new long[16];
    private int head;
    private int size;
    private long sum;

    private SlidingWindow(long windowNanos, long spanNanos) {
        if (windowNanos < 1 || spanNanos < 0) {
            throw new IllegalArgumentException("window " + windowNanos + " ns, span " + spanNanos + " ns");
        }
        this.window = windowNanos;
        this.span = spanNanos;
    }

    /** A window that keeps every period apart and answers exactly. */
    public static SlidingWindow exact(long windowNanos) {
        return new SlidingWindow(windowNanos, 0);
    }

    /**
     * A window in memory bounded by about {@code windowNanos / spanNanos} chunks, never
     * under-estimating usage and over-estimating it by less than {@code spanNanos}.
     */
    public static SlidingWindow bounded(long windowNanos, long spanNanos) {
        return new SlidingWindow(windowNanos, spanNanos);
    }

    /** The window's length. */
    public long windowNanos() {
        return window;
    }

    /** Whether no busy time is held (all of it left the window at the last query, or none came). */
    public boolean isEmpty() {
        return size == 0;
    }

    /** End of the last period recorded and still held, or {@link Long#MIN_VALUE} if none. */
    public long lastEnd() {
        return size == 0 ? Long.MIN_VALUE : ends[idx(size - 1)];
    }

    /**
     * End of the oldest chunk still in the window ending {@code now} ({@link Long#MAX_VALUE} if
     * none); it leaves the window at that time plus the window.
     */
    public long oldestEnd(long now) {
        evict(now - window);
        return size == 0 ? Long.MAX_VALUE : ends[head];
    }

    /** Records a busy period; periods come in order and do not overlap (callers check or clamp). */
    public void record(long start, long end) {
        if (end <= start) {
            return;
        }
        if (size > 0) {
            int l = idx(size - 1);
            if (start >= ends[l] && end <= joinLimit()) {
                ends[l] = end;
                busy[l] += end - start;
                sum += end - start;
                return;
            }
        }
        if (size == starts.length) {
            // no query may have come for a long time (a gate tenant whose leases all take the fast
            // path): forget what no query can still count before growing, so memory stays bounded
            evict(Saturating.subtract(start, Saturating.multiply(2, window)));
            if (size == starts.length) {
                grow();
            }
        }
        int i = idx(size++);
        starts[i] = start;
        ends[i] = end;
        busy[i] = end - start;
        sum += end - start;
    }

    /**
     * The longest a chunk may span: a period joins the last chunk if it starts no earlier than the
     * chunk's end and ends at most this long after the chunk's start. 0 for an {@link #exact} window.
     */
    public long span() {
        return span;
    }

    /** Start of the last chunk held, or {@link Long#MIN_VALUE} if none. */
    public long lastStart() {
        return size == 0 ? Long.MIN_VALUE : starts[idx(size - 1)];
    }

    /**
     * The latest end of a period that joins the last chunk (if it starts no earlier than the chunk's
     * end): the chunk's start plus {@link #span()}; {@link Long#MIN_VALUE} if no chunk is held.
     */
    public long joinLimit() {
        return size == 0 ? Long.MIN_VALUE : Saturating.add(lastStart(), span);
    }

    /**
     * Adds to the last chunk periods that each {@link #record} would have joined to it, in one step:
     * {@code busy} nanoseconds of them, the last ending at {@code end}. A caller that drains many
     * short periods keeps {@link #joinLimit()} and sums the periods that end by it, instead of one
     * call each.
     *
     * @throws IllegalStateException if no chunk is held, {@code end} is before the chunk's end, the
     *                               chunk would span more than {@link #span()}, or {@code busy} is
     *                               negative or more than the time added
     */
    public void extendLast(long end, long busy) {
        if (size == 0) {
            throw new IllegalStateException("no chunk to extend");
        }
        int l = idx(size - 1);
        if (end < ends[l] || end > joinLimit() || busy < 0 || busy > end - ends[l]) {
            throw new IllegalStateException("cannot extend chunk [" + starts[l] + ", " + ends[l] + ") to " + end
                    + " by " + busy + " ns (span " + span + " ns)");
        }
        ends[l] = end;
        this.busy[l] += busy;
        sum += busy;
    }

    /** Busy time in {@code (now - window, now]}, never less than the truth; periods recorded ahead of now count up to now. */
    public long usage(long now) {
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
    public long timeUsageAtMost(long target, long now) {
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

    /**
     * Busy time held in {@code (from, to]}: exact for an {@link #exact} window; for a bounded one, the
     * least the chunks can hold there (each chunk's busy time packed as far out of the range as it can go).
     */
    public long busyBetween(long from, long to) {
        long u = 0;
        for (int k = 0; k < size; k++) {
            int i = idx(k);
            if (starts[i] >= to) {
                break;
            }
            u += Math.max(0, leastBefore(i, to) - mostBefore(i, from));
        }
        return u;
    }

    /** Chunks held now. */
    public int chunks() {
        return size;
    }

    /** Chunks the arrays can hold before they grow (memory in use: three longs per chunk). */
    public int capacity() {
        return starts.length;
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

    /** The most busy time chunk {@code i} can have before {@code t} (its busy time packed at its start). */
    private long mostBefore(int i, long t) {
        if (t <= starts[i]) {
            return 0;
        }
        return Math.min(busy[i], t - starts[i]);
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
            head = (head + 1) & (starts.length - 1);
            size--;
        }
    }

    /** The array index of the {@code k}-th chunk held (the arrays' length is a power of two: 16, doubled). */
    private int idx(int k) {
        return (head + k) & (starts.length - 1);
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
