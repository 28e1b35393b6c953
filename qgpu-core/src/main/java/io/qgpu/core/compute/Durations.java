package io.qgpu.core.compute;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Validate;
import java.time.Duration;

/** Duration checks shared by the configs of the engines (package-internal). */
final class Durations {
    private Durations() {
    }

    /** {@code value} in nanoseconds, refusing null, negative, zero and overflowing values. */
    static long positiveNanos(String field, Duration value) {
        Validate.notNull(field, value);
        if (value.isNegative() || value.isZero()) {
            throw new InvalidValueException(field, value, "must be positive");
        }
        try {
            return value.toNanos();
        } catch (ArithmeticException e) {
            throw new InvalidValueException(field, value, "must fit in a long of nanoseconds (about 292 years)");
        }
    }
}
