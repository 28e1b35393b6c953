package io.qgpu.api;

import org.jspecify.annotations.Nullable;
import java.util.Objects;

/**
 * A value failed validation where it was built. Names the field, the rejected value and the
 * rule it broke, for example {@code claim.computeLimit = 120: must be between computeRequest (40) and 100}.
 *
 * <pre>{@code
 * try {
 *     Claim.builder("job-1").memoryGiB(-1).build();
 * } catch (InvalidValueException e) {
 *     e.field();   // "claim.memoryPerGpuBytes"
 *     e.value();   // -1073741824L
 * }
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public final class InvalidValueException extends QgpuException {
    private static final long serialVersionUID = 1L;

    private final String field;
    private final transient @Nullable Object value;
    private final String rule;

    public InvalidValueException(String field, @Nullable Object value, String rule) {
        super(field + " = " + render(value) + ": " + rule);
        this.field = Objects.requireNonNull(field, "field");
        this.value = value;
        this.rule = Objects.requireNonNull(rule, "rule");
    }

    /** Dotted path of the field, for example {@code node.gpus[3].uuid}. */
    public String field() {
        return field;
    }

    /** The rejected value, possibly {@code null}. */
    public @Nullable Object value() {
        return value;
    }

    /** The rule the value broke, in words. */
    public String rule() {
        return rule;
    }

    private static String render(@Nullable Object value) {
        if (value == null) {
            return "null";
        }
        if (value instanceof CharSequence) {
            return "\"" + value + "\"";
        }
        return String.valueOf(value);
    }
}
