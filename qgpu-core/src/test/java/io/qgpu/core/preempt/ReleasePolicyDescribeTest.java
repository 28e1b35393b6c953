package io.qgpu.core.preempt;

import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** How a release rule names itself (logs, {@code toString}), and the value semantics of {@link IdleGaps}. */
class ReleasePolicyDescribeTest {

    @Test
    void aFixedDelayIsWrittenInTheLargestUnitThatDividesIt() {
        assertEquals("0ms", ReleasePolicy.fixed(Duration.ZERO).describe());
        assertEquals("2s", ReleasePolicy.fixed(Duration.ofSeconds(2)).describe());
        assertEquals("1500ms", ReleasePolicy.fixed(Duration.ofMillis(1500)).describe());
        assertEquals("100ms", ReleasePolicy.fixed(Duration.ofMillis(100)).describe());
        assertEquals("250us", ReleasePolicy.fixed(Duration.ofNanos(250_000)).describe());
        assertEquals("1001us", ReleasePolicy.fixed(Duration.ofNanos(1_001_000)).describe());
        assertEquals("17ns", ReleasePolicy.fixed(Duration.ofNanos(17)).describe());
        assertEquals("1000000001ns", ReleasePolicy.fixed(Duration.ofNanos(1_000_000_001)).describe());
    }

    @Test
    void theAdaptiveRuleNamesItsCostAndBound() {
        assertEquals("adaptive(switch 3ms, max 2s)",
                ReleasePolicy.adaptive(Duration.ofMillis(3), Duration.ofSeconds(2)).describe());
    }

    @Test
    void idleGapsAreValues() {
        IdleGaps a = IdleGaps.empty(3).plus(5).plus(7);
        IdleGaps b = IdleGaps.empty(3).plus(5).plus(7);
        IdleGaps c = IdleGaps.empty(3).plus(5).plus(8);
        IdleGaps d = IdleGaps.empty(4).plus(5).plus(7);
        assertEquals(a, b);
        assertEquals(a.hashCode(), b.hashCode());
        assertNotEquals(a, c);
        assertNotEquals(a, d, "the capacity is part of the value");
        assertNotEquals(a, "IdleGaps[5, 7]");
        assertEquals("IdleGaps[5, 7]", a.toString());
        IdleGaps full = a.plus(9).plus(11);                      // the oldest gap drops out
        assertArrayEquals(new long[] {7, 9, 11}, full.toArray());
        assertEquals(IdleGaps.empty(3).plus(7).plus(9).plus(11), full);
        assertEquals(IdleGaps.empty(3).plus(7).plus(9).plus(11).hashCode(), full.hashCode());
    }
}
