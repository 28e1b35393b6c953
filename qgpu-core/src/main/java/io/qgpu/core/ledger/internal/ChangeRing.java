package io.qgpu.core.ledger.internal;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.IntConsumer;

/**
 * The change feed's record: every successful change of a node's state takes the next number of a
 * sequence and writes a stamp (sequence, position) into a ring of {@link #CAPACITY} stamps,
 * <em>after</em> the node's compare-and-set. A reader that has read {@link #sequence()} as
 * {@code q} and then reads a node sees every change numbered below {@code q}. A drain that cannot
 * prove it delivered every stamp since its start (a writer lapped the ring) answers {@code -1}.
 *
 * <p>Thread safety: thread-safe and lock-free; publishing costs one {@code getAndIncrement} and one
 * array store; any number of threads may drain concurrently.
 */
public final class ChangeRing {
    /** How many stamps the ring keeps. */
    public static final int CAPACITY = 1 << 13;
    private static final int POS_BITS = 24;
    private static final long POS_MASK = (1L << POS_BITS) - 1;
    private static final long TAG_MASK = (1L << (64 - POS_BITS)) - 1;

    private final AtomicLong sequence = new AtomicLong();
    private final AtomicLongArray ring;

    /** A ring for {@code positions} nodes; beyond 2^24 positions nothing can be stamped and every drain answers -1. */
    public ChangeRing(int positions) {
        this.ring = positions <= POS_MASK ? new AtomicLongArray(CAPACITY) : null;
    }

    /** How many changes were numbered so far: the next change gets this number. */
    public long sequence() {
        return sequence.get();
    }

    /**
     * Hands {@code positions} the position of every change numbered from {@code fromSequence} on whose
     * stamp is written, in sequence order, possibly with repeats. A change that is numbered but whose
     * stamp is not written yet (its writer is between the two steps of {@link #changed}) does not hold
     * back the written stamps after it: they are delivered too, and the answer is that change's number,
     * so the next drain delivers it (and the ones after it again). So once a writer's
     * {@link #changed} has returned, every drain that starts later delivers its position.
     *
     * @return where to drain from next time (every change below it was delivered), or {@code -1} when
     *         the ring no longer holds every stamp since {@code fromSequence} (or {@code fromSequence}
     *         is not a sequence of this ring)
     */
    public long drain(long fromSequence, IntConsumer positions) {
        long head = sequence.get();
        if (ring == null || fromSequence < 0 || fromSequence > head || head - fromSequence > CAPACITY) {
            return -1;
        }
        long resume = head;
        for (long q = fromSequence; q < head; q++) {
            long stamp = ring.getAcquire(index(q));
            if (stamp >>> POS_BITS != tag(q)) {
                if (sequence.get() - q > CAPACITY) {
                    return -1; // overwritten by a writer that lapped the ring
                }
                resume = Math.min(resume, q); // numbered but not written yet: the next drain resumes here
                continue;
            }
            positions.accept((int) (stamp & POS_MASK));
        }
        return resume;
    }

    /** Publishes a change of the node at {@code position}; called after its compare-and-set. */
    public void changed(int position) {
        write(number(), position);
    }

    /** The first step of {@link #changed}: takes the change's number (apart for tests of a writer between the steps). */
    long number() {
        return sequence.getAndIncrement();
    }

    /** The second step of {@link #changed}: writes the stamp of change {@code q}. */
    void write(long q, int position) {
        if (ring != null) {
            ring.setRelease(index(q), (tag(q) << POS_BITS) | position);
        }
    }

    private static int index(long q) {
        return (int) (q & (CAPACITY - 1));
    }

    /** Never 0 for a sequence below 2^40 - 1, so an unwritten ring entry never matches. */
    private static long tag(long q) {
        return (q + 1) & TAG_MASK;
    }
}
