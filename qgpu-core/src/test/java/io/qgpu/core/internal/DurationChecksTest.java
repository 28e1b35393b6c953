package io.qgpu.core.internal;

import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.api.InvalidValueException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The one duration check helper: what it accepts, and the field and value it names when it refuses. */
class DurationChecksTest {

    private static final Duration HUGE = Duration.ofSeconds(Long.MAX_VALUE);

    @Test
    void positive() {
        assertEquals(1, DurationChecks.positiveNanos("f", Duration.ofNanos(1)));
        assertEquals(Long.MAX_VALUE, DurationChecks.positiveNanos("f", Duration.ofNanos(Long.MAX_VALUE)));
        assertRefused("must be positive", () -> DurationChecks.positiveNanos("f", Duration.ZERO));
        assertRefused("must be positive", () -> DurationChecks.positiveNanos("f", Duration.ofNanos(-1)));
        assertRefused("must fit in a long", () -> DurationChecks.positiveNanos("f", HUGE));
        assertEquals("f", assertThrows(InvalidValueException.class, () -> DurationChecks.positiveNanos("f", null)).field());
    }

    @Test
    void nonNegative() {
        assertEquals(0, DurationChecks.nonNegativeNanos("f", Duration.ZERO));
        assertEquals(7, DurationChecks.nonNegativeNanos("f", Duration.ofNanos(7)));
        assertRefused("must not be negative", () -> DurationChecks.nonNegativeNanos("f", Duration.ofNanos(-1)));
        assertRefused("must fit in a long", () -> DurationChecks.nonNegativeNanos("f", HUGE));
        assertEquals("f", assertThrows(InvalidValueException.class, () -> DurationChecks.nonNegativeNanos("f", null)).field());
    }

    @Test
    void waitLimit() {
        assertEquals(0, DurationChecks.waitLimitNanos("f", Duration.ZERO));
        assertEquals(5_000_000, DurationChecks.waitLimitNanos("f", Duration.ofMillis(5)));
        assertEquals(Long.MAX_VALUE, DurationChecks.waitLimitNanos("f", HUGE), "too long means no limit");
        assertRefused("must not be negative", () -> DurationChecks.waitLimitNanos("f", Duration.ofNanos(-1)));
        assertEquals("f", assertThrows(InvalidValueException.class, () -> DurationChecks.waitLimitNanos("f", null)).field());
    }

    private static void assertRefused(String why, org.junit.jupiter.api.function.Executable call) {
        InvalidValueException e = assertThrows(InvalidValueException.class, call);
        assertEquals("f", e.field());
        assertTrue(e.getMessage().contains(why), e.getMessage());
    }
}
