package io.qgpu.core.compute;

import io.qgpu.core.internal.DurationChecks;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Validate;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * GPU time per tenant in a sliding window: usage at time {@code t} is the time a tenant was busy in
 * {@code (t - window, t]}; its share is that divided by the window. Time before the first record
 * counts as idle. Each tenant's busy intervals are recorded in order and must not overlap
 * (a tenant cannot be busy twice at once; merge concurrent leases before recording them).
 *
 * <pre>{@code
 * UsageWindow w = new UsageWindow(Duration.ofSeconds(10));
 * w.record("job-a", 0, 3_000_000_000L);           // busy for the first 3 s
 * w.usageNanos("job-a", 5_000_000_000L);          // 3 s
 * w.timeUsageAtMost("job-a", 1_000_000_000L, 5_000_000_000L);   // 12 s: by then 2 s have left the window
 * w.share("job-a", 12_000_000_000L);              // 0.1: only (2 s, 3 s] is still in the window
 * }</pre>
 *
 * <p>Queries evict what has left the window, so the {@code now} passed to the queries must never go
 * backwards (it is checked). An interval recorded ahead of {@code now} counts only up to {@code now}.
 *
 * <p>Thread safety: not thread-safe; confine an instance to one thread or guard it with a lock.
 */
public final class UsageWindow {

    private final long window;
    private final Map<String, Intervals> tenants = new LinkedHashMap<>();
    private long lastNow = Long.MIN_VALUE;

    public UsageWindow(Duration window) {
        this(DurationChecks.positiveNanos("usageWindow.window", window));
    }

    UsageWindow(long windowNanos) {
        this.window = Validate.atLeast("usageWindow.window", windowNanos, 1);
    }

    public long windowNanos() {
        return window;
    }

    /** Tenants with any record (possibly all evicted since). */
    public Set<String> tenants() {
        return Set.copyOf(tenants.keySet());
    }

    /**
     * Records that {@code tenant} was busy in {@code [start, end)}. An empty interval is ignored.
     *
     * @throws InvalidValueException if {@code end < start} or the interval starts before the
     *                               tenant's previous one ended
     */
    public void record(String tenant, long start, long end) {
        Validate.notBlank("usageWindow.tenant", tenant);
        if (end < start) {
            throw new InvalidValueException("usageWindow.record[" + tenant + "].end", end,
                    "must not be before start (" + start + ")");
        }
        Intervals iv = tenants.computeIfAbsent(tenant, k -> new Intervals());
        if (iv.size > 0 && start < iv.lastEnd()) {
            throw new InvalidValueException("usageWindow.record[" + tenant + "].start", start,
                    "must not be before the end of the tenant's previous interval (" + iv.lastEnd() + ")");
        }
        if (end > start) {
            iv.add(start, end);
        }
    }

    /** Forgets a tenant's records. */
    public void remove(String tenant) {
        tenants.remove(tenant);
    }

    /** Busy time of {@code tenant} in {@code (now - window, now]}. */
    public long usageNanos(String tenant, long now) {
        advance(now);
        Intervals iv = tenants.get(tenant);
        if (iv == null) {
            return 0;
        }
        long from = now - window;
        iv.evict(from);
        return iv.usageSince(from, now);
    }

    /** {@link #usageNanos} divided by the window. */
    public double share(String tenant, long now) {
        return (double) usageNanos(tenant, now) / window;
    }

    /**
     * The earliest time {@code t >= now} at which {@code tenant}'s usage is at most {@code target},
     * assuming it is not busy again in between.
     */
    public long timeUsageAtMost(String tenant, long target, long now) {
        Validate.atLeast("usageWindow.target", target, 0);
        long usage = usageNanos(tenant, now);
        if (usage <= target) {
            return now;
        }
        return tenants.get(tenant).timeExpired(usage - target, now - window) + window;
    }

    /**
     * The end of the oldest interval still in the window, over all tenants, or {@link Long#MAX_VALUE}
     * if there is none. It leaves the window at {@code oldestEnd + window}.
     */
    public long oldestEnd(long now) {
        advance(now);
        long from = now - window;
        long oldest = Long.MAX_VALUE;
        for (Intervals iv : tenants.values()) {
            iv.evict(from);
            if (iv.size > 0) {
                oldest = Math.min(oldest, iv.firstEnd());
            }
        }
        return oldest;
    }

    private void advance(long now) {
        if (now < lastNow) {
            throw new InvalidValueException("usageWindow.now", now, "must not go backwards (last was " + lastNow + ")");
        }
        lastNow = now;
    }

    /** A ring buffer of one tenant's intervals, oldest first, with the sum of their lengths. */
    private static final class Intervals {
        private long[] starts = new long[8];
        private long[] ends = new long[8];
        private int head;
        private int size;
        private long sum;

        void add(long start, long end) {
            if (size == starts.length) {
                grow();
            }
            int i = idx(size);
            starts[i] = start;
            ends[i] = end;
            size++;
            sum += end - start;
        }

        long lastEnd() {
            return ends[idx(size - 1)];
        }

        long firstEnd() {
            return ends[head];
        }

        void evict(long from) {
            while (size > 0 && ends[head] <= from) {
                sum -= ends[head] - starts[head];
                head = (head + 1) % starts.length;
                size--;
            }
        }

        long usageSince(long from, long now) {
            long u = sum;
            if (size > 0 && starts[head] < from) {
                u -= from - starts[head];
            }
            if (size > 0 && lastEnd() > now) {
                // an interval recorded ahead of now counts only up to now
                for (int k = size - 1; k >= 0; k--) {
                    int i = idx(k);
                    if (ends[i] <= now) {
                        break;
                    }
                    u -= ends[i] - Math.max(now, Math.max(starts[i], from));
                }
            }
            return u;
        }

        /** The window start at which {@code need} nanoseconds of this tenant's usage have left the window. */
        long timeExpired(long need, long from) {
            for (int k = 0; k < size; k++) {
                int i = idx(k);
                long s = Math.max(starts[i], from);
                long len = ends[i] - s;
                if (len >= need) {
                    return s + need;
                }
                need -= len;
            }
            throw new IllegalStateException("usage to expire exceeds recorded usage");
        }

        private int idx(int k) {
            return (head + k) % starts.length;
        }

        private void grow() {
            long[] ns = new long[starts.length * 2];
            long[] ne = new long[starts.length * 2];
            for (int k = 0; k < size; k++) {
                ns[k] = starts[idx(k)];
                ne[k] = ends[idx(k)];
            }
            starts = ns;
            ends = ne;
            head = 0;
        }

        @Override
        public String toString() {
            return "Intervals" + Arrays.toString(Arrays.copyOf(starts, size));
        }
    }
}
