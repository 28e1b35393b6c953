package io.qgpu.core.gate.internal;

import io.qgpu.api.Ticker;
import io.qgpu.api.Validate;
import io.qgpu.core.compute.ComputeEngine;
import io.qgpu.core.compute.Share;
import io.qgpu.core.gate.GateClosedException;
import io.qgpu.core.gate.GateConfig;
import io.qgpu.core.gate.GateStateException;
import io.qgpu.core.gate.GateTenantSpec;
import io.qgpu.core.gate.GateTimer;
import io.qgpu.core.gate.TenantUsage;
import io.qgpu.core.preempt.PreemptionState;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;
import org.jspecify.annotations.Nullable;

/**
 * The state of one gate that all its parts share (the lock, the tenants, the closed flag, the count
 * of waiters) and the gate's lifecycle: registering and removing tenants, snapshots, closing. The
 * parts, one job each: {@link Waiting} (acquires, timeouts, handing out grants),
 * {@link Checkpoints} (closing, parking and resuming leases), {@link EngineBridge} (feeding the
 * preemption machine and the token scheduler and acting on their decisions), {@link QuotaBooks}
 * (limits, usage and its correction), {@link Owners} (owner threads and dead-owner reclaim) and
 * {@link EventDispatch} (listeners and everything handed out after the lock is released).
 *
 * <p>Thread safety: thread-safe; state marked "under the lock" is guarded by {@link #lock}.
 */
public final class GateCore {

    static final long NONE = Long.MAX_VALUE;

    final String gpu;
    final GateConfig config;
    final Ticker ticker;
    final ReentrantLock lock = new ReentrantLock();
    final GateTimer timer;
    private final boolean ownsTimer;
    final long windowNanos;
    /** Makes the public handles of this gate's tenants and leases. */
    final Handles handles;

    /**
     * Blocked acquires plus parked leases. Written under the lock, only through {@link #addWaiters};
     * volatile for the lock-free readers (a closing lease reads it to decide whether to take the lock).
     */
    volatile int waiters;
    /**
     * Whether a tenant going idle must be reported at once (someone waits, or an offline tenant is
     * held off); else the closing thread leaves it for the next time the lock is taken. Written under
     * the lock.
     */
    volatile boolean eagerIdle;
    volatile boolean closed;

    // ---- under the lock ----
    final Map<String, TenantState> tenants = new LinkedHashMap<>();
    private long lastNow;

    final EventDispatch events;
    final EngineBridge engines;
    final QuotaBooks quota;
    final Owners owners;
    final Waiting waiting;
    final Checkpoints checkpoints;

    /**
     * A gate's core: its timer is the one its config names, else {@code sharedTimer} (not shut down by
     * this gate), else a timer thread of its own ({@link GateTimer#system}, shut down by
     * {@link #close()}); {@code handles} makes the public handles of its tenants and leases.
     */
    public GateCore(Handles handles, String gpu, GateConfig config, @Nullable GateTimer sharedTimer) {
        this.handles = handles;
        this.gpu = Validate.notBlank("gate.gpu", gpu);
        this.config = Validate.notNull("gate.config", config);
        this.ticker = config.ticker();
        GateTimer own = config.timer().orElse(sharedTimer);
        this.ownsTimer = own == null;
        this.timer = ownsTimer ? GateTimer.system(ticker) : own;
        this.windowNanos = config.windowNanos();
        long now = ticker.read();
        this.lastNow = now;
        this.events = new EventDispatch(this);
        this.quota = new QuotaBooks(this);
        this.engines = new EngineBridge(this, now);
        this.owners = new Owners(this, now);
        this.waiting = new Waiting(this);
        this.checkpoints = new Checkpoints(this);
        lock.lock();
        try {
            owners.scheduleReclaim(now);
            quota.scheduleReport(now);
        } finally {
            lock.unlock();
        }
    }

    public String gpu() {
        return gpu;
    }

    public GateConfig config() {
        return config;
    }

    public Waiting waiting() {
        return waiting;
    }

    public QuotaBooks quota() {
        return quota;
    }

    public Owners owners() {
        return owners;
    }

    public EventDispatch events() {
        return events;
    }

    public EngineBridge engines() {
        return engines;
    }

    // ------------------------------------------------------------------------------------------
    // tenants

    /** See {@code Gate.register}. */
    public TenantState register(GateTenantSpec spec) {
        Validate.notNull("gate.register.spec", spec);
        Share share = ComputeEngine.shareFor(config.policy(), spec.requestPercent(), spec.limitPercent());
        long limit = Math.max(1, Math.round(share.limit() * windowNanos));
        lock.lock();
        try {
            checkOpen();
            if (tenants.containsKey(spec.name())) {
                throw new GateStateException(gpu, spec.name(), "is already registered");
            }
            TenantState t = handles.tenant(this, spec, limit);
            long now = nowLocked();
            engines.register(t, share, now);
            tenants.put(t.name, t);
            engines.pump(now);
            return t;
        } finally {
            events.unlockAndDispatch();
        }
    }

    /** See {@code Gate.unregister}. */
    public void unregister(TenantState tenant) {
        lock.lock();
        try {
            TenantState t = known(tenant);
            // revoke first, then count (never the other way round): see TenantState.revokeIfIdle
            if (t.hasWork() || !t.revokeIfIdle()) {
                throw new GateStateException(gpu, t.name, "has " + (t.running() + t.parked) + " open leases and "
                        + t.waiters.size() + " waiting acquires; close them first");
            }
            long now = nowLocked();
            engines.deregister(t, now);
            tenants.remove(t.name);
            t.registered = false;
            engines.pump(now);
        } finally {
            events.unlockAndDispatch();
        }
    }

    /** The registered tenants, in registration order. */
    public List<TenantState> tenants() {
        lock.lock();
        try {
            return List.copyOf(tenants.values());
        } finally {
            lock.unlock();
        }
    }

    /** The tenant's use of the GPU now. */
    public TenantUsage usage(TenantState tenant) {
        lock.lock();
        try {
            return quota.usageOf(known(tenant), nowLocked());
        } finally {
            lock.unlock();
        }
    }

    /** Every tenant's use of the GPU now, in registration order. */
    public List<TenantUsage> usage() {
        lock.lock();
        try {
            long now = nowLocked();
            List<TenantUsage> out = new ArrayList<>(tenants.size());
            for (TenantState t : tenants.values()) {
                out.add(quota.usageOf(t, now));
            }
            return out;
        } finally {
            lock.unlock();
        }
    }

    /** The preemption machine's state now (a value). */
    public PreemptionState preemptionState() {
        lock.lock();
        try {
            return engines.state();
        } finally {
            lock.unlock();
        }
    }

    /** Open leases of all tenants (running and parked), a snapshot. */
    public int openLeases() {
        lock.lock();
        try {
            int n = 0;
            for (TenantState t : tenants.values()) {
                n += t.running() + t.parked;
            }
            return n;
        } finally {
            lock.unlock();
        }
    }

    /** Acquires waiting now, a snapshot. */
    public int waitingAcquires() {
        lock.lock();
        try {
            int n = 0;
            for (TenantState t : tenants.values()) {
                n += t.waiters.size();
            }
            return n;
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------------------------------
    // lifecycle

    public boolean isClosed() {
        return closed;
    }

    /**
     * Adds {@code delta} to {@link #waiters}. Under the lock: every write is made holding it, so the
     * read-modify-write loses no update; the field is volatile only so the lock-free readers see it.
     */
    @SuppressWarnings("NonAtomicVolatileUpdate") // safe: all writers hold the lock (asserted)
    void addWaiters(int delta) {
        assert lock.isHeldByCurrentThread() : "waiters written without the gate's lock";
        waiters += delta;
    }

    /** See {@code Gate.close()}. */
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            for (TenantState t : tenants.values()) {
                t.setPermit(TenantState.NO_PERMIT);
                for (Iterator<Waiter> it = t.waiters.iterator(); it.hasNext(); ) {
                    Waiter w = it.next();
                    if (w.isAsync()) {
                        it.remove();
                        addWaiters(-1);
                        if (w.timeoutTask != null) {
                            w.timeoutTask.cancel();   // a shared timer would keep the gate until then
                        }
                        events.fail(w, new GateClosedException(gpu));
                    }
                }
                for (Waiter r : t.resumers) {
                    events.fail(r, new GateClosedException(gpu));
                }
                t.resumers.clear();
                t.cond.signalAll();
            }
            engines.cancelTimer();
            owners.cancelTimer();
            quota.cancelTimer();
        } finally {
            events.unlockAndDispatch();
        }
        if (ownsTimer) {
            timer.shutdown();
        }
    }

    // ------------------------------------------------------------------------------------------
    // helpers for the parts

    /** The ticker's time, never going back from one call under the lock to the next. */
    long nowLocked() {
        long now = ticker.read();
        if (now < lastNow) {
            now = lastNow; // clocks of two cores a few nanoseconds apart
        }
        lastNow = now;
        return now;
    }

    void checkOpen() {
        if (closed) {
            throw new GateClosedException(gpu);
        }
    }

    /** The tenant's state, if it belongs to this gate and the gate is open. */
    TenantState own(TenantState t) {
        Validate.notNull("gate.tenant", t);
        if (t.core != this) {
            throw new GateStateException(gpu, t.name, "belongs to gate " + t.core.gpu);
        }
        if (closed) {
            throw new GateClosedException(gpu);
        }
        return t;
    }

    /** As {@link #own}, and registered. */
    TenantState known(TenantState tenant) {
        TenantState t = own(tenant);
        if (!t.registered) {
            throw new GateStateException(gpu, t.name, "is not registered");
        }
        return t;
    }

    /** Under the lock, after a change: brings the engines up to date unless the tenant or gate is gone. */
    void pumpIfLive(TenantState t, long now) {
        if (t.registered && !closed) {
            engines.pump(now);
        }
    }

    @Override
    public String toString() {
        return "Gate[" + gpu + "]";
    }
}
