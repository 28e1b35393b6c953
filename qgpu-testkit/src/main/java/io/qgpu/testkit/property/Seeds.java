package io.qgpu.testkit.property;

import io.qgpu.api.InvalidValueException;
import java.util.OptionalLong;
import java.util.SplittableRandom;

/**
 * Where a property's seed comes from: the {@value #PROPERTY} system property (set it to re-run a
 * failure), else a fresh random seed. An empty value, the literal {@code ${qgpu.seed}} that Maven
 * passes when the property is not defined, and {@code random} all mean "unset".
 *
 * <pre>{@code
 * ./mvnw test -pl my-module -Dtest='MySchedulerContractTest#rule_1_15_randomSequencesKeepEveryInvariant' -Dqgpu.seed=1234
 * }</pre>
 *
 * <p>Thread safety: stateless.
 */
public final class Seeds {

    /** The system property that fixes the seed of every property in the JVM. */
    public static final String PROPERTY = "qgpu.seed";

    private static final SplittableRandom SOURCE = new SplittableRandom();

    private Seeds() {
    }

    /** The seed the system property fixes, if any; a value that is not a number is refused. */
    public static OptionalLong fromSystemProperty() {
        return parse(System.getProperty(PROPERTY));
    }

    /**
     * Parses a seed setting: a decimal long (optionally signed) or {@code 0x}-prefixed hex; empty
     * for {@code null}, blank, {@code random} or an unexpanded {@code ${...}} placeholder.
     */
    public static OptionalLong parse(String raw) {
        if (raw == null) {
            return OptionalLong.empty();
        }
        String s = raw.trim();
        if (s.isEmpty() || s.startsWith("${") || s.equalsIgnoreCase("random")) {
            return OptionalLong.empty();
        }
        try {
            if (s.startsWith("0x") || s.startsWith("0X")) {
                return OptionalLong.of(Long.parseUnsignedLong(s.substring(2), 16));
            }
            return OptionalLong.of(Long.parseLong(s));
        } catch (NumberFormatException e) {
            throw new InvalidValueException(PROPERTY, raw, "must be a long (for example 1234 or 0x4d2), empty or 'random'");
        }
    }

    /** A fresh seed. */
    public static long random() {
        synchronized (SOURCE) {
            return SOURCE.split().nextLong();
        }
    }
}
