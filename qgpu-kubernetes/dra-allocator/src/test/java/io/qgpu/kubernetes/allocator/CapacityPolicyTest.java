package io.qgpu.kubernetes.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

/** What a request consumes of a capacity under each form of {@code requestPolicy}, as kube-scheduler rounds it. */
class CapacityPolicyTest {
    static final long GIB = 1L << 30;
    static final long MIB = 1L << 20;

    @Test
    void validValuesRoundUpToTheSmallestAtOrAboveTheRequest() {
        CapacityPolicy p = new CapacityPolicy(40, 40, List.of(10L, 20L, 40L), 0, 40, 0);
        assertEquals(10, p.round(0));
        assertEquals(10, p.round(5));
        assertEquals(10, p.round(10));
        assertEquals(20, p.round(11));
        assertEquals(40, p.round(40));
        assertEquals(-1, p.round(41), "above every valid value");
        // qgpu's tenants: every allocation consumes exactly 1, whatever it asks
        CapacityPolicy tenants = new CapacityPolicy(16, 1, List.of(1L), 0, 16, 0);
        assertEquals(1, tenants.round(0));
        assertEquals(1, tenants.round(1));
        assertEquals(-1, tenants.round(2));
    }

    @Test
    void aValidValueAboveTheCapacityIsNoAnswer() {
        CapacityPolicy p = new CapacityPolicy(15, 10, List.of(10L, 20L), 0, 15, 0);
        assertEquals(10, p.round(7));
        assertEquals(-1, p.round(12), "20 is valid but above the capacity 15");
    }

    @Test
    void aRangeWithAStepRoundsUpToMinPlusNSteps() {
        // qgpu's memory on an H100: 1 GiB steps from 1 GiB to 79 GiB
        CapacityPolicy memory = new CapacityPolicy(79 * GIB, 79 * GIB, List.of(), GIB, 79 * GIB, GIB);
        assertEquals(GIB, memory.round(0), "below min: min");
        assertEquals(GIB, memory.round(MIB));
        assertEquals(10 * GIB, memory.round(10_000 * MIB));
        assertEquals(10 * GIB, memory.round(10 * GIB));
        assertEquals(79 * GIB, memory.round(79 * GIB));
        assertEquals(-1, memory.round(79 * GIB + 1), "above max");
        // the grid starts at min, not at 0
        CapacityPolicy offset = new CapacityPolicy(100, 100, List.of(), 3, 100, 5);
        assertEquals(3, offset.round(1));
        assertEquals(8, offset.round(4));
        assertEquals(98, offset.round(98));
        assertEquals(-1, offset.round(99), "103 is above max");
    }

    @Test
    void aRangeWithoutAStepTakesTheRequestAsItIs() {
        CapacityPolicy cores = new CapacityPolicy(100, 100, List.of(), 5, 100, 0);
        assertEquals(5, cores.round(3));
        assertEquals(33, cores.round(33));
        assertEquals(100, cores.round(100));
        assertEquals(-1, cores.round(101));
    }

    @Test
    void aMaxBelowTheCapacityBoundsTheRange() {
        CapacityPolicy p = new CapacityPolicy(100, 50, List.of(), 5, 50, 5);
        assertEquals(50, p.round(46));
        assertEquals(-1, p.round(51));
        // and a max above the capacity is bounded by the capacity
        CapacityPolicy wide = new CapacityPolicy(60, 60, List.of(), 0, 100, 0);
        assertEquals(60, wide.round(60));
        assertEquals(-1, wide.round(61));
    }

    @Test
    void withoutAPolicyAnyAmountUpToTheCapacityTheWholeByDefault() {
        CapacityPolicy p = CapacityPolicy.unrestricted(80 * GIB);
        assertEquals(80 * GIB, p.defaultValue());
        assertEquals(0, p.round(0));
        assertEquals(12_345, p.round(12_345));
        assertEquals(80 * GIB, p.round(80 * GIB));
        assertEquals(-1, p.round(80 * GIB + 1));
    }

    @Test
    void hugeRequestsDoNotOverflow() {
        CapacityPolicy p = new CapacityPolicy(Long.MAX_VALUE, Long.MAX_VALUE - 1, List.of(), 0, Long.MAX_VALUE, 2);
        assertEquals(-1, p.round(Long.MAX_VALUE), "the next step, 2^63, does not fit");
        assertEquals(Long.MAX_VALUE - 1, p.round(Long.MAX_VALUE - 2));
        CapacityPolicy big = new CapacityPolicy(Long.MAX_VALUE, 2, List.of(), 2, Long.MAX_VALUE, Long.MAX_VALUE / 2);
        assertEquals(-1, big.round(Long.MAX_VALUE), "2 + 2 steps is 2^63");
        assertEquals(2 + Long.MAX_VALUE / 2, big.round(3));
        CapacityPolicy exact = new CapacityPolicy(Long.MAX_VALUE, 1, List.of(), 1, Long.MAX_VALUE, Long.MAX_VALUE / 2);
        assertEquals(Long.MAX_VALUE, exact.round(Long.MAX_VALUE), "1 + 2 steps is the largest long");
    }
}
