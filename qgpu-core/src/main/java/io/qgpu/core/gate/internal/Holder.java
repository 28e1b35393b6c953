package io.qgpu.core.gate.internal;

/**
 * The leases one thread holds of one tenant, so that the gate can reclaim them if the thread dies.
 * {@link #open} is written only by the owner thread (plain writes): the gate reads it only after
 * {@link Thread#isAlive()} returned false, which happens-after everything the thread did (JLS 17.4.4).
 * The other fields are guarded by the gate's lock. A holder refers to no lease, tenant or gate: it
 * is the value of a thread-local of its tenant, and a value that referred back to the tenant would
 * keep the tenant and its gate reachable from every thread that ever used them (a pooled thread
 * lives as long as the pool).
 */
public final class Holder {
    final Thread thread;
    /** Leases acquired on the owner thread, less those it closed on its lock-free path (owner writes only). */
    int open;
    /**
     * Of those, leases closed under the gate's lock: by other threads, or by the owner while parked
     * (written under the gate's lock; {@code open - foreignClosed} is what the owner has open).
     */
    int foreignClosed;
    /** Of those, leases parked at a checkpoint now (under the gate's lock). */
    int parked;
    /** When a reclaim pass first saw the owner dead with leases open, or {@link Long#MIN_VALUE}. */
    long deadSince = Long.MIN_VALUE;
    /**
     * The slot of the last lease the owner thread closed itself, for its next lease (owner reads and
     * writes only). A slot refers to nothing.
     */
    LeaseSlot spare;
    /**
     * Bumped (by {@link #newEpoch}, under the gate's lock) when the gate reclaims this holder's leases;
     * leases of an older epoch are void. Volatile: the owner thread reads it without the lock.
     */
    volatile int epoch;

    Holder(Thread thread) {
        this.thread = thread;
    }

    /** Voids the leases made so far. Under the gate's lock, the only writer of {@link #epoch}. */
    @SuppressWarnings("NonAtomicVolatileUpdate") // safe: every write holds the gate's lock, so none is lost
    void newEpoch() {
        epoch++;
    }
}
