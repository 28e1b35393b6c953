package io.qgpu.core.gate.internal;

import io.qgpu.core.gate.Lease;
import io.qgpu.core.gate.Tenant;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CompletableFuture;

/**
 * A lease: one object per acquire, never reused. Its state goes RUNNING -> PARKED -> RUNNING ... ->
 * CLOSED by compare-and-set; CLOSED is final, so a second close (from any thread, however late) finds
 * it and does nothing. The fast paths of close and checkpoint are here; everything else is the
 * tenant's gate's {@link Checkpoints}.
 *
 * <p>Thread safety: thread-safe (see {@link Lease}).
 */
public final class LeaseImpl implements Lease {

    static final int RUNNING = 0;
    static final int PARKED = 1;
    static final int CLOSED = 2;

    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(LeaseImpl.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final TenantState tenant;
    /** The owner thread's holder, or {@code null} for an async lease. */
    final Holder holder;
    final int epoch;
    final long acquiredAt;
    @SuppressWarnings("unused") // accessed through STATE
    private volatile int state;
    /** When the lease was parked; guarded by the gate's lock. */
    long parkedAt;

    LeaseImpl(TenantState tenant, Holder holder, long acquiredAt) {
        this.tenant = tenant;
        this.holder = holder;
        this.epoch = holder == null ? 0 : holder.epoch;
        this.acquiredAt = acquiredAt;
    }

    /**
     * A new running lease for the owner thread of {@code h}. Called on the owner thread, after the
     * tenant's running count was raised.
     */
    static LeaseImpl forOwner(TenantState t, Holder h, long now) {
        h.open++;
        return new LeaseImpl(t, h, now);
    }

    @Override
    public Tenant tenant() {
        return tenant;
    }

    @Override
    public long acquiredAtNanos() {
        return acquiredAt;
    }

    @Override
    public boolean isClosed() {
        return (int) STATE.getVolatile(this) == CLOSED;
    }

    @Override
    public boolean shouldYield() {
        return (int) STATE.getVolatile(this) != RUNNING || tenant.core.ticker.read() >= tenant.permitUntil;
    }

    @Override
    public void checkpoint() throws InterruptedException {
        if ((int) STATE.getVolatile(this) == RUNNING && tenant.core.ticker.read() < tenant.permitUntil) {
            return;
        }
        tenant.core.checkpoints.checkpointSlow(this);
    }

    @Override
    public CompletableFuture<Lease> checkpointAsync() {
        if ((int) STATE.getVolatile(this) == RUNNING && tenant.core.ticker.read() < tenant.permitUntil) {
            return CompletableFuture.completedFuture(this);
        }
        return tenant.core.checkpoints.checkpointAsyncSlow(this);
    }

    @Override
    public void close() {
        Holder h = holder;
        if (h == null || Thread.currentThread() == h.thread) {
            if (STATE.compareAndSet(this, RUNNING, CLOSED)) {
                if (h != null) {
                    h.open--;
                }
                tenant.core.checkpoints.leave(tenant, acquiredAt);
                return;
            }
        }
        if ((int) STATE.getVolatile(this) == CLOSED) {
            return;
        }
        tenant.core.checkpoints.closeSlow(this);
    }

    int state() {
        return (int) STATE.getVolatile(this);
    }

    boolean casState(int from, int to) {
        return STATE.compareAndSet(this, from, to);
    }

    @Override
    public String toString() {
        return "Lease[" + tenant.name() + " on " + tenant.core.gpu + ", "
                + switch (state()) {
                    case RUNNING -> "running";
                    case PARKED -> "parked";
                    default -> "closed";
                } + "]";
    }
}
