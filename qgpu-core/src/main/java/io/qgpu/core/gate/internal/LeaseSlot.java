package io.qgpu.core.gate.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The state word of a lease, kept apart from the lease object so that it can be used again by the
 * next lease of the same owner thread while the lease object itself is never reused. The word holds
 * an acquire stamp (high bits) and the lease state (low two bits); each use of the slot takes a new
 * stamp, and every transition is a compare-and-set on the whole word (or, for a lease that runs as
 * its tenant's opener, a store by the one thread that won the tenant word's compare-and-set, see
 * {@link LeaseImpl}), so a lease object of an earlier use, whose stamp no longer matches, sees itself
 * closed and can change nothing.
 *
 * <p>Keeping the compare-and-set off the lease object also lets the JIT drop the lease allocation
 * where the caller's lease does not escape (try-with-resources around the work).
 *
 * <p>Thread safety: thread-safe (atomic operations on one volatile long); {@link #reopen} is called
 * only by the thread that owns the slot after it saw the slot's last lease closed.
 */
public final class LeaseSlot {

    static final int STATE_BITS = 2;
    static final long STATE_MASK = (1L << STATE_BITS) - 1;

    private static final VarHandle WORD;

    static {
        try {
            WORD = MethodHandles.lookup().findVarHandle(LeaseSlot.class, "word", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // accessed through WORD
    private volatile long word;

    /**
     * Starts the slot's next use in state {@code state}.
     *
     * @return the new stamp, shifted left by {@link #STATE_BITS} (the word is this plus the state)
     */
    long reopen(int state) {
        long base = (((long) WORD.getOpaque(this) >>> STATE_BITS) + 1) << STATE_BITS;
        WORD.setRelease(this, base | state);
        return base;
    }

    long get() {
        return (long) WORD.getVolatile(this);
    }

    /** A release store: for the one thread that won the right to change the word elsewhere (see {@link LeaseImpl}). */
    void set(long value) {
        WORD.setRelease(this, value);
    }

    boolean compareAndSet(long expect, long update) {
        return WORD.compareAndSet(this, expect, update);
    }
}
