package io.qgpu.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.math.BigInteger;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class SaturatingTest {

    private static final BigInteger MAX = BigInteger.valueOf(Long.MAX_VALUE);
    private static final BigInteger MIN = BigInteger.valueOf(Long.MIN_VALUE);

    private static long clamp(BigInteger exact) {
        return exact.max(MIN).min(MAX).longValueExact();
    }

    private static final long[] EDGES = {
        Long.MIN_VALUE, Long.MIN_VALUE + 1, -3_037_000_500L, -65_536, -2, -1, 0, 1, 2, 65_536,
        3_037_000_499L, 3_037_000_500L, Long.MAX_VALUE - 1, Long.MAX_VALUE
    };

    private static void check(long a, long b) {
        BigInteger x = BigInteger.valueOf(a);
        BigInteger y = BigInteger.valueOf(b);
        assertEquals(clamp(x.add(y)), Saturating.add(a, b), () -> a + " + " + b);
        assertEquals(clamp(x.subtract(y)), Saturating.subtract(a, b), () -> a + " - " + b);
        assertEquals(clamp(x.multiply(y)), Saturating.multiply(a, b), () -> a + " * " + b);
    }

    @Test
    void edgeValuesMatchTheClampedExactResult() {
        for (long a : EDGES) {
            for (long b : EDGES) {
                check(a, b);
            }
        }
    }

    @Test
    void randomValuesMatchTheClampedExactResult() {
        SplittableRandom rnd = new SplittableRandom(11);
        for (int i = 0; i < 20_000; i++) {
            // Mix full-range values with values near the square root of the range.
            long a = (i & 1) == 0 ? rnd.nextLong() : rnd.nextLong(-4_000_000_000L, 4_000_000_000L);
            long b = (i & 2) == 0 ? rnd.nextLong() : rnd.nextLong(-4_000_000_000L, 4_000_000_000L);
            check(a, b);
        }
    }
}
