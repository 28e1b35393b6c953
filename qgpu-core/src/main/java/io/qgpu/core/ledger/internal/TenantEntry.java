package io.qgpu.core.ledger.internal;

import io.qgpu.api.Placement;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * One tenant's reservation and where it is in its life: claimed ({@code PENDING}) before its
 * slices are installed on the node, {@code COMMITTED} right after, {@code RELEASING} while its
 * slices are taken off, {@code GONE} after (or when the reservation was refused or failed). A
 * reader that meets a pending or releasing entry waits the few instructions until it is settled,
 * so that the node state and the tenant table never disagree to an observer: a reservation and a
 * release take effect at the node's compare-and-set.
 *
 * <p>Every transition out of {@code PENDING} and {@code RELEASING} is made by the one thread that
 * made the transition into it, in a {@code finally} ({@link TenantTable}), so a waiter never waits
 * for a thread that has given up.
 *
 * <p>Thread safety: thread-safe; the status is a volatile field changed by compare-and-set.
 */
public final class TenantEntry {
    static final int PENDING = 0;
    static final int COMMITTED = 1;
    static final int GONE = 2;
    static final int RELEASING = 3;
    private static final AtomicIntegerFieldUpdater<TenantEntry> STATUS =
            AtomicIntegerFieldUpdater.newUpdater(TenantEntry.class, "status");

    private final Placement placement;
    private volatile int status;

    /** A pending entry. */
    TenantEntry(Placement placement) {
        this.placement = placement;
    }

    /** The placement this entry reserves (or reserved). */
    public Placement placement() {
        return placement;
    }

    /** Settles a pending entry: committed when {@code ok}, else gone. */
    void resolve(boolean ok) {
        status = ok ? COMMITTED : GONE;
    }

    /** Whether committed now, without waiting (bulk reads skip unsettled entries). */
    public boolean isCommitted() {
        return status == COMMITTED;
    }

    /**
     * Claims the right to release; exactly one caller wins, and only for a committed entry. A loser
     * waits until the winner's release is done, so that it answers "nothing held" only once the
     * slices are off the node (a loser that returned at its failed compare-and-set would let its
     * caller see the tenant still reserved).
     */
    boolean startRelease() {
        while (await()) {
            if (STATUS.compareAndSet(this, COMMITTED, RELEASING)) {
                return true;
            }
        }
        return false;
    }

    /** Ends a release this thread started. */
    void released() {
        status = GONE;
    }

    /** Waits until settled; whether the reservation is committed. */
    public boolean await() {
        int st;
        while ((st = status) == PENDING || st == RELEASING) {
            Thread.onSpinWait();
        }
        return st == COMMITTED;
    }
}
