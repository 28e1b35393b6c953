package io.qgpu.core.gate.internal;

import io.qgpu.core.gate.GateEvent;
import io.qgpu.core.gate.GateStateException;
import java.util.Iterator;
import java.util.concurrent.CompletableFuture;

/**
 * The life of a lease after its acquire: closing (the fast path of the owner thread, and the slow
 * path of a parked lease or another thread), checkpoints that park a lease whose permit ran out and
 * resume it when the engines allow, blocking or async, and the withdrawal of an async checkpoint
 * whose future was cancelled.
 *
 * <p>Thread safety: thread-safe; {@link #leave} is lock-free, the rest runs under the gate's lock.
 */
public final class Checkpoints {

    private final GateCore core;

    Checkpoints(GateCore core) {
        this.core = core;
    }

    /** A running lease closed (fast path of {@link LeaseImpl#close()}). */
    void leave(TenantState t, long acquiredAt) {
        long now = core.ticker.read();
        left(t, t.leaveOne(now), now, acquiredAt);
    }

    /** After a running lease left the tenant's count lock-free at {@code now}: wakes the engines if it went idle, tells listeners. */
    void left(TenantState t, boolean idle, long now, long acquiredAt) {
        if (idle && (core.eagerIdle || core.waiters != 0)) {
            onIdle();
        }
        if (core.events.hasListeners()) {
            core.events.fire(new GateEvent.LeaseReleased(core.gpu, t.name, now, now - acquiredAt));
        }
    }

    /** A tenant went idle while someone waits: let the engines know now. */
    private void onIdle() {
        core.lock.lock();
        try {
            if (!core.closed) {
                core.engines.pump(core.nowLocked());
            }
        } finally {
            core.events.unlockAndDispatch();
        }
    }

    /** Close of a parked lease, or by a thread other than the owner. */
    void closeSlow(LeaseImpl l) {
        TenantState t = l.tenant;
        Holder h = l.holder;
        core.lock.lock();
        try {
            long now = core.nowLocked();
            if (h != null && l.epoch != h.epoch) {
                l.voidReclaimed(); // reclaimed already
                return;
            }
            if (l.casState(LeaseImpl.PARKED, LeaseImpl.CLOSED)) {
                t.parked--;
                core.addWaiters(-1);
                for (Iterator<Waiter> it = t.resumers.iterator(); it.hasNext(); ) {
                    Waiter r = it.next();
                    if (r.resume == l) {
                        it.remove();
                        core.events.fail(r, new GateStateException(core.gpu, t.name,
                                "lease was closed while waiting to resume"));
                    }
                }
                if (h != null) {
                    h.parked--;
                }
                t.cond.signalAll(); // a thread blocked in this lease's checkpoint() wakes and fails
            } else if (l.stopRunning(LeaseImpl.CLOSED)) {
                t.leaveOne(now);
            } else {
                return; // closed already (by its owner, possibly this instant)
            }
            if (h != null) {
                h.foreignClosed++; // under the lock, whoever closes: the owner's plain count stays its own
            }
            if (core.events.hasListeners()) {
                core.events.later(new GateEvent.LeaseReleased(core.gpu, t.name, now, now - l.acquiredAt));
            }
            core.pumpIfLive(t, now);
        } finally {
            core.events.unlockAndDispatch();
        }
    }

    void checkpointSlow(LeaseImpl l) throws InterruptedException {
        TenantState t = l.tenant;
        core.lock.lock();
        try {
            if (!parkIfNeeded(l)) {
                return;
            }
            while (true) {
                core.checkOpen();
                checkNotReclaimed(l);
                long now = core.nowLocked();
                if (tryResume(l, now)) {
                    core.engines.pump(now);
                    return;
                }
                if (!core.events.flushBeforeWait()) {
                    t.cond.await();
                }
            }
        } finally {
            core.events.unlockAndDispatch();
        }
    }

    CompletableFuture<LeaseImpl> checkpointAsyncSlow(LeaseImpl l) {
        TenantState t = l.tenant;
        core.lock.lock();
        try {
            if (!parkIfNeeded(l)) {
                return CompletableFuture.completedFuture(l);
            }
            for (Waiter r : t.resumers) {
                if (r.resume == l) {
                    throw new GateStateException(core.gpu, t.name, "lease is already waiting to resume");
                }
            }
            long now = core.nowLocked();
            CompletableFuture<LeaseImpl> f = new CompletableFuture<>();
            if (tryResume(l, now)) {
                core.engines.pump(now);
                f.complete(l);
                return f;
            }
            Waiter r = new Waiter(f, now, l);
            t.resumers.add(r);
            core.engines.pump(now);
            // the cleanup runs when the caller cancels or the future fails; the future whenComplete returns
            // is not kept: it would only carry an exception thrown by the cleanup itself, and nothing waits on it
            CompletableFuture<LeaseImpl> unused = f.whenComplete((lease, ex) -> {
                if (ex != null) {
                    withdrawResume(r);
                }
            });
            return f;
        } finally {
            core.events.unlockAndDispatch();
        }
    }

    /**
     * The future of an async checkpoint completed otherwise than by the gate (cancelled): the request
     * to resume is withdrawn and the lease stays parked. If the gate had resumed it meanwhile, it is
     * parked again, so a cancelled checkpoint never leaves a running lease that nobody was told about.
     */
    private void withdrawResume(Waiter r) {
        LeaseImpl l = r.resume;
        TenantState t = l.tenant;
        core.lock.lock();
        try {
            t.resumers.remove(r);
            if (l.state() == LeaseImpl.RUNNING && !core.closed && (l.holder == null || l.epoch == l.holder.epoch)) {
                park(l, core.nowLocked(), GateEvent.SuspendReason.CHECKPOINT_CANCELLED);
            }
            core.pumpIfLive(t, core.nowLocked());
        } finally {
            core.events.unlockAndDispatch();
        }
    }

    /**
     * Under the lock: lets a running lease go on if the tenant may (after bringing the engines up to
     * date), else parks it. A parked lease stays parked.
     *
     * @return whether the lease is parked now
     */
    private boolean parkIfNeeded(LeaseImpl l) {
        TenantState t = l.tenant;
        if (l.state() == LeaseImpl.CLOSED) {
            throw new GateStateException(core.gpu, t.name, "lease is closed");
        }
        core.checkOpen();
        checkNotReclaimed(l);
        long now = core.nowLocked();
        int state = l.state(); // read once: its owner may close a running lease at any moment, lock or not
        if (state == LeaseImpl.CLOSED) {
            throw new GateStateException(core.gpu, t.name, "lease is closed");
        }
        if (state == LeaseImpl.RUNNING) {
            core.engines.pump(now);
            if (now < t.permitUntil) {
                return false;
            }
            if (!park(l, now, core.engines.suspendReason(t))) {
                // its owner closed it this instant, on another thread
                throw new GateStateException(core.gpu, t.name, "lease is closed");
            }
            core.engines.pump(now);
        }
        return true;
    }

    /**
     * Under the lock: a running lease stops (its time no longer counts) and waits to resume.
     *
     * @return false if it was not running (closed meanwhile by its owner)
     */
    private boolean park(LeaseImpl l, long now, GateEvent.SuspendReason reason) {
        TenantState t = l.tenant;
        if (!l.stopRunning(LeaseImpl.PARKED)) {
            return false;
        }
        l.parkedAt = now;
        t.parked++;
        if (l.holder != null) {
            l.holder.parked++;
        }
        core.addWaiters(1);
        t.leaveOne(now);
        if (core.events.hasListeners()) {
            core.events.later(new GateEvent.Suspended(core.gpu, t.name, now, reason));
        }
        return true;
    }

    /**
     * Under the lock: a parked lease runs again if the tenant's permit allows it.
     *
     * @throws GateStateException if the lease is no longer parked (another thread closed it while it
     *                            waited; a parked lease changes only under the lock)
     */
    private boolean tryResume(LeaseImpl l, long now) {
        TenantState t = l.tenant;
        if (l.state() != LeaseImpl.PARKED) {
            throw new GateStateException(core.gpu, t.name, "lease is closed");
        }
        if (!t.tryEnter(now)) {
            return false;
        }
        l.casState(LeaseImpl.PARKED, LeaseImpl.RUNNING); // cannot fail: parked, under the lock
        t.parked--;
        if (l.holder != null) {
            l.holder.parked--;
        }
        core.addWaiters(-1);
        if (core.events.hasListeners()) {
            core.events.later(new GateEvent.Resumed(core.gpu, t.name, now, now - l.parkedAt));
        }
        return true;
    }

    /** Under the lock: resumes the tenant's leases that wait asynchronously, in order, while its permit allows. */
    void resumeWaiting(TenantState t, long now) {
        for (Iterator<Waiter> it = t.resumers.iterator(); it.hasNext(); ) {
            Waiter r = it.next();
            if (r.resume.state() != LeaseImpl.PARKED) {
                it.remove(); // closed meanwhile
                continue;
            }
            if (!tryResume(r.resume, now)) {
                break;
            }
            it.remove();
            core.events.grant(r, r.resume);
        }
    }

    private void checkNotReclaimed(LeaseImpl l) {
        if (l.holder != null && l.epoch != l.holder.epoch) {
            l.voidReclaimed();
            throw new GateStateException(core.gpu, l.tenant.name, "lease was reclaimed after its owner thread died");
        }
    }
}
