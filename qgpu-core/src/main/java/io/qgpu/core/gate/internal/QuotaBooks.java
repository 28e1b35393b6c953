package io.qgpu.core.gate.internal;

import io.qgpu.core.gate.GateEvent;
import io.qgpu.core.gate.GateTimer;
import io.qgpu.core.gate.TenantUsage;
import io.qgpu.core.internal.Saturating;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A gate's quota books: each tenant's limit against its lease time in the sliding window (kept by
 * the tenant, {@link TenantState#usage}), the correction factor from the driver's per-process samples
 * ({@link UsageCorrection}), and the periodic usage reports. Answers until when a tenant may run and
 * whether it may start from idle.
 *
 * <p>Thread safety: not thread-safe; guarded by the gate's lock.
 */
public final class QuotaBooks {

    private static final Logger LOG = LoggerFactory.getLogger(QuotaBooks.class);
    private static final long NONE = GateCore.NONE;

    private final GateCore core;
    private final UsageCorrection correction;
    private double factor = 1.0;
    private GateTimer.Task reportTask;

    QuotaBooks(GateCore core) {
        this.core = core;
        long every = Math.max(1, core.config.usageReportIntervalNanos());
        this.correction = core.config.usageSource()
                .map(source -> new UsageCorrection(source, core.gpu, core.config.pid(), core.windowNanos, every))
                .orElse(null);
    }

    /** The current correction factor (1 without a usage source). */
    public double factor() {
        core.lock.lock();
        try {
            return factor;
        } finally {
            core.lock.unlock();
        }
    }

    /** The limit in lease-time units after correction. */
    private long effectiveLimit(TenantState t) {
        if (factor == 1.0) {
            return t.limitNanos;
        }
        return Math.min((long) (t.limitNanos / factor), core.windowNanos);
    }

    /** Until when {@code t} may run without passing its limit, if it runs from now on. */
    long okUntil(TenantState t, long now) {
        long eff = effectiveLimit(t);
        if (eff >= core.windowNanos) {
            return NONE;
        }
        long headroom = Math.max(0, eff - t.usage(now));
        if (t.running() == 0 && headroom < Math.min(core.config.minSliceNanos(), eff)) {
            headroom = 0; // idle and too little left: wait for a whole slice
        }
        return Saturating.add(now, headroom);
    }

    /**
     * Whether {@code t} may start from idle now (its headroom is at least a minimum slice); if not and
     * it is idle, sets when it may.
     */
    boolean quotaOk(TenantState t, long now) {
        long eff = effectiveLimit(t);
        if (eff >= core.windowNanos) {
            t.quotaWakeAt = NONE;
            t.quotaReported = false;
            return true;
        }
        long need = Math.min(core.config.minSliceNanos(), eff);
        long usage = t.usage(now);
        if (eff - usage >= need) {
            t.quotaWakeAt = NONE;
            t.quotaReported = false;
            return true;
        }
        t.quotaWakeAt = t.running() == 0 ? t.timeUsageAtMost(eff - need, now) : NONE;
        if (!t.quotaReported && core.events.hasListeners()) {
            core.events.later(new GateEvent.QuotaExhausted(core.gpu, t.name, now, usage, eff, t.quotaWakeAt));
        }
        t.quotaReported = true;
        return false;
    }

    TenantUsage usageOf(TenantState t, long now) {
        long u = t.usage(now);
        long total = t.totalNanos(now);
        return new TenantUsage(t.name, u, Math.round(u * factor), factor, t.limitNanos, core.windowNanos,
                t.running(), t.parked, total);
    }

    void scheduleReport(long now) {
        long every = core.config.usageReportIntervalNanos();
        if (every > 0 && !core.closed) {
            reportTask = core.timer.schedule(Saturating.add(now, every), this::report);
        }
    }

    private void report() {
        core.lock.lock();
        try {
            if (core.closed) {
                return;
            }
            long now = core.nowLocked();
            if (correction == null && !core.events.hasListeners()) {
                scheduleReport(now);
                return;
            }
            if (correction != null) {
                long total = 0;
                for (TenantState t : core.tenants.values()) {
                    total += t.totalNanos(now);
                }
                try {
                    factor = correction.update(total, core.config.usageReportIntervalNanos());
                } catch (RuntimeException e) {
                    LOG.warn("gate {}: usage source failed, correction factor stays {}", core.gpu, factor, e);
                }
            }
            if (core.events.hasListeners()) {
                for (TenantState t : core.tenants.values()) {
                    long u = t.usage(now);
                    core.events.later(new GateEvent.UsageReport(core.gpu, t.name, now, u, Math.round(u * factor),
                            core.windowNanos, factor));
                }
            }
            core.engines.pump(now);
            scheduleReport(now);
        } finally {
            core.events.unlockAndDispatch();
        }
    }

    void cancelTimer() {
        if (reportTask != null) {
            reportTask.cancel();
        }
    }
}
