package io.qgpu.core.internal;

/**
 * Saturating {@code long} arithmetic: where the exact result does not fit in a {@code long}, the
 * result is {@link Long#MAX_VALUE} (overflow upwards) or {@link Long#MIN_VALUE} (overflow
 * downwards) instead of wrapping around. Used for deadlines ({@code now + timeout}), byte totals
 * and products of counts, where a wrapped value would silently turn a far-away deadline into a
 * past one.
 *
 * <p>Not part of the exported API. Stateless; safe to call from any thread.
 */
public final class Saturating {

    private Saturating() {}

    /** {@code a + b}, saturated at {@link Long#MIN_VALUE} / {@link Long#MAX_VALUE}. */
    public static long add(long a, long b) {
        long r = a + b;
        // Overflow iff both operands have the sign opposite to the result's.
        if (((a ^ r) & (b ^ r)) < 0) {
            return a < 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
        return r;
    }

    /** {@code a - b}, saturated at {@link Long#MIN_VALUE} / {@link Long#MAX_VALUE}. */
    public static long subtract(long a, long b) {
        long r = a - b;
        // Overflow iff the operands have different signs and the result's sign differs from a's.
        if (((a ^ b) & (a ^ r)) < 0) {
            return a < 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
        return r;
    }

    /** {@code a * b}, saturated at {@link Long#MIN_VALUE} / {@link Long#MAX_VALUE}. */
    public static long multiply(long a, long b) {
        long hi = Math.multiplyHigh(a, b);
        long lo = a * b;
        // The exact product fits iff the high word is the sign extension of the low word.
        if ((hi == 0 && lo >= 0) || (hi == -1 && lo < 0)) {
            return lo;
        }
        return ((a ^ b) < 0) ? Long.MIN_VALUE : Long.MAX_VALUE;
    }
}
