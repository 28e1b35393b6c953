package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The level keys' memory code ({@link RefusalTiers#quantize}) never refuses a GPU that has the memory. */
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
}
