package io.qgpu.core.internal;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Validate;
import java.time.Duration;

/**
 * Checks of {@link Duration} settings and arguments, each turning a valid value into nanoseconds and
 * refusing a bad one with an {@link InvalidValueException} that names the field and the value as
 * given: {@code null}, a negative (or zero, where it must be positive) value, and a value too large
 * for a {@code long} of nanoseconds (about 292 years). Used by every config builder of the engines
 * and the gate, so that they all refuse the same values with the same words.
 *
 * <pre>{@code
 * long window = DurationChecks.positiveNanos("tokenScheduler.window", Duration.ofSeconds(10));
 * }</pre>
 *
 * <p>Not part of the exported API. Stateless; safe to call from any thread.
 */
public final class DurationChecks {

    private DurationChecks() {
    }

    /** {@code value} in nanoseconds; refuses null, negative, zero and too large values. */
    public static long positiveNanos(String field, Duration value) {
        Validate.notNull(field, value);
        if (value.isNegative() || value.isZero()) {
            throw new InvalidValueException(field, io.qgpu.core.time.Durations.format(value), "must be positive (at least 1ns)");
        }
        return fitting(field, value);
    }

    /** {@code value} in nanoseconds; refuses null, negative and too large values (zero is allowed). */
    public static long nonNegativeNanos(String field, Duration value) {
        Validate.notNull(field, value);
        if (value.isNegative()) {
            throw new InvalidValueException(field, io.qgpu.core.time.Durations.format(value), "must not be negative");
        }
        return fitting(field, value);
    }

    /**
     * A wait limit in nanoseconds; refuses null and negative values. A limit too large for a
     * {@code long} of nanoseconds (over about 292 years) means "no limit" and is returned as
     * {@link Long#MAX_VALUE}, which callers treat as forever.
     */
    public static long waitLimitNanos(String field, Duration value) {
        Validate.notNull(field, value);
        if (value.isNegative()) {
            throw new InvalidValueException(field, io.qgpu.core.time.Durations.format(value), "must not be negative");
        }
        try {
            return value.toNanos();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }

    private static long fitting(String field, Duration value) {
        try {
            return value.toNanos();
        } catch (ArithmeticException e) {
            throw new InvalidValueException(field, io.qgpu.core.time.Durations.format(value), "must fit in a long of nanoseconds (about 292 years)");
        }
    }
}
