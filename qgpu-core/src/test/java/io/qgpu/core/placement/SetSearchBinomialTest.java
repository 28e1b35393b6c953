package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.math.BigInteger;
import org.junit.jupiter.api.Test;

/**
 * {@link SetSearch#binomialAtMost} (a table below 65 GPUs, the product formula above) against exact
 * big-integer binomials, for the limits the config takes (an int of at least 1).
 */
class SetSearchBinomialTest {

    private static BigInteger exact(int m, int k) {
        BigInteger v = BigInteger.ONE;
        for (int i = 0; i < k; i++) {
            v = v.multiply(BigInteger.valueOf(m - i)).divide(BigInteger.valueOf(i + 1));
        }
        return v;
    }

    @Test
    void everyAnswerIsTheExactComparison() {
        long[] limits = {1, 2, 69, 70, 71, 4999, 5000, 5001, 1 << 20, Integer.MAX_VALUE};   // the config takes an int
        for (int m = 0; m <= 80; m++) {
            for (int k = 0; k <= m; k++) {
                BigInteger c = exact(m, k);
                for (long limit : limits) {
                    assertEquals(c.compareTo(BigInteger.valueOf(limit)) <= 0, SetSearch.binomialAtMost(m, k, limit),
                            "C(" + m + ", " + k + ") = " + c + " <= " + limit);
                }
            }
        }
    }
}
