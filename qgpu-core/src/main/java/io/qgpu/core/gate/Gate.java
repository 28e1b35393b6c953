package io.qgpu.core.gate;

import io.qgpu.api.Ticker;
import io.qgpu.api.Validate;
import io.qgpu.core.compute.ComputeEngine;
import io.qgpu.core.compute.Share;
import io.qgpu.core.compute.TokenDecision;
import io.qgpu.core.compute.TokenScheduler;
import io.qgpu.core.compute.TokenSchedulerConfig;
import io.qgpu.core.compute.LimitEnforcement;
import io.qgpu.core.internal.DurationChecks;
import io.qgpu.core.internal.Saturating;
import io.qgpu.core.preempt.Action;
import io.qgpu.core.preempt.GpuMode;
import io.qgpu.core.preempt.PreemptionEvent;
import io.qgpu.core.preempt.PreemptionMachine;
import io.qgpu.core.preempt.PreemptionState;
import io.qgpu.core.preempt.TenantPhase;
import io.qgpu.core.preempt.Transition;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The runtime gate of one GPU in this process: JVM code wraps each unit of GPU work in a
 * {@link Lease}, so that each tenant stays within its quota over the sliding window and online work
 * preempts offline work at the offline side's next {@link Lease#checkpoint()}.
 *
 * <pre>{@code
 * Gate gate = GateRegistry.shared().gate("GPU-0b5c...");
 * Tenant chat = gate.register(GateTenantSpec.online("chat").limit(60).build());
 * Tenant train = gate.register(GateTenantSpec.offline("train").build());
 *
 * // inference thread
 * try (Lease lease = gate.acquire(chat)) {
 *     runBatch();
 * }
 *
 * // training thread
 * try (Lease lease = gate.acquire(train)) {
 *     while (hasWork()) {
 *         runSlice();            // bounded
 *         lease.checkpoint();    // holds while chat runs, resumes 100 ms after chat idles
 *     }
 * }
 * }</pre>
 *
 * <h2>How it decides</h2>
 * The gate drives the same pure engines as the simulator, with the real clock: the
 * {@link PreemptionMachine} (online/offline modes, suspend, resume, release delay) and a
 * {@link TokenScheduler} that hands the GPU's token to one offline tenant at a time under the GPU's
 * {@link io.qgpu.api.IsolationPolicy}. Limits are the gate's own: a tenant's usage is the time at
 * least one of its leases ran in the window (concurrent leases count once), optionally corrected
 * with NVML per-process samples; a tenant at its limit waits until enough usage has left the
 * window, and a lease that started within the limit ends its slice (so a limit is passed by at most
 * one slice). Usage is kept per tenant in bounded memory (periods closer than window/1024 merge,
 * never under-counted); an optional {@link io.qgpu.api.spi.ProcessUsageSource} corrects it with
 * what the driver measured.
 *
 * <h2>Fast path</h2>
 * Each tenant has a permit: the ticker time until which it may start and continue leases without
 * consulting the engines (an online tenant that is running in online mode, or the offline tenant
 * that holds the token in offline mode, up to its quota's end). Acquire, close and checkpoint under a
 * valid permit are a ticker read, a volatile read and a compare-and-set: no lock (each acquire
 * returns a new small lease object; a lease object is never reused, see {@link Lease}).
 * Everything else (a tenant's first lease, preemption, quota, timeouts) takes the gate's lock,
 * feeds events to the engines and acts on their decisions. A tenant whose last lease closed keeps
 * its engine state until the gate next takes its lock; the idle time is then reported with the time
 * the tenant really went idle.
 *
 * <p>Thread safety: thread-safe. Listeners are called outside the lock.
 */
public final class Gate implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Gate.class);
    private static final GateListener[] NO_LISTENERS = {};
    private static final long NONE = Long.MAX_VALUE;

    final String gpu;
    final GateConfig config;
    final Ticker ticker;
    final ReentrantLock lock = new ReentrantLock();
    private final GateTimer timer;
    private final boolean ownsTimer;
    private final PreemptionMachine machine;
    private final TokenScheduler engine;
    private final EngineClock engineClock;
    private final long windowNanos;
    private final UsageCorrection correction;

    /** Blocked acquires plus parked leases. Written under the lock. */
    volatile int waiters;
    /**
     * Whether a tenant going idle must be reported at once (someone waits, or an offline tenant is
     * held off); else the closing thread leaves it for the next time the lock is taken. Written under
     * the lock.
     */
    volatile boolean eagerIdle;
    private volatile GateListener[] listeners = NO_LISTENERS;
    private volatile boolean closed;

    // ---- guarded by lock ----
    private PreemptionState pstate;
    private final Map<String, Tenant> tenants = new LinkedHashMap<>();
    private long lastNow = Long.MIN_VALUE;
    private long engineWaitUntil = NONE;
    private long armedAt = NONE;
    private GateTimer.Task armedTask;
    private GateTimer.Task reclaimTask;
    private GateTimer.Task reportTask;
    private double factor = 1.0;
    private long lastReclaimAt = Long.MIN_VALUE;
    private final List<GateEvent> pendingEvents = new ArrayList<>();
    private final List<Waiter> pendingGrants = new ArrayList<>();
    private final List<Lease> pendingLeases = new ArrayList<>();
    private final List<Waiter> pendingFailures = new ArrayList<>();
    private final List<RuntimeException> pendingCauses = new ArrayList<>();

    private Gate(String gpu, GateConfig config, GateTimer sharedTimer) {
        this.gpu = Validate.notBlank("gate.gpu", gpu);
        this.config = Validate.notNull("gate.config", config);
        this.ticker = config.ticker();
        GateTimer own = config.timer().orElse(sharedTimer);
        this.ownsTimer = own == null;
        this.timer = ownsTimer ? GateTimer.system(ticker) : own;
        this.machine = PreemptionMachine.standard(config.preemption());
        this.windowNanos = config.windowNanos();
        long now = ticker.read();
        this.lastNow = now;
        this.lastReclaimAt = now;
        this.pstate = machine.initial(now);
        this.engineClock = new EngineClock(now);
        // Limits are enforced by the gate on lease time; the token scheduler orders offline tenants and
        // slices their time. Its tenants get limit 100% and Gemini's eligibility rule, so that a tenant
        // alone on the GPU is never held back by the scheduler's own accounting of token holds.
        TokenSchedulerConfig tc = config.token().toBuilder().limitEnforcement(LimitEnforcement.GEMINI).build();
        this.engine = TokenScheduler.create(tc, engineClock);
        this.correction = config.usageSource().map(source -> new UsageCorrection(source, gpu, config.pid(),
                windowNanos, Math.max(1, config.usageReportIntervalNanos()))).orElse(null);
        lock.lock();
        try {
            scheduleReclaim(now);
            scheduleReport(now);
        } finally {
            lock.unlock();
        }
    }

    /**
     * A gate for one GPU. Prefer {@link GateRegistry#gate(String)}, which keeps one gate per GPU in the
     * process.
     */
    public static Gate create(String gpuUuid, GateConfig config) {
        return new Gate(gpuUuid, config, null);
    }

    /** A gate that uses {@code sharedTimer} (not shut down by the gate) unless its config names a timer. */
    static Gate create(String gpuUuid, GateConfig config, GateTimer sharedTimer) {
        return new Gate(gpuUuid, config, sharedTimer);
    }

    /** The GPU this gate is bound to. */
    public String gpu() {
        return gpu;
    }

    public GateConfig config() {
        return config;
    }

    // ------------------------------------------------------------------------------------------
    // tenants

    /**
     * Registers a tenant. Its limit is what the GPU's isolation policy makes of its request and limit.
     *
     * @throws GateStateException                 if the name is taken
     * @throws io.qgpu.api.InvalidValueException if the policy refuses the quota (fixed-share needs a request)
     * @throws GateClosedException                if the gate is closed
     */
    public Tenant register(GateTenantSpec spec) {
        Validate.notNull("gate.register.spec", spec);
        Share share = ComputeEngine.shareFor(config.policy(), spec.requestPercent(), spec.limitPercent());
        long limit = Math.max(1, Math.round(share.limit() * windowNanos));
        lock.lock();
        try {
            checkOpen();
            if (tenants.containsKey(spec.name())) {
                throw new GateStateException(gpu, spec.name(), "is already registered");
            }
            Tenant t = new Tenant(this, spec, limit);
            long now = nowLocked();
            if (!t.online) {
                engine.addTenant(t.name, new Share(share.request(), 1.0));
            }
            apply(new PreemptionEvent.Register(at(now), t.name, spec.priority()));
            tenants.put(t.name, t);
            pump(now);
            return t;
        } finally {
            unlockAndDispatch();
        }
    }

    /**
     * Removes a tenant that has no open lease and no waiting acquire.
     *
     * @throws GateStateException if it has open leases or waiting acquires, or is not this gate's
     */
    public void unregister(Tenant tenant) {
        lock.lock();
        try {
            Tenant t = known(tenant);
            if (t.running() > 0 || t.parked > 0 || !t.waiters.isEmpty()) {
                throw new GateStateException(gpu, t.name, "has " + (t.running() + t.parked) + " open leases and "
                        + t.waiters.size() + " waiting acquires; close them first");
            }
            long now = nowLocked();
            t.permitUntil = Tenant.NO_PERMIT;
            if (t.holdsToken) {
                releaseToken(t, idleStamp(t));
            }
            apply(new PreemptionEvent.Deregister(at(now), t.name));
            if (!t.online) {
                engine.removeTenant(t.name);
            }
            tenants.remove(t.name);
            t.registered = false;
            pump(now);
        } finally {
            unlockAndDispatch();
        }
    }

    /** The registered tenants, in registration order. */
    public List<Tenant> tenants() {
        lock.lock();
        try {
            return List.copyOf(tenants.values());
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------------------------------
    // acquire

    /**
     * Blocks until {@code tenant} may run GPU work, and returns its lease.
     *
     * @throws InterruptedException if interrupted while waiting (no lease is left behind)
     * @throws GateClosedException  if the gate is closed
     * @throws GateStateException   if the tenant is not registered with this gate
     */
    public Lease acquire(Tenant tenant) throws InterruptedException {
        Tenant t = own(tenant);
        long now = ticker.read();
        if (t.tryEnter(now)) {
            return granted(t, now);
        }
        return acquireSlow(t, now, NONE, null);
    }

    /**
     * Like {@link #acquire(Tenant)}, giving up after {@code timeout} of the gate's ticker.
     *
     * @throws GateTimeoutException if the timeout passed (no lease is left behind)
     */
    public Lease acquire(Tenant tenant, Duration timeout) throws InterruptedException {
        Tenant t = own(tenant);
        long limit = timeoutNanos(timeout);
        long now = ticker.read();
        if (t.tryEnter(now)) {
            return granted(t, now);
        }
        return acquireSlow(t, now, Saturating.add(now, limit), timeout);
    }

    /**
     * A lease if {@code tenant} may run now without waiting for anyone, else an empty optional (never
     * {@code null}): an online tenant does not preempt running offline work for it, an offline tenant
     * gets it only if the GPU's token is free or its own, and a tenant at its limit gets none. Never
     * blocks for GPU time (it may take the gate's lock briefly).
     *
     * <pre>{@code
     * gate.tryAcquire(chat).ifPresentOrElse(lease -> { try (lease) { runBatch(); } }, this::shedLoad);
     * }</pre>
     *
     * @throws GateClosedException if the gate is closed
     * @throws GateStateException  if the tenant is not registered with this gate
     */
    public Optional<Lease> tryAcquire(Tenant tenant) {
        Tenant t = own(tenant);
        long now = ticker.read();
        if (t.tryEnter(now)) {
            return Optional.of(granted(t, now));
        }
        lock.lock();
        try {
            checkOpen();
            known(t);
            now = nowLocked();
            pump(now);
            if (!t.tryEnter(now)) {
                if (!quotaOk(t, now) || !wouldRunAtOnce(t, now)) {
                    return Optional.empty();
                }
                Waiter probe = new Waiter(null, now);
                t.waiters.add(probe);
                waiters++;
                boolean entered;
                try {
                    pump(now);
                    entered = t.tryEnter(now);
                } finally {
                    t.waiters.remove(probe);
                    waiters--;
                    pump(now);
                }
                if (!entered) {
                    return Optional.empty();
                }
            }
            Lease l = Lease.forOwner(t, t.holders.get(), now);
            if (hasListeners()) {
                pendingEvents.add(new GateEvent.LeaseGranted(gpu, t.name, now, 0));
            }
            return Optional.of(l);
        } finally {
            unlockAndDispatch();
        }
    }

    /** Asks the pure machine, without committing, whether submitting work now would let it run at once. */
    private boolean wouldRunAtOnce(Tenant t, long now) {
        TenantPhase p = phase(t);
        if (t.online) {
            if (p != TenantPhase.IDLE) {
                return p == TenantPhase.RUNNING;
            }
            Transition probe = machine.next(pstate, new PreemptionEvent.Submit(at(now), t.name));
            for (Action a : probe.actions()) {
                if (a instanceof Action.RunOnline r && r.tenant().equals(t.name)) {
                    return true;
                }
            }
            return false;
        }
        if (pstate.mode() != GpuMode.OFFLINE) {
            return false;
        }
        return engine.holder().isEmpty() || t.holdsToken;
    }

    /**
     * A future that completes with a lease when {@code tenant} may run. Cancelling the future (or
     * completing it otherwise) withdraws the request; a lease that raced with the cancellation is
     * closed at once. The lease belongs to no thread (it is not reclaimed when a thread dies).
     */
    public CompletableFuture<Lease> acquireAsync(Tenant tenant) {
        return acquireAsync(tenant, null);
    }

    /**
     * Like {@link #acquireAsync(Tenant)}; the future fails with {@link GateTimeoutException} after
     * {@code timeout} of the gate's ticker ({@code null}: no timeout).
     */
    public CompletableFuture<Lease> acquireAsync(Tenant tenant, Duration timeout) {
        Tenant t = own(tenant);
        long limit = timeout == null ? NONE : timeoutNanos(timeout);
        CompletableFuture<Lease> f = new CompletableFuture<>();
        long now = ticker.read();
        if (t.tryEnter(now)) {
            Lease l = new Lease(t, null, now);
            if (hasListeners()) {
                fire(new GateEvent.LeaseGranted(gpu, t.name, now, 0));
            }
            f.complete(l);
            return f;
        }
        Waiter w = new Waiter(f, now);
        lock.lock();
        try {
            if (closed) {
                f.completeExceptionally(new GateClosedException(gpu));
                return f;
            }
            known(t);
            now = nowLocked();
            maybeReclaim(now);
            t.waiters.add(w);
            waiters++;
            if (limit != NONE) {
                long deadline = Saturating.add(w.startedAt, limit);
                w.timeoutTask = timer.schedule(deadline, () -> asyncTimeout(t, w, timeout));
            }
            pump(now);
        } finally {
            unlockAndDispatch();
        }
        f.whenComplete((lease, ex) -> {
            if (ex != null) {
                abandonAsync(t, w, ex);
            }
        });
        return f;
    }

    private Lease granted(Tenant t, long now) {
        Lease l = Lease.forOwner(t, t.holders.get(), now);
        if (listeners.length != 0) {
            fire(new GateEvent.LeaseGranted(gpu, t.name, now, 0));
        }
        return l;
    }

    private Lease acquireSlow(Tenant t, long startedAt, long deadline, Duration timeout) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        Holder h = t.holders.get();
        lock.lock();
        Waiter w = null;
        Lease lease = null;
        GateEvent.Abandon abandon = null;
        long now = startedAt;
        try {
            known(t);
            maybeReclaim(nowLocked());
            while (true) {
                if (closed) {
                    abandon = GateEvent.Abandon.CLOSED;
                    throw new GateClosedException(gpu);
                }
                now = nowLocked();
                if (w == null) {
                    pump(now);
                }
                if (t.tryEnter(now)) {
                    lease = Lease.forOwner(t, h, now);
                    break;
                }
                if (deadline != NONE && (now >= deadline || (w != null && w.timedOut))) {
                    abandon = GateEvent.Abandon.TIMEOUT;
                    throw new GateTimeoutException(gpu, t.name, timeout);
                }
                if (w == null) {
                    w = new Waiter(null, startedAt);
                    t.waiters.add(w);
                    waiters++;
                    if (deadline != NONE) {
                        Waiter fw = w;
                        w.timeoutTask = timer.schedule(deadline, () -> syncTimeout(t, fw));
                    }
                    pump(now);
                    continue;
                }
                if (flushBeforeWait()) {
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
                waiters--;
                if (w.timeoutTask != null) {
                    w.timeoutTask.cancel();
                }
                if (t.registered && !closed) {
                    pump(nowLocked());
                }
            }
            if (hasListeners()) {
                if (lease != null) {
                    pendingEvents.add(new GateEvent.LeaseGranted(gpu, t.name, now, now - startedAt));
                } else if (abandon != null) {
                    pendingEvents.add(new GateEvent.AcquireAbandoned(gpu, t.name, now, now - startedAt, abandon));
                }
            }
            unlockAndDispatch();
        }
        return lease;
    }

    private void syncTimeout(Tenant t, Waiter w) {
        lock.lock();
        try {
            w.timedOut = true;
            t.cond.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void asyncTimeout(Tenant t, Waiter w, Duration timeout) {
        lock.lock();
        try {
            if (t.waiters.remove(w)) {
                waiters--;
                w.timedOut = true;
                pendingFailures.add(w);
                pendingCauses.add(new GateTimeoutException(gpu, t.name, timeout));
                long now = nowLocked();
                if (hasListeners()) {
                    pendingEvents.add(new GateEvent.AcquireAbandoned(gpu, t.name, now, now - w.startedAt,
                            GateEvent.Abandon.TIMEOUT));
                }
                if (t.registered && !closed) {
                    pump(now);
                }
            }
        } finally {
            unlockAndDispatch();
        }
    }

    private void abandonAsync(Tenant t, Waiter w, Throwable ex) {
        lock.lock();
        try {
            if (t.waiters.remove(w)) {
                waiters--;
                if (w.timeoutTask != null) {
                    w.timeoutTask.cancel();
                }
                long now = nowLocked();
                if (hasListeners()) {
                    pendingEvents.add(new GateEvent.AcquireAbandoned(gpu, t.name, now, now - w.startedAt,
                            GateEvent.Abandon.CANCELLED));
                }
                if (t.registered && !closed) {
                    pump(now);
                }
            }
        } finally {
            unlockAndDispatch();
        }
    }

    // ------------------------------------------------------------------------------------------
    // leaving, checkpoints

    /** A running lease closed (fast path of {@link Lease#close()}). */
    void leave(Tenant t, long acquiredAt) {
        long now = ticker.read();
        if (t.leaveOne(now) && (eagerIdle || waiters != 0)) {
            onIdle();
        }
        if (listeners.length != 0) {
            fire(new GateEvent.LeaseReleased(gpu, t.name, now, now - acquiredAt));
        }
    }

    /** A tenant went idle while someone waits: let the engines know now. */
    private void onIdle() {
        lock.lock();
        try {
            if (!closed) {
                pump(nowLocked());
            }
        } finally {
            unlockAndDispatch();
        }
    }

    /** Close of a parked lease, or by a thread other than the owner. */
    void closeSlow(Lease l) {
        Tenant t = l.tenant;
        Holder h = l.holder;
        boolean owner = h == null || Thread.currentThread() == h.thread;
        long now;
        lock.lock();
        try {
            now = nowLocked();
            if (h != null && l.epoch != h.epoch) {
                l.casState(l.state(), Lease.CLOSED); // reclaimed already
                return;
            }
            if (l.casState(Lease.PARKED, Lease.CLOSED)) {
                t.parked--;
                waiters--;
                for (Iterator<Waiter> it = t.resumers.iterator(); it.hasNext(); ) {
                    Waiter r = it.next();
                    if (r.resume == l) {
                        it.remove();
                        pendingFailures.add(r);
                        pendingCauses.add(new GateStateException(gpu, t.name, "lease was closed while waiting to resume"));
                    }
                }
                if (h != null) {
                    h.parked--;
                    if (owner) {
                        h.open--;
                    } else {
                        h.foreignClosed++;
                    }
                }
            } else if (l.casState(Lease.RUNNING, Lease.CLOSED)) {
                if (h != null) {
                    if (owner) {
                        h.open--;
                    } else {
                        h.foreignClosed++;
                    }
                }
                t.leaveOne(now);
            } else {
                return; // closed already
            }
            if (hasListeners()) {
                pendingEvents.add(new GateEvent.LeaseReleased(gpu, t.name, now, now - l.acquiredAt));
            }
            if (t.registered && !closed) {
                pump(now);
            }
        } finally {
            unlockAndDispatch();
        }
    }

    void checkpointSlow(Lease l) throws InterruptedException {
        Tenant t = l.tenant;
        lock.lock();
        try {
            if (!parkIfNeeded(l)) {
                return;
            }
            while (true) {
                checkOpen();
                checkNotReclaimed(l);
                long now = nowLocked();
                if (tryResume(l, now)) {
                    pump(now);
                    return;
                }
                if (!flushBeforeWait()) {
                    t.cond.await();
                }
            }
        } finally {
            unlockAndDispatch();
        }
    }

    CompletableFuture<Lease> checkpointAsyncSlow(Lease l) {
        Tenant t = l.tenant;
        lock.lock();
        try {
            if (!parkIfNeeded(l)) {
                return CompletableFuture.completedFuture(l);
            }
            for (Waiter r : t.resumers) {
                if (r.resume == l) {
                    throw new GateStateException(gpu, t.name, "lease is already waiting to resume");
                }
            }
            long now = nowLocked();
            CompletableFuture<Lease> f = new CompletableFuture<>();
            if (tryResume(l, now)) {
                pump(now);
                f.complete(l);
                return f;
            }
            Waiter r = new Waiter(f, now, l);
            t.resumers.add(r);
            pump(now);
            f.whenComplete((lease, ex) -> {
                if (ex != null) {
                    withdrawResume(r);
                }
            });
            return f;
        } finally {
            unlockAndDispatch();
        }
    }

    /**
     * The future of an async checkpoint completed otherwise than by the gate (cancelled): the request
     * to resume is withdrawn and the lease stays parked. If the gate had resumed it meanwhile, it is
     * parked again, so a cancelled checkpoint never leaves a running lease that nobody was told about.
     */
    private void withdrawResume(Waiter r) {
        Lease l = r.resume;
        Tenant t = l.tenant;
        lock.lock();
        try {
            t.resumers.remove(r);
            if (l.state() == Lease.RUNNING && !closed && (l.holder == null || l.epoch == l.holder.epoch)) {
                long now = nowLocked();
                park(l, now, GateEvent.SuspendReason.CHECKPOINT_CANCELLED);
            }
            if (t.registered && !closed) {
                pump(nowLocked());
            }
        } finally {
            unlockAndDispatch();
        }
    }

    /**
     * Under the lock: lets a running lease go on if the tenant may (after bringing the engines up to
     * date), else parks it. A parked lease stays parked.
     *
     * @return whether the lease is parked now
     */
    private boolean parkIfNeeded(Lease l) {
        Tenant t = l.tenant;
        if (l.state() == Lease.CLOSED) {
            throw new GateStateException(gpu, t.name, "lease is closed");
        }
        checkOpen();
        checkNotReclaimed(l);
        long now = nowLocked();
        if (l.state() == Lease.RUNNING) {
            pump(now);
            if (now < t.permitUntil) {
                return false;
            }
            park(l, now, suspendReason(t));
            pump(now);
        }
        return true;
    }

    /** Under the lock: a running lease stops (its time no longer counts) and waits to resume. */
    private void park(Lease l, long now, GateEvent.SuspendReason reason) {
        Tenant t = l.tenant;
        if (!l.casState(Lease.RUNNING, Lease.PARKED)) {
            return;
        }
        l.parkedAt = now;
        t.parked++;
        if (l.holder != null) {
            l.holder.parked++;
        }
        waiters++;
        t.leaveOne(now);
        if (hasListeners()) {
            pendingEvents.add(new GateEvent.Suspended(gpu, t.name, now, reason));
        }
    }

    /** Under the lock: a parked lease runs again if the tenant's permit allows it. */
    private boolean tryResume(Lease l, long now) {
        Tenant t = l.tenant;
        if (!t.tryEnter(now)) {
            return false;
        }
        l.casState(Lease.PARKED, Lease.RUNNING);
        t.parked--;
        if (l.holder != null) {
            l.holder.parked--;
        }
        waiters--;
        if (hasListeners()) {
            pendingEvents.add(new GateEvent.Resumed(gpu, t.name, now, now - l.parkedAt));
        }
        return true;
    }

    private void checkNotReclaimed(Lease l) {
        if (l.holder != null && l.epoch != l.holder.epoch) {
            l.casState(l.state(), Lease.CLOSED);
            throw new GateStateException(gpu, l.tenant.name, "lease was reclaimed after its owner thread died");
        }
    }

    private GateEvent.SuspendReason suspendReason(Tenant t) {
        TenantPhase p = phase(t);
        if (p == TenantPhase.SUSPENDING || p == TenantPhase.SUSPENDED) {
            return GateEvent.SuspendReason.PREEMPTED;
        }
        if (!t.online && t.holdsToken && otherOfflineDemand(t)) {
            return GateEvent.SuspendReason.GRANT_ENDED;
        }
        return GateEvent.SuspendReason.QUOTA;
    }

    // ------------------------------------------------------------------------------------------
    // the engines

    /** The tenant's phase in the machine's current state (cached per state version). */
    private TenantPhase phase(Tenant t) {
        long v = pstate.version();
        if (t.phaseVersion != v || t.phaseState != pstate) {
            t.phase = pstate.phase(t.name).orElseThrow(
                    () -> new IllegalStateException("tenant " + t.name + " unknown to the machine"));
            t.phaseVersion = v;
            t.phaseState = pstate;
        }
        return t.phase;
    }

    /**
     * Brings the engines up to date with every tenant's leases and waiters, hands out the token, then
     * sets permits, wakes waiters and arms the timer. Under the lock.
     */
    private void pump(long now) {
        for (int round = 0; ; round++) {
            if (round > 10_000) {
                throw new IllegalStateException("gate " + gpu + " did not settle: " + pstate);
            }
            boolean changed = false;
            for (Tenant t : tenants.values()) {
                changed |= settle(t, now);
            }
            if (!changed) {
                for (Tenant t : tenants.values()) {
                    changed |= demand(t, now);
                }
            }
            if (!changed && pstate.mode() == GpuMode.OFFLINE && engine.holder().isEmpty()) {
                changed = scheduleToken(now);
            }
            if (!changed) {
                break;
            }
        }
        long wake = Math.min(pstate.nextTimerNanos(), engineWaitUntil);
        for (Tenant t : tenants.values()) {
            refreshPermit(t, now);
            if ((!t.waiters.isEmpty() || t.parked > 0) && t.quotaWakeAt != NONE) {
                wake = Math.min(wake, t.quotaWakeAt);
            }
        }
        wakeWaiters(now);
        arm(wake);
        boolean eager = false;
        for (Tenant t : tenants.values()) {
            TenantPhase p = phase(t);
            if (!t.online && p != TenantPhase.IDLE && p != TenantPhase.RUNNING) {
                eager = true;
                break;
            }
        }
        if (eager != eagerIdle) {
            eagerIdle = eager;
        }
    }

    /** First pass: report what tenants stopped doing (idle, suspended, stopped), with the time they did. */
    private boolean settle(Tenant t, long now) {
        TenantPhase p = phase(t);
        int work = t.waiters.size() + t.parked;
        if (t.online) {
            if (p == TenantPhase.RUNNING && t.running() == 0 && (work == 0 || !quotaOk(t, now)) && quiesced(t)) {
                apply(new PreemptionEvent.Idle(idleStamp(t), t.name));
                return true;
            }
            if (p == TenantPhase.WAITING && t.waiters.isEmpty()) {
                apply(new PreemptionEvent.Idle(at(now), t.name));
                return true;
            }
            return false;
        }
        switch (p) {
            case RUNNING -> {
                if (t.running() != 0) {
                    return false;
                }
                if (work == 0) {
                    if (quiesced(t)) {
                        long s = idleStamp(t);
                        releaseToken(t, t.idleAt);
                        apply(new PreemptionEvent.Idle(s, t.name));
                        return true;
                    }
                } else if ((now >= t.grantExpiry && otherOfflineDemand(t)) || !quotaOk(t, now)) {
                    if (quiesced(t)) {
                        long s = idleStamp(t);
                        releaseToken(t, t.idleAt);
                        apply(new PreemptionEvent.Stop(s, t.name));
                        return true;
                    }
                }
                return false;
            }
            case SUSPENDING -> {
                if (t.running() == 0 && quiesced(t)) {
                    long s = idleStamp(t);
                    if (t.holdsToken) {
                        releaseToken(t, t.idleAt);
                    }
                    apply(work > 0 ? new PreemptionEvent.Suspended(s, t.name) : new PreemptionEvent.Idle(s, t.name));
                    return true;
                }
                return false;
            }
            case READY -> {
                if (work == 0 && t.running() == 0) {
                    if (t.requested) {
                        engine.withdraw(t.name);
                        t.requested = false;
                    }
                    apply(new PreemptionEvent.Idle(at(now), t.name));
                    return true;
                }
                return false;
            }
            case SUSPENDED -> {
                if (t.requested) {
                    engine.withdraw(t.name);
                    t.requested = false;
                    return true;
                }
                if (t.holdsToken && t.running() == 0 && quiesced(t)) {
                    releaseToken(t, t.idleAt);
                    return true;
                }
                return false;
            }
            default -> {
                return false;
            }
        }
    }

    /** Second pass: report new work (submit) and ask for the token. */
    private boolean demand(Tenant t, long now) {
        TenantPhase p = phase(t);
        boolean work = !t.waiters.isEmpty() || t.parked > 0;
        if (t.online) {
            if (p == TenantPhase.IDLE && !t.waiters.isEmpty() && quotaOk(t, now)) {
                apply(new PreemptionEvent.Submit(at(now), t.name));
                return true;
            }
            return false;
        }
        if (p == TenantPhase.IDLE && work) {
            apply(new PreemptionEvent.Submit(at(now), t.name));
            return true;
        }
        if (p == TenantPhase.READY) {
            boolean ok = quotaOk(t, now);
            if (ok && !t.requested) {
                engineClock.advanceTo(now);
                engine.request(t.name);
                t.requested = true;
                return true;
            }
            if (!ok && t.requested) {
                engine.withdraw(t.name);
                t.requested = false;
                return true;
            }
        }
        return false;
    }

    private boolean scheduleToken(long now) {
        engineClock.advanceTo(now);
        TokenDecision d = engine.schedule();
        engineWaitUntil = NONE;
        if (d instanceof TokenDecision.Granted g) {
            Tenant t = tenants.get(g.grant().tenant());
            t.holdsToken = true;
            t.requested = false;
            t.grantStart = g.grant().startNanos();
            t.grantExpiry = g.grant().expiresAtNanos();
            if (!apply(new PreemptionEvent.Start(at(now), t.name))) {
                releaseToken(t, now); // a timer fired first and the tenant is no longer ready
            }
            return true;
        }
        if (d instanceof TokenDecision.WaitUntil w) {
            engineWaitUntil = w.atNanos();
        }
        return false;
    }

    private void releaseToken(Tenant t, long stamp) {
        long s = Math.max(Math.max(stamp, t.grantStart), engineClock.read());
        engineClock.advanceTo(s);
        engine.release(t.name, Math.max(0, s - t.grantExpiry));
        t.holdsToken = false;
    }

    private boolean otherOfflineDemand(Tenant t) {
        for (Tenant u : tenants.values()) {
            if (u != t && u.requested) {
                return true;
            }
        }
        return false;
    }

    /**
     * Revokes the permit and confirms the tenant has no running lease (a fast-path entry racing with
     * the revocation sees it and backs out); then drains its periods. Restores the permit if a lease
     * is running.
     */
    private boolean quiesced(Tenant t) {
        if (t.running() != 0) {
            return false;
        }
        long p = t.permitUntil;
        t.permitUntil = Tenant.NO_PERMIT;
        if (t.running() != 0) {
            t.permitUntil = p;
            return false;
        }
        t.idleAt = t.drainIdle();
        return true;
    }

    /** When the tenant went idle, as an event time for the machine. */
    private long idleStamp(Tenant t) {
        return Math.max(t.idleAt, pstate.at());
    }

    private long at(long now) {
        return Math.max(now, pstate.at());
    }

    /**
     * Feeds one event to the machine and carries out its actions. If a timer of the machine is due
     * by the event's time (the timer thread is late), the timers fire first, with a Tick at that time,
     * and a tenant event is dropped (false): the caller's pump round re-decides from the new phases.
     * Register and Deregister are always applied.
     */
    private boolean apply(PreemptionEvent e) {
        if (!(e instanceof PreemptionEvent.Tick) && pstate.nextTimerNanos() <= e.at()) {
            apply(new PreemptionEvent.Tick(e.at()));
            if (!(e instanceof PreemptionEvent.Register) && !(e instanceof PreemptionEvent.Deregister)) {
                return false;
            }
        }
        Transition tr = machine.next(pstate, e);
        pstate = tr.state();
        for (Action a : tr.actions()) {
            if (a instanceof Action.Suspend s) {
                Tenant x = tenants.get(s.tenant());
                if (x != null) {
                    x.permitUntil = Tenant.NO_PERMIT;
                }
            } else if (a instanceof Action.ForceSuspended f) {
                Tenant x = tenants.get(f.tenant());
                if (x != null) {
                    x.permitUntil = Tenant.NO_PERMIT;
                    if (x.holdsToken) {
                        releaseToken(x, f.at());
                    }
                }
                LOG.debug("gate {}: {} overran the preemption bound", gpu, f.tenant());
                if (hasListeners()) {
                    pendingEvents.add(new GateEvent.ForcedSuspension(gpu, f.tenant(), f.at()));
                }
            } else if (a instanceof Action.ModeChanged m) {
                LOG.trace("gate {}: {} -> {} at {}", gpu, m.from(), m.to(), m.at());
                if (hasListeners()) {
                    pendingEvents.add(new GateEvent.ModeChanged(gpu, m.from(), m.to(), m.at()));
                }
            }
        }
        return true;
    }

    private void refreshPermit(Tenant t, long now) {
        TenantPhase p = phase(t);
        long permit = Tenant.NO_PERMIT;
        if (!closed && p == TenantPhase.RUNNING && (t.online || t.holdsToken)) {
            long ok = okUntil(t, now);
            permit = t.online || !otherOfflineDemand(t) ? ok : Math.min(ok, t.grantExpiry);
        }
        if (t.permitUntil != permit) {
            t.permitUntil = permit;
        }
    }

    private void wakeWaiters(long now) {
        for (Tenant t : tenants.values()) {
            if (now >= t.permitUntil || (t.waiters.isEmpty() && t.parked == 0)) {
                continue;
            }
            boolean sync = t.parked > 0;
            for (Iterator<Waiter> it = t.waiters.iterator(); it.hasNext(); ) {
                Waiter w = it.next();
                if (!w.isAsync()) {
                    sync = true;
                    continue;
                }
                if (!t.tryEnter(now)) {
                    break;
                }
                it.remove();
                waiters--;
                if (w.timeoutTask != null) {
                    w.timeoutTask.cancel();
                }
                pendingGrants.add(w);
                pendingLeases.add(new Lease(t, null, now));
                if (hasListeners()) {
                    pendingEvents.add(new GateEvent.LeaseGranted(gpu, t.name, now, now - w.startedAt));
                }
            }
            for (Iterator<Waiter> it = t.resumers.iterator(); it.hasNext(); ) {
                Waiter r = it.next();
                if (r.resume.state() != Lease.PARKED) {
                    it.remove(); // closed meanwhile
                    continue;
                }
                if (!tryResume(r.resume, now)) {
                    break;
                }
                it.remove();
                pendingGrants.add(r);
                pendingLeases.add(r.resume);
            }
            if (sync) {
                t.cond.signalAll();
            }
        }
    }

    /**
     * Makes sure the timer calls back no later than {@code at}. A task already armed for an earlier
     * time is kept (its call-back finds nothing due and re-arms), so that a preemption or quota wait
     * does not reschedule the timer on every change.
     */
    private void arm(long at) {
        if (closed || at >= armedAt) {
            return;
        }
        if (armedTask != null) {
            armedTask.cancel();
        }
        armedAt = at;
        armedTask = timer.schedule(at, this::onTimer);
    }

    private void onTimer() {
        lock.lock();
        try {
            armedAt = NONE;
            armedTask = null;
            if (closed) {
                return;
            }
            long now = nowLocked();
            if (pstate.nextTimerNanos() <= now) {
                apply(new PreemptionEvent.Tick(at(now)));
            }
            pump(now);
        } finally {
            unlockAndDispatch();
        }
    }

    // ------------------------------------------------------------------------------------------
    // accounting

    /** Lease time of {@code t} in the window ending {@code now}, including a period in progress. Under the lock. */
    private long usageLocked(Tenant t, long now) {
        return t.usage(now);
    }

    /** The limit in lease-time units after correction. */
    private long effectiveLimit(Tenant t) {
        if (factor == 1.0) {
            return t.limitNanos;
        }
        double eff = t.limitNanos / factor;
        return eff >= windowNanos ? windowNanos : (long) eff;
    }

    /** Until when {@code t} may run without passing its limit, if it runs from now on. */
    private long okUntil(Tenant t, long now) {
        long eff = effectiveLimit(t);
        if (eff >= windowNanos) {
            return NONE;
        }
        long headroom = eff - usageLocked(t, now);
        if (headroom <= 0) {
            return now;
        }
        if (t.running() == 0 && headroom < Math.min(config.minSliceNanos(), eff)) {
            return now; // idle and too little left: wait for a whole slice
        }
        return Saturating.add(now, headroom);
    }

    /**
     * Whether {@code t} may start from idle now (its headroom is at least a minimum slice); if not and
     * it is idle, sets when it may.
     */
    private boolean quotaOk(Tenant t, long now) {
        long eff = effectiveLimit(t);
        if (eff >= windowNanos) {
            t.quotaWakeAt = NONE;
            t.quotaReported = false;
            return true;
        }
        long need = Math.min(config.minSliceNanos(), eff);
        long usage = usageLocked(t, now);
        if (eff - usage >= need) {
            t.quotaWakeAt = NONE;
            t.quotaReported = false;
            return true;
        }
        t.quotaWakeAt = t.running() == 0 ? t.timeUsageAtMost(eff - need, now) : NONE;
        if (!t.quotaReported && hasListeners()) {
            pendingEvents.add(new GateEvent.QuotaExhausted(gpu, t.name, now, usage, eff, t.quotaWakeAt));
        }
        t.quotaReported = true;
        return false;
    }

    /** The tenant's use of the GPU now. */
    public TenantUsage usage(Tenant tenant) {
        lock.lock();
        try {
            Tenant t = known(tenant);
            return usageOf(t, nowLocked());
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
            for (Tenant t : tenants.values()) {
                out.add(usageOf(t, now));
            }
            return out;
        } finally {
            lock.unlock();
        }
    }

    private TenantUsage usageOf(Tenant t, long now) {
        long u = usageLocked(t, now);
        long total = t.totalNanos(now);
        return new TenantUsage(t.name, u, Math.round(u * factor), factor, t.limitNanos, windowNanos,
                t.running(), t.parked, total);
    }

    /** The current correction factor (1 without a usage source). */
    public double correctionFactor() {
        lock.lock();
        try {
            return factor;
        } finally {
            lock.unlock();
        }
    }

    /** The GPU's preemption mode now. */
    public GpuMode mode() {
        lock.lock();
        try {
            return pstate.mode();
        } finally {
            lock.unlock();
        }
    }

    /** The preemption machine's state now (a value). */
    public PreemptionState preemptionState() {
        lock.lock();
        try {
            return pstate;
        } finally {
            lock.unlock();
        }
    }

    /** Open leases of all tenants (running and parked), a snapshot. */
    public int openLeases() {
        lock.lock();
        try {
            int n = 0;
            for (Tenant t : tenants.values()) {
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
            for (Tenant t : tenants.values()) {
                n += t.waiters.size();
            }
            return n;
        } finally {
            lock.unlock();
        }
    }

    private void scheduleReport(long now) {
        long every = config.usageReportIntervalNanos();
        if (every > 0 && !closed) {
            reportTask = timer.schedule(Saturating.add(now, every), this::report);
        }
    }

    private void report() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            long now = nowLocked();
            if (correction == null && !hasListeners()) {
                scheduleReport(now);
                return;
            }
            if (correction != null) {
                long total = 0;
                for (Tenant t : tenants.values()) {
                    total += t.totalNanos(now);
                }
                try {
                    factor = correction.update(total, config.usageReportIntervalNanos());
                } catch (RuntimeException e) {
                    LOG.warn("gate {}: usage source failed, correction factor stays {}", gpu, factor, e);
                }
            }
            if (hasListeners()) {
                for (Tenant t : tenants.values()) {
                    long u = usageLocked(t, now);
                    pendingEvents.add(new GateEvent.UsageReport(gpu, t.name, now, u, Math.round(u * factor),
                            windowNanos, factor));
                }
            }
            pump(now);
            scheduleReport(now);
        } finally {
            unlockAndDispatch();
        }
    }

    // ------------------------------------------------------------------------------------------
    // dead owners

    Holder newHolder(Tenant t) {
        Holder h = new Holder(Thread.currentThread());
        lock.lock();
        try {
            t.holderList.add(h);
        } finally {
            lock.unlock();
        }
        return h;
    }

    private void scheduleReclaim(long now) {
        if (!closed) {
            reclaimTask = timer.schedule(Saturating.add(now, reclaimInterval()), this::reclaimTick);
        }
    }

    private void reclaimTick() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            long now = nowLocked();
            reclaimLocked(now);
            scheduleReclaim(now);
        } finally {
            unlockAndDispatch();
        }
    }

    /**
     * Looks for leases whose owner thread died: the first pass that sees one notes the time, a pass at
     * least {@link GateConfig#deadOwnerTimeoutNanos()} later closes them. Runs on the gate's timer by
     * itself; call it to check now.
     *
     * @return how many leases were reclaimed
     */
    public int reclaimDeadOwners() {
        lock.lock();
        try {
            return closed ? 0 : reclaimLocked(nowLocked());
        } finally {
            unlockAndDispatch();
        }
    }

    /** A reclaim pass from an acquire that waits, at most once per reclaim interval. */
    private void maybeReclaim(long now) {
        if (now - lastReclaimAt >= reclaimInterval()) {
            reclaimLocked(now);
        }
    }

    private long reclaimInterval() {
        return Math.max(1_000_000L, config.deadOwnerTimeoutNanos() / 2);
    }

    private int reclaimLocked(long now) {
        lastReclaimAt = now;
        int reclaimed = 0;
        for (Tenant t : tenants.values()) {
            for (Iterator<Holder> it = t.holderList.iterator(); it.hasNext(); ) {
                Holder h = it.next();
                if (h.thread.isAlive()) {
                    continue;
                }
                int open = h.open - h.foreignClosed;
                if (open <= 0) {
                    it.remove();
                    continue;
                }
                if (h.deadSince == Long.MIN_VALUE) {
                    h.deadSince = now;
                }
                if (now - h.deadSince < config.deadOwnerTimeoutNanos()) {
                    continue;
                }
                int parked = h.parked;
                int running = open - parked;
                h.epoch++;
                for (Iterator<Waiter> rs = t.resumers.iterator(); rs.hasNext(); ) {
                    Waiter r = rs.next();
                    if (r.resume.holder == h) {
                        rs.remove();
                        r.resume.casState(Lease.PARKED, Lease.CLOSED);
                        pendingFailures.add(r);
                        pendingCauses.add(new GateStateException(gpu, t.name,
                                "lease was reclaimed after its owner thread died"));
                    }
                }
                for (int i = 0; i < running; i++) {
                    t.leaveOne(now);
                }
                t.parked -= parked;
                waiters -= parked;
                h.open = 0;
                h.foreignClosed = 0;
                h.parked = 0;
                it.remove();
                reclaimed += open;
                LOG.warn("gate {}: reclaimed {} lease(s) of tenant {} whose thread {} died", gpu, open, t.name,
                        h.thread.getName());
                if (hasListeners()) {
                    pendingEvents.add(new GateEvent.LeaseReclaimed(gpu, t.name, now, h.thread.getName(), open));
                }
            }
        }
        if (reclaimed > 0) {
            pump(now);
        }
        return reclaimed;
    }

    // ------------------------------------------------------------------------------------------
    // listeners

    /** Adds a listener; events are built only while at least one is registered. */
    public void addListener(GateListener listener) {
        Validate.notNull("gate.listener", listener);
        synchronized (this) {
            GateListener[] l = Arrays.copyOf(listeners, listeners.length + 1);
            l[l.length - 1] = listener;
            listeners = l;
        }
    }

    /** Removes a listener (the first registration of it); no effect if absent. */
    public void removeListener(GateListener listener) {
        synchronized (this) {
            GateListener[] l = listeners;
            for (int i = 0; i < l.length; i++) {
                if (l[i] == listener) {
                    GateListener[] n = new GateListener[l.length - 1];
                    System.arraycopy(l, 0, n, 0, i);
                    System.arraycopy(l, i + 1, n, i, l.length - 1 - i);
                    listeners = n.length == 0 ? NO_LISTENERS : n;
                    return;
                }
            }
        }
    }

    /** Whether any listener is registered (events are built only then). */
    public boolean hasListeners() {
        return listeners.length != 0;
    }

    private void fire(GateEvent e) {
        for (GateListener l : listeners) {
            try {
                l.onEvent(e);
            } catch (RuntimeException ex) {
                LOG.warn("gate {}: listener {} failed on {}", gpu, l, e, ex);
            }
        }
    }

    /** Unlocks, then completes async grants and failures and fires the events collected under the lock. */
    private void unlockAndDispatch() {
        if (lock.getHoldCount() > 1 || !hasPending()) {
            lock.unlock();
            return;
        }
        Runnable dispatch = takePending();
        lock.unlock();
        dispatch.run();
    }

    /**
     * Before waiting on a condition: if this thread collected events or grants, hands them out with
     * the lock released (then the caller re-checks instead of waiting).
     *
     * @return whether the lock was released meanwhile
     */
    private boolean flushBeforeWait() {
        if (lock.getHoldCount() > 1 || !hasPending()) {
            return false;
        }
        Runnable dispatch = takePending();
        lock.unlock();
        try {
            dispatch.run();
        } finally {
            lock.lock();
        }
        return true;
    }

    private boolean hasPending() {
        return !pendingEvents.isEmpty() || !pendingGrants.isEmpty() || !pendingFailures.isEmpty();
    }

    private Runnable takePending() {
        List<GateEvent> events = pendingEvents.isEmpty() ? List.of() : new ArrayList<>(pendingEvents);
        pendingEvents.clear();
        List<Waiter> grants = pendingGrants.isEmpty() ? List.of() : new ArrayList<>(pendingGrants);
        List<Lease> leases = pendingLeases.isEmpty() ? List.of() : new ArrayList<>(pendingLeases);
        pendingGrants.clear();
        pendingLeases.clear();
        List<Waiter> failures = pendingFailures.isEmpty() ? List.of() : new ArrayList<>(pendingFailures);
        List<RuntimeException> causes = pendingCauses.isEmpty() ? List.of() : new ArrayList<>(pendingCauses);
        pendingFailures.clear();
        pendingCauses.clear();
        return () -> {
            for (GateEvent e : events) {
                fire(e);
            }
            for (int i = 0; i < grants.size(); i++) {
                if (!grants.get(i).future.complete(leases.get(i)) && grants.get(i).resume == null) {
                    leases.get(i).close(); // cancelled meanwhile: no lease left behind
                }
            }
            for (int i = 0; i < failures.size(); i++) {
                failures.get(i).future.completeExceptionally(causes.get(i));
            }
        };
    }

    // ------------------------------------------------------------------------------------------
    // lifecycle

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return closed;
    }

    /**
     * Closes the gate: acquires fail with {@link GateClosedException}, waiting acquires and parked
     * checkpoints are woken with it, async acquires fail with it, and the gate's timer work stops.
     * Running leases may still be closed. Closing twice is safe.
     */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            for (Tenant t : tenants.values()) {
                t.permitUntil = Tenant.NO_PERMIT;
                for (Iterator<Waiter> it = t.waiters.iterator(); it.hasNext(); ) {
                    Waiter w = it.next();
                    if (w.isAsync()) {
                        it.remove();
                        waiters--;
                        pendingFailures.add(w);
                        pendingCauses.add(new GateClosedException(gpu));
                    }
                }
                for (Waiter r : t.resumers) {
                    pendingFailures.add(r);
                    pendingCauses.add(new GateClosedException(gpu));
                }
                t.resumers.clear();
                t.cond.signalAll();
            }
            if (armedTask != null) {
                armedTask.cancel();
            }
            if (reclaimTask != null) {
                reclaimTask.cancel();
            }
            if (reportTask != null) {
                reportTask.cancel();
            }
        } finally {
            unlockAndDispatch();
        }
        if (ownsTimer) {
            timer.shutdown();
        }
    }

    @Override
    public String toString() {
        return "Gate[" + gpu + "]";
    }

    // ------------------------------------------------------------------------------------------
    // helpers

    private long nowLocked() {
        long now = ticker.read();
        if (now < lastNow) {
            now = lastNow; // clocks of two cores a few nanoseconds apart
        }
        lastNow = now;
        return now;
    }

    private void checkOpen() {
        if (closed) {
            throw new GateClosedException(gpu);
        }
    }

    private Tenant own(Tenant tenant) {
        Validate.notNull("gate.tenant", tenant);
        if (tenant.gate != this) {
            throw new GateStateException(gpu, tenant.name, "belongs to gate " + tenant.gate.gpu);
        }
        if (closed) {
            throw new GateClosedException(gpu);
        }
        return tenant;
    }

    private Tenant known(Tenant tenant) {
        Tenant t = own(tenant);
        if (!t.registered) {
            throw new GateStateException(gpu, t.name, "is not registered");
        }
        return t;
    }

    private static long timeoutNanos(Duration timeout) {
        return DurationChecks.waitLimitNanos("gate.acquire.timeout", timeout);
    }

    /**
     * The token scheduler's clock: the time of the event the gate is feeding it, never going back, so
     * that a hold that ended before the gate took its lock is counted until it really ended.
     */
    private static final class EngineClock implements Ticker {
        private volatile long now;

        EngineClock(long now) {
            this.now = now;
        }

        @Override
        public long read() {
            return now;
        }

        void advanceTo(long t) {
            if (t > now) {
                now = t;
            }
        }
    }
}
