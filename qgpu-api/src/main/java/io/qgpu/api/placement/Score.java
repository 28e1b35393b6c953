package io.qgpu.api.placement;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Validate;

/**
 * A scorer's verdict with the reason for it, as {@code explain} reports it.
 *
 * <pre>{@code
 * Score s = new Score(0.75, "node load 0.75 (binpack: fuller is better)");
 * }</pre>
 *
 * @param value       between 0 (worst) and 1 (best)
 * @param explanation why, in words
 *
 * <p>Thread safety: immutable.
 */
public record Score(double value, String explanation) {

    public Score {
        check("score.value", value);
        Validate.notNull("score.explanation", explanation);
    }

    /**
     * Refuses a score outside [0, 1] or not a number, naming the field.
     *
     * @return {@code value}
     */
    public static double check(String field, double value) {
        if (!(value >= 0.0 && value <= 1.0)) {
            throw new InvalidValueException(field, value, "a score must be between 0 and 1");
        }
        return value;
    }
}
