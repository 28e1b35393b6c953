package io.qgpu.core.gate.internal;

import io.qgpu.core.gate.GateConfig;
import io.qgpu.core.gate.GateEvent;
import io.qgpu.core.gate.GateStateException;
import io.qgpu.core.gate.GateTimer;
import io.qgpu.core.internal.Saturating;
import java.util.Iterator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Owner tracking and dead-owner reclaim: each thread that acquires a tenant's lease gets a
 * {@link Holder} (through the tenant's thread-local); a pass finds holders whose thread died with
 * leases open, notes the time, and a pass at least {@link GateConfig#deadOwnerTimeoutNanos()} later
 * closes those leases (their objects become void: their epoch no longer matches), fails the
 * futures of their pending async checkpoints and wakes the threads blocked in checkpoints of them
 * (which then fail). Passes run on the gate's timer, from acquires that
 * wait (at most once per reclaim interval), and on request.
 *
 * <p>Thread safety: thread-safe ({@link #newHolder} takes the gate's lock; the rest runs under it).
 */
public final class Owners {

    private static final Logger LOG = LoggerFactory.getLogger(Owners.class);

    private final GateCore core;
    private long lastReclaimAt;
    private GateTimer.Task reclaimTask;

    Owners(GateCore core, long now) {
        this.core = core;
        this.lastReclaimAt = now;
    }

    /** A holder for the calling thread's leases of {@code t}. */
    Holder newHolder(TenantState t) {
        Holder h = new Holder(Thread.currentThread());
        core.lock.lock();
        try {
            t.holderList.add(h);
        } finally {
            core.lock.unlock();
        }
        return h;
    }

    void scheduleReclaim(long now) {
        if (!core.closed) {
            reclaimTask = core.timer.schedule(Saturating.add(now, reclaimInterval()), this::reclaimTick);
        }
    }

    private void reclaimTick() {
        core.lock.lock();
        try {
            if (core.closed) {
                return;
            }
            long now = core.nowLocked();
            reclaimLocked(now);
            scheduleReclaim(now);
        } finally {
            core.events.unlockAndDispatch();
        }
    }

    /** A reclaim pass now; see {@code Gate.reclaimDeadOwners()}. */
    public int reclaimDeadOwners() {
        core.lock.lock();
        try {
            return core.closed ? 0 : reclaimLocked(core.nowLocked());
        } finally {
            core.events.unlockAndDispatch();
        }
    }

    /** A reclaim pass from an acquire that waits, at most once per reclaim interval. Under the lock. */
    void maybeReclaim(long now) {
        if (now - lastReclaimAt >= reclaimInterval()) {
            reclaimLocked(now);
        }
    }

    private long reclaimInterval() {
        return Math.max(1_000_000L, core.config.deadOwnerTimeoutNanos() / 2);
    }

    private int reclaimLocked(long now) {
        lastReclaimAt = now;
        int reclaimed = 0;
        for (TenantState t : core.tenants.values()) {
            for (Iterator<Holder> it = t.holderList.iterator(); it.hasNext(); ) {
                Holder h = it.next();
                if (h.thread.isAlive()) {
                    continue;
                }
                int open = h.open - h.foreignClosed;
                if (open > 0) {
                    if (h.deadSince == Long.MIN_VALUE) {
                        h.deadSince = now;
                    }
                    if (now - h.deadSince < core.config.deadOwnerTimeoutNanos()) {
                        continue;
                    }
                    reclaim(t, h, open, now);
                    reclaimed += open;
                }
                it.remove(); // a dead thread's holder with nothing (left) open
            }
        }
        if (reclaimed > 0) {
            core.engines.pump(now);
        }
        return reclaimed;
    }

    /** Closes the {@code open} leases of dead holder {@code h} and fails the futures they strand. */
    private void reclaim(TenantState t, Holder h, int open, long now) {
        int parked = h.parked;
        int running = open - parked;
        h.newEpoch();
        for (Iterator<Waiter> rs = t.resumers.iterator(); rs.hasNext(); ) {
            Waiter r = rs.next();
            if (r.resume.holder == h) {
                rs.remove();
                r.resume.casState(LeaseImpl.PARKED, LeaseImpl.CLOSED);
                core.events.fail(r, new GateStateException(core.gpu, t.name,
                        "lease was reclaimed after its owner thread died"));
            }
        }
        for (int i = 0; i < running; i++) {
            t.leaveOne(now);
        }
        t.parked -= parked;
        core.addWaiters(-parked);
        t.cond.signalAll(); // another thread blocked in a checkpoint of one of these leases wakes and fails
        h.open = 0;
        h.foreignClosed = 0;
        h.parked = 0;
        LOG.warn("gate {}: reclaimed {} lease(s) of tenant {} whose thread {} died", core.gpu, open, t.name,
                h.thread.getName());
        if (core.events.hasListeners()) {
            core.events.later(new GateEvent.LeaseReclaimed(core.gpu, t.name, now, h.thread.getName(), open));
        }
    }

    void cancelTimer() {
        if (reclaimTask != null) {
            reclaimTask.cancel();
        }
    }
}
