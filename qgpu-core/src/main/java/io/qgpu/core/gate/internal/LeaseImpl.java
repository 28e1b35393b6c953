package io.qgpu.core.gate.internal;

import java.util.concurrent.CompletableFuture;

/**
 * A lease: one object per acquire, never reused. Its state goes RUNNING -> PARKED -> RUNNING ... ->
 * CLOSED by compare-and-set on its {@link LeaseSlot}, qualified by the stamp the lease got at acquire;
 * CLOSED is final, so a second close (from any thread, however late) finds it and does nothing.
 *
 * <p>A lease acquired on the lock-free path that opens its tenant's busy period starts in
 * RUNNING_OPENER instead: it holds the opener bit of the tenant's word ({@link TenantState#OPENER}),
 * and whoever stops it first clears that bit by compare-and-set on the word: its owner's close in
 * the same compare-and-set that lowers the running count ({@link TenantState#leaveOpener}), so that
 * close makes two atomic updates in all (enter and leave) instead of three; any other stop (a close
 * by another thread, parking at a checkpoint) under the gate's lock with {@link TenantState#clearOpener}.
 * The winner then writes the slot. A stop under the lock that loses knows the owner closed the lease
 * that instant (nothing else clears the bit outside the lock) and treats it as closed. A parked lease
 * resumes in RUNNING, never again as the opener.
 *
 * <p>The
 * slot of a lease its owner thread closed is used again by that thread's next lease, under a new
 * stamp: the old lease object then reads as closed and its compare-and-sets fail, so it can never end,
 * park or resume the later lease. The fast paths of close and checkpoint are here; everything else is
 * the tenant's gate's {@link Checkpoints}.
 *
 * <p>The object handed out as a {@code io.qgpu.core.gate.Lease} is a final subclass of this in the gate's
 * package, made by the gate's {@link Handles}; this class knows nothing of it.
 *
 * <p>Thread safety: thread-safe: close from any thread, concurrently with itself.
 */
public abstract class LeaseImpl {

    static final int RUNNING = 0;
    /** Running, holding the opener bit of busy period {@link #period}; {@link #state()} reads it as RUNNING. */
    static final int RUNNING_OPENER = 1;
    static final int PARKED = 2;
    static final int CLOSED = 3;

    final TenantState tenant;
    /** The owner thread's holder, or {@code null} for an async lease. */
    final Holder holder;
    final int epoch;
    final long acquiredAt;
    private final LeaseSlot slot;
    /** Whether the lease was created holding the opener bit of busy period {@link #period}. */
    private final boolean opener;
    private final int period;
    /** This lease's stamp in {@link #slot}, shifted left by {@link LeaseSlot#STATE_BITS}. */
    private final long stamp;
    /** When the lease was parked; guarded by the gate's lock. */
    long parkedAt;

    protected LeaseImpl(TenantState tenant, Holder holder, LeaseSlot slot, long acquiredAt, long entry) {
        this.tenant = tenant;
        this.holder = holder;
        this.epoch = holder == null ? 0 : holder.epoch;
        this.acquiredAt = acquiredAt;
        this.slot = slot;
        this.opener = entry >= 0;
        this.period = (int) entry;
        this.stamp = slot.reopen(opener ? RUNNING_OPENER : RUNNING);
    }

    /** A new running lease that belongs to no thread (an async acquire), with a slot of its own. */
    static LeaseImpl unowned(TenantState t, long now) {
        return t.core.handles.lease(t, null, new LeaseSlot(), now, TenantState.JOINED);
    }

    /**
     * A new running lease for the owner thread of {@code h}, in the slot its last lease closed by
     * that thread left (else a new one). Called on the owner thread, after the tenant's running count
     * was raised.
     *
     * @param entry what {@link TenantState#enter} answered: {@link TenantState#JOINED}, or the period
     *              whose opener bit the lease holds
     */
    static LeaseImpl forOwner(TenantState t, Holder h, long now, long entry) {
        h.open++;
        LeaseSlot s = h.spare;
        if (s == null) {
            s = new LeaseSlot();
        } else {
            h.spare = null;
        }
        return t.core.handles.lease(t, h, s, now, entry);
    }

    /** The tenant's state. */
    protected final TenantState tenantState() {
        return tenant;
    }

    public final long acquiredAtNanos() {
        return acquiredAt;
    }

    public final boolean isClosed() {
        return state() == CLOSED;
    }

    public final boolean shouldYield() {
        return state() != RUNNING || tenant.core.ticker.read() >= tenant.permitUntil;
    }

    public final void checkpoint() throws InterruptedException {
        if (runningNow() && tenant.core.ticker.read() < tenant.permitUntil) {
            return;
        }
        tenant.core.checkpoints.checkpointSlow(this);
    }

    /** The non-blocking checkpoint; the future's value is this lease. */
    protected final CompletableFuture<LeaseImpl> checkpointFuture() {
        if (runningNow() && tenant.core.ticker.read() < tenant.permitUntil) {
            return CompletableFuture.completedFuture(this);
        }
        return tenant.core.checkpoints.checkpointAsyncSlow(this);
    }

    public final void close() {
        Holder h = holder;
        if (h == null || Thread.currentThread() == h.thread) {
            if (opener && slot.get() == (stamp | RUNNING_OPENER)) {
                long now = tenant.core.ticker.read();
                int left = tenant.leaveOpener(period, now);
                if (left >= 0) {
                    slot.set(stamp | CLOSED); // the bit was the lease's running state: nobody else writes the slot now
                    closedByOwner(h);
                    tenant.core.checkpoints.left(tenant, left > 0, now, acquiredAt);
                    return;
                }
            } else if (slot.compareAndSet(stamp | RUNNING, stamp | CLOSED)) {
                closedByOwner(h);
                tenant.core.checkpoints.leave(tenant, acquiredAt);
                return;
            }
        }
        if (state() == CLOSED) {
            return;
        }
        tenant.core.checkpoints.closeSlow(this);
    }

    private void closedByOwner(Holder h) {
        if (h != null) {
            h.open--;
            h.spare = slot; // the owner's next lease takes it, under a new stamp
        }
    }

    /** Whether the lease runs (RUNNING or RUNNING_OPENER, under this lease's stamp). */
    private boolean runningNow() {
        return (slot.get() & ~(long) RUNNING_OPENER) == stamp;
    }

    /**
     * The state, RUNNING_OPENER read as {@link #RUNNING}; {@link #CLOSED} also once the slot has moved
     * on to a later lease.
     */
    int state() {
        long w = slot.get();
        if ((w & ~LeaseSlot.STATE_MASK) != stamp) {
            return CLOSED;
        }
        int s = (int) (w & LeaseSlot.STATE_MASK);
        return s == RUNNING_OPENER ? RUNNING : s;
    }

    /** A transition of this lease (never of a later lease in the same slot) from a state other than running. */
    boolean casState(int from, int to) {
        return slot.compareAndSet(stamp | from, stamp | to);
    }

    /**
     * Under the gate's lock: stops the lease if it runs, to {@code to} ({@link #PARKED} or
     * {@link #CLOSED}); the caller then lowers the tenant's count ({@link TenantState#leaveOne}).
     *
     * @return false if it was not running, or its owner closed it this instant (it is closed then)
     */
    boolean stopRunning(int to) {
        long w = slot.get();
        if (w == (stamp | RUNNING)) {
            return slot.compareAndSet(w, stamp | to);
        }
        if (w == (stamp | RUNNING_OPENER) && tenant.clearOpener(period)) {
            slot.set(stamp | to); // the bit was cleared here: the owner's close now fails over to the lock
            return true;
        }
        return false;
    }

    /**
     * Under the gate's lock, for a lease whose holder was reclaimed (its count already taken back):
     * marks it closed, whatever state it was left in.
     */
    void voidReclaimed() {
        long w = slot.get();
        while ((w & ~LeaseSlot.STATE_MASK) == stamp && (w & LeaseSlot.STATE_MASK) != CLOSED
                && !slot.compareAndSet(w, stamp | CLOSED)) {
            w = slot.get();
        }
    }

    @Override
    public final String toString() {
        return "Lease[" + tenant.name() + " on " + tenant.core.gpu + ", "
                + switch (state()) {
                    case RUNNING -> "running";
                    case PARKED -> "parked";
                    default -> "closed";
                } + "]";
    }
}
