package io.qgpu.core.time;

import io.qgpu.api.InvalidValueException;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one duration syntax of qgpu's files and command lines (scenario files, the CLI, the scheduler
 * extender): a number and a unit, {@code ns}, {@code us} (or {@code µs}), {@code ms}, {@code s} or
 * {@code m}, for example {@code 250ms}, {@code 1.5s}, {@code 40us}, {@code 2m}. A bare number is refused, because its unit would be a guess.
 *
 * <pre>{@code
 * Durations.parse("--duration", "30s");   // PT30S
 * Durations.parse("--duration", "30");    // InvalidValueException: --duration = "30": must be a duration with a unit ...
 * }</pre>
 *
 * <p>Thread safety: stateless; safe from any thread.
 */
public final class Durations {

    /** The accepted forms, as error messages list them. */
    public static final String FORMS = "a number and a unit: ns, us, ms, s or m (for example \"250ms\", \"1.5s\", \"40us\", \"2m\")";

    private static final Pattern DURATION = Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*(ns|us|µs|ms|s|m)");
    private static final double MAX_NANOS = 1e17;

    private Durations() {
    }

    /**
     * Parses a duration.
     *
     * @param field the flag or JSON path, for the error
     * @param text  the text as written
     * @throws InvalidValueException naming {@code field}, the text and the accepted forms
     */
    public static Duration parse(String field, String text) {
        return parseText(field, text);
    }

    /**
     * A duration the way {@link #parse} reads it: the largest unit that divides it exactly,
     * {@code 100ms}, {@code 250us}, {@code 2s}, {@code 17ns}, {@code 0ms}; never ISO-8601 ({@code PT0.1S}).
     */
    public static String format(Duration d) {
        if (d == null) {
            return "null";
        }
        long nanos;
        try {
            nanos = d.toNanos();
        } catch (ArithmeticException e) {
            return d.toSeconds() + "s";
        }
        return format(nanos);
    }

    /** {@link #format(Duration)} of a number of nanoseconds. */
    public static String format(long nanos) {
        if (nanos == 0) {
            return "0ms";
        }
        if (nanos % 1_000_000_000L == 0) {
            return nanos / 1_000_000_000L + "s";
        }
        if (nanos % 1_000_000L == 0) {
            return nanos / 1_000_000L + "ms";
        }
        if (nanos % 1_000L == 0) {
            return nanos / 1_000L + "us";
        }
        return nanos + "ns";
    }

    private static Duration parseText(String field, String text) {
        if (text == null) {
            throw new InvalidValueException(field, null, "is required: " + FORMS);
        }
        Matcher m = DURATION.matcher(text.trim());
        if (!m.matches()) {
            throw new InvalidValueException(field, text, "must be a duration: " + FORMS);
        }
        double v = Double.parseDouble(m.group(1));
        double nanos = switch (m.group(2)) {
            case "ns" -> v;
            case "us", "µs" -> v * 1e3;
            case "ms" -> v * 1e6;
            case "s" -> v * 1e9;
            default -> v * 60e9;
        };
        if (nanos > MAX_NANOS) {
            throw new InvalidValueException(field, text, "is too long (at most about 3 years)");
        }
        return Duration.ofNanos(Math.round(nanos));
    }
}
