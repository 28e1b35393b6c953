package io.qgpu.core.gate;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The right to run one unit of GPU work (a batch, a kernel sequence) for a tenant of a {@link Gate}.
 * Close it when the work is done; offline work runs in bounded slices and calls
 * {@link #checkpoint()} between them, which holds the thread while online work has the GPU (or the
 * tenant's turn or quota is used up) and returns when it may go on.
 *
 * <pre>{@code
 * try (Lease lease = gate.acquire(train)) {
 *     for (Batch b : epoch) {
 *         runSlice(b);          // one bounded slice of GPU work
 *         lease.checkpoint();   // blocks while online work runs
 *     }
 * }
 * }</pre>
 *
 * <p>Each acquire returns a new lease object and a lease object is never handed out again: once
 * closed, it stays closed. Closing it again, from any thread and at any time, does nothing and never
 * touches a later lease of the same thread or tenant. A lease from {@link Gate#acquire} belongs to
 * the thread that acquired it: if that thread dies with the lease open, the gate reclaims it after
 * {@link GateConfig#deadOwnerTimeoutNanos()}. A lease from {@link Gate#acquireAsync} belongs to no
 * thread.
 *
 * <p>Thread safety: thread-safe; {@link #close()} may be called from any thread, concurrently with
 * itself. {@link #checkpoint()} is meant for the thread doing the work.
 */
public final class Lease implements AutoCloseable {

    static final int RUNNING = 0;
    static final int PARKED = 1;
    static final int CLOSED = 2;

    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(Lease.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final Tenant tenant;
    /** The owner thread's holder, or {@code null} for an async lease. */
    final Holder holder;
    final int epoch;
    final long acquiredAt;
    @SuppressWarnings("unused") // accessed through STATE
    private volatile int state;
    /** When the lease was parked; guarded by the gate's lock. */
    long parkedAt;

    Lease(Tenant tenant, Holder holder, long acquiredAt) {
        this.tenant = tenant;
        this.holder = holder;
        this.epoch = holder == null ? 0 : holder.epoch;
        this.acquiredAt = acquiredAt;
    }

    /**
     * A new running lease for the owner thread of {@code h}. Called on the owner thread, after the
     * tenant's running count was raised.
     */
    static Lease forOwner(Tenant t, Holder h, long now) {
        h.open++;
        return new Lease(t, h, now);
    }

    /** The tenant this lease runs work for. */
    public Tenant tenant() {
        return tenant;
    }

    /** When the lease was acquired (gate ticker time). */
    public long acquiredAtNanos() {
        return acquiredAt;
    }

    /** Whether {@link #close()} was called (or the gate reclaimed the lease). */
    public boolean isClosed() {
        return (int) STATE.getVolatile(this) == CLOSED;
    }

    /**
     * Whether the next {@link #checkpoint()} has to consult the gate now (its permit ran out: online
     * work claimed the GPU, the tenant's turn ended while another tenant waits, or the quota computed
     * at the last consultation is used up). The checkpoint may still let the lease go on after
     * recomputing. Never blocks.
     */
    public boolean shouldYield() {
        return (int) STATE.getVolatile(this) != RUNNING || tenant.gate.ticker.read() >= tenant.permitUntil;
    }

    /**
     * Call between slices of work. Returns at once while the tenant may go on (a volatile read and a
     * ticker read); otherwise stops the lease (its time no longer counts), waits until the tenant may
     * run again, and returns.
     *
     * @throws InterruptedException if the thread is interrupted while waiting; the lease stays
     *                              stopped and open (close it, or call checkpoint again to wait again)
     * @throws GateStateException   if the lease is closed
     * @throws GateClosedException  if the gate is closed
     */
    public void checkpoint() throws InterruptedException {
        if ((int) STATE.getVolatile(this) == RUNNING && tenant.gate.ticker.read() < tenant.permitUntil) {
            return;
        }
        tenant.gate.checkpointSlow(this);
    }

    /**
     * The non-blocking form of {@link #checkpoint()} for asynchronous pipelines: returns a completed
     * future while the tenant may go on; otherwise stops the lease and returns a future that
     * completes (with this lease) when it may run again, or fails with {@link GateClosedException}
     * if the gate closes first. Do not run GPU work while the future is pending.
     *
     * @throws GateStateException  if the lease is closed or already waiting
     * @throws GateClosedException if the gate is closed
     */
    public java.util.concurrent.CompletableFuture<Lease> checkpointAsync() {
        if ((int) STATE.getVolatile(this) == RUNNING && tenant.gate.ticker.read() < tenant.permitUntil) {
            return java.util.concurrent.CompletableFuture.completedFuture(this);
        }
        return tenant.gate.checkpointAsyncSlow(this);
    }

    /**
     * Ends the lease. Calling it again, from any thread, does nothing: a closed lease stays closed and
     * its object is never reused for another lease.
     */
    @Override
    public void close() {
        Holder h = holder;
        if (h == null || Thread.currentThread() == h.thread) {
            if (STATE.compareAndSet(this, RUNNING, CLOSED)) {
                if (h != null) {
                    h.open--;
                }
                tenant.gate.leave(tenant, acquiredAt);
                return;
            }
        }
        if ((int) STATE.getVolatile(this) == CLOSED) {
            return;
        }
        tenant.gate.closeSlow(this);
    }

    int state() {
        return (int) STATE.getVolatile(this);
    }

    boolean casState(int from, int to) {
        return STATE.compareAndSet(this, from, to);
    }

    @Override
    public String toString() {
        return "Lease[" + tenant.name() + " on " + tenant.gate.gpu() + ", "
                + switch (state()) {
                    case RUNNING -> "running";
                    case PARKED -> "parked";
                    default -> "closed";
                } + "]";
    }
}
