package io.qgpu.core.gate;

import io.qgpu.api.Validate;
import io.qgpu.core.gate.internal.GateCore;
import io.qgpu.core.gate.internal.Handles;
import io.qgpu.core.gate.internal.Holder;
import io.qgpu.core.gate.internal.LeaseImpl;
import io.qgpu.core.gate.internal.LeaseSlot;
import io.qgpu.core.gate.internal.TenantState;
import io.qgpu.core.preempt.GpuMode;
import io.qgpu.core.preempt.PreemptionState;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

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
 * <p>How it decides (the preemption machine and the token scheduler it drives), its lock-free fast
 * path, its accounting and its guarantees, each with the test that holds it: the project's
 * {@code docs/gate.md} and the package documentation. In short: a tenant at its limit waits, a lease
 * that started within the limit ends its slice, online work waits for at most one offline slice,
 * {@link #unregister} never returns while a lease of the tenant is open, and {@link #close()} may be
 * called any number of times.
 *
 * <p>This class is a facade over the non-exported parts in {@code io.qgpu.core.gate.internal}.
 *
 * <p>Thread safety: thread-safe. Listeners and future callbacks are called outside the gate's lock.
 */
public final class Gate implements AutoCloseable {

    private final GateCore core;

    private Gate(String gpu, GateConfig config, @Nullable GateTimer sharedTimer) {
        this.core = new GateCore(new Handles() {
            @Override
            public TenantState tenant(GateCore c, GateTenantSpec spec, long limitNanos) {
                return new GateTenant(Gate.this, c, spec, limitNanos);
            }

            @Override
            public LeaseImpl lease(TenantState t, Holder holder, LeaseSlot slot, long acquiredAt, long entry) {
                return new GateLease(t, holder, slot, acquiredAt, entry);
            }
        }, gpu, config, sharedTimer);
    }

    /**
     * A gate for one GPU with a timer thread of its own (unless the config names a timer). Prefer
     * {@link GateRegistry#gate(String)}, which keeps one gate per GPU in the process and one timer
     * thread for all of them.
     */
    public static Gate create(String gpuUuid, GateConfig config) {
        return new Gate(gpuUuid, config, null);
    }

    /** A gate that uses {@code sharedTimer} (not shut down by the gate) unless its config names a timer. */
    static Gate create(String gpuUuid, GateConfig config, GateTimer sharedTimer) {
        return new Gate(gpuUuid, config, sharedTimer);
    }

    /** The state behind a tenant handle (every {@link Tenant} is a {@link GateTenant}: the interface is sealed). */
    private static TenantState state(Tenant tenant) {
        return (GateTenant) Validate.notNull("gate.tenant", tenant);
    }

    /** Every lease the core makes is a {@link GateLease} (see {@link Handles}). */
    private static Lease lease(LeaseImpl l) {
        return (GateLease) l;
    }

    /**
     * The core's future of a lease as the public type: its value is a {@link GateLease}, and a value
     * completed from outside is a {@link Lease}, hence also a {@link GateLease} (sealed), so both
     * views of the one future hold what they claim.
     */
    @SuppressWarnings("unchecked")
    static CompletableFuture<Lease> asLeases(CompletableFuture<LeaseImpl> f) {
        return (CompletableFuture<Lease>) (CompletableFuture<?>) f;
    }

    /** As {@link #asLeases(CompletableFuture)}, for an optional (immutable) lease. */
    @SuppressWarnings("unchecked")
    private static Optional<Lease> asLeases(Optional<LeaseImpl> l) {
        return (Optional<Lease>) (Optional<?>) l;
    }

    /** The GPU this gate is bound to. */
    public String gpu() {
        return core.gpu();
    }

    public GateConfig config() {
        return core.config();
    }

    /**
     * Registers a tenant. Its limit is what the GPU's isolation policy makes of its request and limit.
     *
     * @throws GateStateException                 if the name is taken
     * @throws io.qgpu.api.InvalidValueException if the policy refuses the quota (fixed-share needs a request)
     * @throws GateClosedException                if the gate is closed
     */
    public Tenant register(GateTenantSpec spec) {
        return (GateTenant) core.register(spec);
    }

    /**
     * Removes a tenant that has no open lease and no waiting acquire.
     *
     * @throws GateStateException if it has open leases or waiting acquires, or is not this gate's
     */
    public void unregister(Tenant tenant) {
        core.unregister(state(tenant));
    }

    /** The registered tenants, in registration order. */
    public List<Tenant> tenants() {
        List<TenantState> states = core.tenants();
        List<Tenant> out = new ArrayList<>(states.size());
        for (TenantState t : states) {
            out.add((GateTenant) t);
        }
        return List.copyOf(out);
    }

    /**
     * Blocks until {@code tenant} may run GPU work, and returns its lease (a new object).
     *
     * @throws InterruptedException if interrupted while waiting (no lease is left behind)
     * @throws GateClosedException  if the gate is closed
     * @throws GateStateException   if the tenant is not registered with this gate
     */
    public Lease acquire(Tenant tenant) throws InterruptedException {
        return lease(core.waiting().acquire(state(tenant)));
    }

    /**
     * Like {@link #acquire(Tenant)}, giving up after {@code timeout} of the gate's ticker (a timeout
     * too long for a {@code long} of nanoseconds waits without limit). A zero timeout waits for
     * nothing: the lease comes only if {@link #tryAcquire} would give one (no preemption is asked).
     *
     * @throws GateTimeoutException              if the timeout passed (no lease is left behind)
     * @throws io.qgpu.api.InvalidValueException if the timeout is null or negative
     */
    public Lease acquire(Tenant tenant, Duration timeout) throws InterruptedException {
        return lease(core.waiting().acquire(state(tenant), timeout));
    }

    /**
     * A lease if {@code tenant} may run now without waiting for anyone, else an empty optional (never
     * {@code null}): an online tenant does not preempt running offline work for it, an offline tenant
     * gets it only if the GPU's token is free or its own, and a tenant at its limit gets none. Never
     * blocks for GPU time (it may take the gate's lock briefly).
     *
     * <pre>{@code
     * Optional<Lease> lease = gate.tryAcquire(chat);
     * if (lease.isEmpty()) {
     *     return shedLoad();
     * }
     * try (Lease l = lease.get()) {
     *     runBatch();
     * }
     * }</pre>
     *
     * @throws GateClosedException if the gate is closed
     * @throws GateStateException  if the tenant is not registered with this gate
     */
    public Optional<Lease> tryAcquire(Tenant tenant) {
        return asLeases(core.waiting().tryAcquire(state(tenant)));
    }

    /**
     * A future that completes with a lease when {@code tenant} may run. Cancelling the future (or
     * completing it otherwise) withdraws the request; a lease that raced with the cancellation is
     * closed at once. The lease belongs to no thread (it is not reclaimed when a thread dies).
     */
    public CompletableFuture<Lease> acquireAsync(Tenant tenant) {
        return asLeases(core.waiting().acquireAsync(state(tenant), null));
    }

    /**
     * Like {@link #acquireAsync(Tenant)}; the future fails with {@link GateTimeoutException} after
     * {@code timeout} of the gate's ticker ({@code null}: no timeout).
     */
    public CompletableFuture<Lease> acquireAsync(Tenant tenant, Duration timeout) {
        return asLeases(core.waiting().acquireAsync(state(tenant), timeout));
    }

    /** The tenant's use of the GPU now. */
    public TenantUsage usage(Tenant tenant) {
        return core.usage(state(tenant));
    }

    /** Every tenant's use of the GPU now, in registration order. */
    public List<TenantUsage> usage() {
        return core.usage();
    }

    /** The current correction factor (1 without a usage source). */
    public double correctionFactor() {
        return core.quota().factor();
    }

    /** The GPU's preemption mode now. */
    public GpuMode mode() {
        return preemptionState().mode();
    }

    /** The preemption machine's state now (a value). */
    public PreemptionState preemptionState() {
        return core.preemptionState();
    }

    /** Open leases of all tenants (running and parked), a snapshot. */
    public int openLeases() {
        return core.openLeases();
    }

    /** Acquires waiting now, a snapshot. */
    public int waitingAcquires() {
        return core.waitingAcquires();
    }

    /**
     * Looks for leases whose owner thread died: the first pass that sees one notes the time, a pass at
     * least {@link GateConfig#deadOwnerTimeoutNanos()} later closes them (and fails the futures of
     * their pending async checkpoints, and the checkpoints of them that other threads block in, with
     * {@link GateStateException}). Runs on the gate's timer by itself; call it to check now.
     *
     * @return how many leases were reclaimed
     */
    public int reclaimDeadOwners() {
        return core.owners().reclaimDeadOwners();
    }

    /** Adds a listener; events are built only while at least one is registered. */
    public void addListener(GateListener listener) {
        core.events().addListener(listener);
    }

    /** Removes a listener (the first registration of it); no effect if absent. */
    public void removeListener(GateListener listener) {
        core.events().removeListener(listener);
    }

    /** Whether any listener is registered (events are built only then). */
    public boolean hasListeners() {
        return core.events().hasListeners();
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return core.isClosed();
    }

    /**
     * Closes the gate: acquires fail with {@link GateClosedException}, waiting acquires and parked
     * checkpoints are woken with it, async acquires and async checkpoints fail with it, and the gate's
     * timer work stops (its own timer thread, if it has one, is shut down). Running leases may still
     * be closed. Calling it again does nothing.
     */
    @Override
    public void close() {
        core.close();
    }

    @Override
    public String toString() {
        return core.toString();
    }
}
