package io.qgpu.core.compute;

import io.qgpu.core.internal.DurationChecks;
import io.qgpu.core.internal.SlidingWindow;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Validate;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
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
 * <p>Each tenant's intervals are kept in an exact {@code SlidingWindow}, the
 * same window implementation the runtime gate keeps per tenant in its bounded form.
 *
 * <p>Thread safety: not thread-safe; confine an instance to one thread or guard it with a lock.
 */
public final class UsageWindow {

    private final long window;
    private final Map<String, SlidingWindow> tenants = new LinkedHashMap<>();
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
        SlidingWindow w = tenants.computeIfAbsent(tenant, k -> SlidingWindow.exact(window));
        if (start < w.lastEnd()) {
            throw new InvalidValueException("usageWindow.record[" + tenant + "].start", start,
                    "must not be before the end of the tenant's previous interval (" + w.lastEnd() + ")");
        }
        w.record(start, end);
    }

    /** Forgets a tenant's records. */
    public void remove(String tenant) {
        tenants.remove(tenant);
    }

    /** Busy time of {@code tenant} in {@code (now - window, now]}. */
    public long usageNanos(String tenant, long now) {
        advance(now);
        SlidingWindow w = tenants.get(tenant);
        return w == null ? 0 : w.usage(now);
    }

    /**
     * The part of {@code tenant}'s usage at {@code now} that is still in the window at
     * {@code now + ahead}: its busy time in {@code (now + ahead - window, now]} (what its usage will
     * be then if it is not busy in between). Like {@link #usageNanos}, it evicts only what has left
     * the window at {@code now}.
     */
    public long usageStillInWindowNanos(String tenant, long now, long ahead) {
        Validate.atLeast("usageWindow.ahead", ahead, 0);
        long usage = usageNanos(tenant, now);
        if (usage == 0 || ahead == 0) {
            return usage;
        }
        // usage > 0: the tenant has a window
        return usage - Objects.requireNonNull(tenants.get(tenant)).busyBetween(now - window, Math.min(now, now + ahead - window));
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
        return Objects.requireNonNull(tenants.get(tenant)).timeUsageAtMost(target, now); // usage > target >= 0
    }

    /**
     * The end of the oldest interval still in the window, over all tenants, or {@link Long#MAX_VALUE}
     * if there is none. It leaves the window at {@code oldestEnd + window}.
     */
    public long oldestEnd(long now) {
        advance(now);
        long oldest = Long.MAX_VALUE;
        for (SlidingWindow w : tenants.values()) {
            oldest = Math.min(oldest, w.oldestEnd(now));
        }
        return oldest;
    }

    private void advance(long now) {
        if (now < lastNow) {
            throw new InvalidValueException("usageWindow.now", now, "must not go backwards (last was " + lastNow + ")");
        }
        lastNow = now;
    }
}
