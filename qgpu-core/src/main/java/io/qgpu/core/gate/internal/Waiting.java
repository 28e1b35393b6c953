package io.qgpu.core.gate.internal;

import io.qgpu.core.gate.GateClosedException;
import io.qgpu.core.gate.GateEvent;
import io.qgpu.core.gate.GateTimeoutException;
import io.qgpu.core.internal.DurationChecks;
import io.qgpu.core.internal.Saturating;
import java.time.Duration;
import java.util.Iterator;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * Acquires and their waiting: the lock-free fast path under a tenant's permit, blocking acquires
 * with timeouts and interrupts, {@code tryAcquire}, async acquires with timeouts and cancellation,
 * and handing grants to waiters when the engines allow (a waiter that gives up leaves nothing
 * behind).
 *
 * <p>Thread safety: thread-safe; the fast path is lock-free, the rest runs under the gate's lock.
 */
public final class Waiting {

    private static final long NONE = GateCore.NONE;

    private final GateCore core;

    Waiting(GateCore core) {
        this.core = core;
    }

    /** See {@code Gate.acquire(Tenant)}. */
    public LeaseImpl acquire(TenantState tenant) throws InterruptedException {
        TenantState t = core.own(tenant);
        long now = core.ticker.read();
        long entry = t.enter(now, true);
        if (entry != TenantState.REFUSED) {
            return granted(t, now, entry);
        }
        return acquireSlow(t, now, NONE, null);
    }

    /** See {@code Gate.acquire(Tenant, Duration)}. */
    public LeaseImpl acquire(TenantState tenant, Duration timeout) throws InterruptedException {
        TenantState t = core.own(tenant);
        long limit = DurationChecks.waitLimitNanos("gate.acquire.timeout", timeout);
        long now = core.ticker.read();
        long entry = t.enter(now, true);
        if (entry != TenantState.REFUSED) {
            return granted(t, now, entry);
        }
        return acquireSlow(t, now, Saturating.add(now, limit), timeout);
    }

    /** See {@code Gate.tryAcquire}. */
    public Optional<LeaseImpl> tryAcquire(TenantState tenant) {
        TenantState t = core.own(tenant);
        long now = core.ticker.read();
        long entry = t.enter(now, true);
        if (entry != TenantState.REFUSED) {
            return Optional.of(granted(t, now, entry));
        }
        core.lock.lock();
        try {
            core.known(t); // also fails if the gate closed meanwhile
            now = core.nowLocked();
            core.engines.pump(now);
            if (!t.tryEnter(now) && !enterAsProbe(t, now)) {
                return Optional.empty();
            }
            LeaseImpl l = LeaseImpl.forOwner(t, t.holder(), now, TenantState.JOINED);
            if (core.events.hasListeners()) {
                core.events.later(new GateEvent.LeaseGranted(core.gpu, t.name, now, 0));
            }
            return Optional.of(l);
        } finally {
            core.events.unlockAndDispatch();
        }
    }

    /**
     * Under the lock: if the tenant's quota allows and submitting would run at once, submits a
     * waiter for the moment of one pump and enters with the permit it gets; withdraws it either way.
     */
    private boolean enterAsProbe(TenantState t, long now) {
        if (!core.quota.quotaOk(t, now) || !core.engines.wouldRunAtOnce(t, now)) {
            return false;
        }
        Waiter probe = new Waiter(null, now);
        t.waiters.add(probe);
        core.addWaiters(1);
        try {
            core.engines.pump(now);
            return t.tryEnter(now);
        } finally {
            t.waiters.remove(probe);
            core.addWaiters(-1);
            core.engines.pump(now);
        }
    }

    /** See {@code Gate.acquireAsync(Tenant, Duration)}. */
    public CompletableFuture<LeaseImpl> acquireAsync(TenantState tenant, Duration timeout) {
        TenantState t = core.own(tenant);
        long limit = timeout == null ? NONE : DurationChecks.waitLimitNanos("gate.acquire.timeout", timeout);
        CompletableFuture<LeaseImpl> f = new CompletableFuture<>();
        long now = core.ticker.read();
        if (t.tryEnter(now)) {
            LeaseImpl l = LeaseImpl.unowned(t, now);
            if (core.events.hasListeners()) {
                core.events.fire(new GateEvent.LeaseGranted(core.gpu, t.name, now, 0));
            }
            f.complete(l);
            return f;
        }
        Waiter w = new Waiter(f, now);
        core.lock.lock();
        try {
            if (core.closed) {
                f.completeExceptionally(new GateClosedException(core.gpu));
                return f;
            }
            core.known(t);
            now = core.nowLocked();
            core.owners.maybeReclaim(now);
            t.waiters.add(w);
            core.addWaiters(1);
            if (limit != NONE) {
                long deadline = Saturating.add(w.startedAt, limit);
                w.timeoutTask = core.timer.schedule(deadline, () -> asyncTimeout(t, w, timeout));
            }
            core.engines.pump(now);
        } finally {
            core.events.unlockAndDispatch();
        }
        // the cleanup runs when the caller cancels or the future fails; the future whenComplete returns
        // is not kept: it would only carry an exception thrown by the cleanup itself, and nothing waits on it
        CompletableFuture<LeaseImpl> unused = f.whenComplete((lease, ex) -> {
            if (ex != null) {
                abandonAsync(t, w);
            }
        });
        return f;
    }

    private LeaseImpl granted(TenantState t, long now, long entry) {
        LeaseImpl l = LeaseImpl.forOwner(t, t.holder(), now, entry);
        if (core.events.hasListeners()) {
            core.events.fire(new GateEvent.LeaseGranted(core.gpu, t.name, now, 0));
        }
        return l;
    }

    private LeaseImpl acquireSlow(TenantState t, long startedAt, long deadline, Duration timeout) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        Holder h = t.holder();
        core.lock.lock();
        Waiter w = null;
        LeaseImpl lease = null;
        GateEvent.Abandon abandon = null;
        long now = startedAt;
        try {
            core.known(t);
            core.owners.maybeReclaim(core.nowLocked());
            while (true) {
                if (core.closed) {
                    abandon = GateEvent.Abandon.CLOSED;
                    throw new GateClosedException(core.gpu);
                }
                now = core.nowLocked();
                if (w == null) {
                    core.engines.pump(now);
                }
                boolean late = deadline != NONE && (now >= deadline || (w != null && w.timedOut));
                // out of time (a zero timeout, or the timeout passed): a last try as tryAcquire's, no preemption asked
                if (t.tryEnter(now) || (late && enterAsProbe(t, now))) {
                    lease = LeaseImpl.forOwner(t, h, now, TenantState.JOINED);
                    break;
                }
                if (late) {
                    abandon = GateEvent.Abandon.TIMEOUT;
                    throw new GateTimeoutException(core.gpu, t.name, timeout);
                }
                if (w == null) {
                    w = new Waiter(null, startedAt);
                    t.waiters.add(w);
                    core.addWaiters(1);
                    if (deadline != NONE) {
                        Waiter fw = w;
                        w.timeoutTask = core.timer.schedule(deadline, () -> syncTimeout(t, fw));
                    }
                    core.engines.pump(now);
                    continue;
                }
                if (core.events.flushBeforeWait()) {
                    continue;
                }
                try {
                    t.cond.await();
                } catch (InterruptedException e) {
                    abandon = GateEvent.Abandon.INTERRUPTED;
                    throw e;
                }
            }
        } finally {
            if (w != null) {
                t.waiters.remove(w);
                core.addWaiters(-1);
                if (w.timeoutTask != null) {
                    w.timeoutTask.cancel();
                }
                core.pumpIfLive(t, core.nowLocked());
            }
            if (core.events.hasListeners()) {
                if (lease != null) {
                    core.events.later(new GateEvent.LeaseGranted(core.gpu, t.name, now, now - startedAt));
                } else if (abandon != null) {
                    core.events.later(new GateEvent.AcquireAbandoned(core.gpu, t.name, now, now - startedAt, abandon));
                }
            }
            core.events.unlockAndDispatch();
        }
        return lease;
    }

    private void syncTimeout(TenantState t, Waiter w) {
        core.lock.lock();
        try {
            w.timedOut = true;
            t.cond.signalAll();
        } finally {
            core.lock.unlock();
        }
    }

    private void asyncTimeout(TenantState t, Waiter w, Duration timeout) {
        core.lock.lock();
        try {
            if (withdraw(t, w, GateEvent.Abandon.TIMEOUT)) {
                w.timedOut = true;
                core.events.fail(w, new GateTimeoutException(core.gpu, t.name, timeout));
            }
        } finally {
            core.events.unlockAndDispatch();
        }
    }

    private void abandonAsync(TenantState t, Waiter w) {
        core.lock.lock();
        try {
            withdraw(t, w, GateEvent.Abandon.CANCELLED);
        } finally {
            core.events.unlockAndDispatch();
        }
    }

    /** Under the lock: takes an async waiter out of the queue, if it is still there. */
    private boolean withdraw(TenantState t, Waiter w, GateEvent.Abandon reason) {
        if (!t.waiters.remove(w)) {
            return false;
        }
        core.addWaiters(-1);
        if (w.timeoutTask != null) {
            w.timeoutTask.cancel();
        }
        long now = core.nowLocked();
        if (core.events.hasListeners()) {
            core.events.later(new GateEvent.AcquireAbandoned(core.gpu, t.name, now, now - w.startedAt, reason));
        }
        core.pumpIfLive(t, now);
        return true;
    }

    /** Under the lock, after the permits were set: grants async waiters and resumes parked leases. */
    void wakeWaiters(long now) {
        for (TenantState t : core.tenants.values()) {
            if (now >= t.permitUntil || !t.hasWork()) {
                continue;
            }
            for (Iterator<Waiter> it = t.waiters.iterator(); it.hasNext(); ) {
                Waiter w = it.next();
                if (!w.isAsync()) {
                    continue;
                }
                if (!t.tryEnter(now)) {
                    break;
                }
                it.remove();
                core.addWaiters(-1);
                if (w.timeoutTask != null) {
                    w.timeoutTask.cancel();
                }
                core.events.grant(w, LeaseImpl.unowned(t, now));
                if (core.events.hasListeners()) {
                    core.events.later(new GateEvent.LeaseGranted(core.gpu, t.name, now, now - w.startedAt));
                }
            }
            core.checkpoints.resumeWaiting(t, now);
            t.cond.signalAll(); // blocked acquires and checkpoints re-check; with none, a read of the queue
        }
    }
}
