package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The level keys' memory code ({@link RefusalTiers#quantize}) never refuses a GPU that has the memory;
 * the tiers and levels are each the {@code t}-th largest value as a sort of that tier's or level's own
 * values gives it (the definition, kept here; the class sorts twice for all of them).
 */
class RefusalTiersTest {

    @Test
    void theMemoryCodeIsMonotoneAndFitsInAByte() {
        long prev = RefusalTiers.quantize(0);
        assertEquals(0, prev);
        for (long mib = 1; mib < (1L << 25); mib += mib < (1 << 16) ? 1 : 97) {
            long q = RefusalTiers.quantize(mib);
            String at = "quantize(" + mib + ") = " + q;
            assertTrue(q >= prev, at + " fell");
            assertTrue(q <= 254, at + " leaves no room for the +1 of a level byte");
            prev = q;
        }
        assertEquals(RefusalTiers.quantize(Long.MAX_VALUE), RefusalTiers.quantize((1L << 24) - 1));
        // 8 steps per doubling: 3 GiB and 2.8 GiB are told apart, 3 GiB and 3.2 GiB are not
        assertTrue(RefusalTiers.quantize(3072) > RefusalTiers.quantize(2867));
        assertEquals(RefusalTiers.quantize(3072), RefusalTiers.quantize(3276));
    }

    @Test
    void theTiersAndLevelsAreTheTthLargestOfTheirOwnValues() {
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(40_005);
        long[] sizes = {0, 1L << 30, 3L << 30, 5L << 30, 16L << 30, 80L << 30, -(1L << 20), 7L << 20};
        for (int round = 0; round < 20_000; round++) {
            int n = rnd.nextInt(rnd.nextInt(8) == 0 ? 40 : 10);
            long[] mems = new long[n];
            int[] cpts = new int[n];
            for (int i = 0; i < n; i++) {
                // few distinct values, so ties are common
                mems[i] = rnd.nextBoolean() ? sizes[rnd.nextInt(sizes.length)] : rnd.nextLong(1L << 37);
                cpts[i] = rnd.nextBoolean() ? RefusalTiers.LEVELS[rnd.nextInt(RefusalTiers.LEVELS.length)] : rnd.nextInt(102) - 1;
            }
            long[] m0 = mems.clone();
            int[] c0 = cpts.clone();
            RefusalTiers r = new RefusalTiers(mems, cpts, n);
            String at = "round " + round + ", mems " + java.util.Arrays.toString(m0) + ", cpts " + java.util.Arrays.toString(c0);
            assertEquals(largest(m0, c0, 4, Integer.MIN_VALUE, false), r.mem4, at);
            assertEquals(largest(m0, c0, 8, Integer.MIN_VALUE, false), r.mem8, at);
            assertEquals(largest(m0, c0, 2, Integer.MIN_VALUE, true), r.cpt2, at);
            assertEquals(largest(m0, c0, 4, Integer.MIN_VALUE, true), r.cpt4, at);
            assertEquals(largest(m0, c0, 8, Integer.MIN_VALUE, true), r.cpt8, at);
            for (int j = 0; j < RefusalTiers.LEVELS.length; j++) {
                long bytes = 0;
                for (int t = 1; t <= 8; t++) {
                    long v = largest(m0, c0, t, RefusalTiers.LEVELS[j], false);
                    if (v != Long.MIN_VALUE) {
                        bytes |= (RefusalTiers.quantize(Math.max(0, v) >>> 20) + 1) << (8 * (t - 1));
                    }
                }
                assertEquals(bytes, r.level(j), at + ", level " + j);
            }
            int t = 1 + rnd.nextInt(9);
            int min = rnd.nextInt(103) - 2;
            long memWanted = largest(m0, c0, t, min, false);
            long cptWanted = largest(m0, c0, t, min, true);
            assertEquals(memWanted == Long.MIN_VALUE ? -1 : memWanted, r.largest(t, min, false), at);
            assertEquals(cptWanted == Long.MIN_VALUE ? -1 : cptWanted, r.largest(t, min, true), at);
        }
    }

    /**
     * The {@code t}-th largest memory ({@code compute} false) or compute among the pairs with at least
     * {@code minCompute} compute, by a sort of those values; -1 for a tier with fewer than {@code t}
     * values ({@code minCompute} {@code Integer.MIN_VALUE}), {@code Long.MIN_VALUE} for a level.
     */
    private static long largest(long[] mems, int[] cpts, int t, int minCompute, boolean compute) {
        long[] v = new long[mems.length];
        int len = 0;
        for (int i = 0; i < mems.length; i++) {
            if (cpts[i] >= minCompute) {
                v[len++] = compute ? cpts[i] : mems[i];
            }
        }
        java.util.Arrays.sort(v, 0, len);
        return len < t ? (minCompute == Integer.MIN_VALUE ? -1 : Long.MIN_VALUE) : v[len - t];
    }
}
