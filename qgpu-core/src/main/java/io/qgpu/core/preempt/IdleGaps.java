package io.qgpu.core.preempt;

import io.qgpu.api.Validate;
import java.util.Arrays;

/**
 * The most recent online idle gaps of one GPU: for each time online work went idle and came back,
 * how long it stayed away (from the last online tenant going idle to the next online submission).
 * Under Poisson arrivals these are the online inter-arrival times as seen by an idle GPU. A
 * {@link ReleasePolicy} reads them; {@link PreemptionState#idleGaps()} keeps them per GPU.
 *
 * <pre>{@code
 * IdleGaps g = IdleGaps.empty(64).plus(40_000_000L).plus(3_000_000L);
 * g.size();        // 2
 * g.toArray();     // [40000000, 3000000], oldest first
 * }</pre>
 *
 * <p>Thread safety: immutable; {@link #plus} returns a new value.
 */
public final class IdleGaps {

    private static final IdleGaps NONE = new IdleGaps(new long[0], 0, 0);

    private final long[] ring;
    private final int head;
    private final int size;

    private IdleGaps(long[] ring, int head, int size) {
        this.ring = ring;
        this.head = head;
        this.size = size;
    }

    /** No gaps yet, keeping at most {@code capacity} (the oldest is dropped first). */
    public static IdleGaps empty(int capacity) {
        Validate.between("idleGaps.capacity", capacity, 0, 1 << 16);
        return capacity == 0 ? NONE : new IdleGaps(new long[capacity], 0, 0);
    }

    /** These gaps and one more ({@code gapNanos} at least 0), dropping the oldest when full. */
    public IdleGaps plus(long gapNanos) {
        Validate.atLeast("idleGaps.gapNanos", gapNanos, 0);
        if (ring.length == 0) {
            return this;
        }
        long[] next = ring.clone();
        if (size < ring.length) {
            next[(head + size) % ring.length] = gapNanos;
            return new IdleGaps(next, head, size + 1);
        }
        next[head] = gapNanos;
        return new IdleGaps(next, (head + 1) % ring.length, size);
    }

    public int size() {
        return size;
    }

    public int capacity() {
        return ring.length;
    }

    /** The gaps, oldest first. */
    public long[] toArray() {
        long[] out = new long[size];
        for (int k = 0; k < size; k++) {
            out[k] = ring[(head + k) % ring.length];
        }
        return out;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IdleGaps g && g.ring.length == ring.length && Arrays.equals(g.toArray(), toArray());
    }

    @Override
    public int hashCode() {
        return 31 * ring.length + Arrays.hashCode(toArray());
    }

    @Override
    public String toString() {
        return "IdleGaps" + Arrays.toString(toArray());
    }
}
