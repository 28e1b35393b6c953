package io.qgpu.core.gate.internal;

import io.qgpu.core.gate.Lease;
import io.qgpu.core.gate.Tenant;
import java.util.concurrent.CompletableFuture;

/**
 * A lease: one object per acquire, never reused. Its state goes RUNNING -> PARKED -> RUNNING ... ->
 * CLOSED by compare-and-set on its {@link LeaseSlot}, qualified by the stamp the lease got at acquire;
 * CLOSED is final, so a second close (from any thread, however late) finds it and does nothing. The
 * slot of a lease its owner thread closed is used again by that thread's next lease, under a new
 * stamp: the old lease object then reads as closed and its compare-and-sets fail, so it can never end,
 * park or resume the later lease. The fast paths of close and checkpoint are here; everything else is
 * the tenant's gate's {@link Checkpoints}.
 *
 * <p>Thread safety: thread-safe (see {@link Lease}).
 */
public final class LeaseImpl implements Lease {

    static final int RUNNING = 0;
    static final int PARKED = 1;
    static final int CLOSED = 2;

    final TenantState tenant;
    /** The owner thread's holder, or {@code null} for an async lease. */
    final Holder holder;
    final int epoch;
    final long acquiredAt;
    private final LeaseSlot slot;
    /** This lease's stamp in {@link #slot}, shifted left by {@link LeaseSlot#STATE_BITS}. */
    private final long stamp;
    /** When the lease was parked; guarded by the gate's lock. */
    long parkedAt;

    private LeaseImpl(TenantState tenant, Holder holder, LeaseSlot slot, long acquiredAt) {
        this.tenant = tenant;
        this.holder = holder;
        this.epoch = holder == null ? 0 : holder.epoch;
        this.acquiredAt = acquiredAt;
        this.slot = slot;
        this.stamp = slot.reopen(RUNNING);
    }

    /** A new running lease that belongs to no thread (an async acquire), with a slot of its own. */
    static LeaseImpl unowned(TenantState t, long now) {
        return new LeaseImpl(t, null, new LeaseSlot(), now);
    }

    /**
     * A new running lease for the owner thread of {@code h}, in the slot its last lease closed by
     * that thread left (else a new one). Called on the owner thread, after the tenant's running count
     * was raised.
     */
    static LeaseImpl forOwner(TenantState t, Holder h, long now) {
        h.open++;
        LeaseSlot s = h.spare;
        if (s == null) {
            s = new LeaseSlot();
        } else {
            h.spare = null;
        }
        return new LeaseImpl(t, h, s, now);
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
        return state() == CLOSED;
    }

    @Override
    public boolean shouldYield() {
        return state() != RUNNING || tenant.core.ticker.read() >= tenant.permitUntil;
    }

    @Override
    public void checkpoint() throws InterruptedException {
        if (slot.get() == (stamp | RUNNING) && tenant.core.ticker.read() < tenant.permitUntil) {
            return;
        }
        tenant.core.checkpoints.checkpointSlow(this);
    }

    @Override
    public CompletableFuture<Lease> checkpointAsync() {
        if (slot.get() == (stamp | RUNNING) && tenant.core.ticker.read() < tenant.permitUntil) {
            return CompletableFuture.completedFuture(this);
        }
        return tenant.core.checkpoints.checkpointAsyncSlow(this);
    }

    @Override
    public void close() {
        Holder h = holder;
        if (h == null || Thread.currentThread() == h.thread) {
            if (slot.compareAndSet(stamp | RUNNING, stamp | CLOSED)) {
                if (h != null) {
                    h.open--;
                    h.spare = slot; // the owner's next lease takes it, under a new stamp
                }
                tenant.core.checkpoints.leave(tenant, acquiredAt);
                return;
            }
        }
        if (state() == CLOSED) {
            return;
        }
        tenant.core.checkpoints.closeSlow(this);
    }

    /** The state; {@link #CLOSED} also once the slot has moved on to a later lease. */
    int state() {
        long w = slot.get();
        return (w & ~LeaseSlot.STATE_MASK) == stamp ? (int) (w & LeaseSlot.STATE_MASK) : CLOSED;
    }

    /** A transition of this lease (never of a later lease in the same slot). */
    boolean casState(int from, int to) {
        return slot.compareAndSet(stamp | from, stamp | to);
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
