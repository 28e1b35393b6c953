package io.qgpu.api;

import org.jspecify.annotations.Nullable;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Validation helpers that throw {@link InvalidValueException} naming the field and the value.
 * Used by every constructor in the model; public so that extensions validate the same way.
 *
 * <p>Thread safety: stateless.
 */
public final class Validate {
    private Validate() {
    }

    /** The longest name: a Kubernetes object name (a DNS subdomain) is at most 253 characters. */
    public static final int MAX_NAME_LENGTH = 253;
    /** The longest tenant id: a Kubernetes {@code namespace/name} (63 + 1 + 253 characters). */
    public static final int MAX_TENANT_ID_LENGTH = 317;

    /** A DNS subdomain (RFC 1123): lower-case letters, digits, '-' and '.', as Kubernetes names nodes. */
    private static final java.util.regex.Pattern DNS_SUBDOMAIN =
            java.util.regex.Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");

    /**
     * Whether a name is one Kubernetes takes for a node: a DNS subdomain (RFC 1123) of at most
     * {@value #MAX_NAME_LENGTH} characters. The one rule the node agents and the command-line tool apply.
     *
     * <pre>{@code
     * Validate.isDnsSubdomain("gpu-node-1.example");   // true
     * Validate.isDnsSubdomain("Node_A");               // false
     * }</pre>
     */
    public static boolean isDnsSubdomain(String name) {
        return name != null && name.length() <= MAX_NAME_LENGTH && DNS_SUBDOMAIN.matcher(name).matches();
    }

    /** A non-blank name of at most {@code max} characters. */
    public static String name(String field, String value, int max) {
        notBlank(field, value);
        if (value.length() > max) {
            throw new InvalidValueException(field, value.substring(0, 40) + "...", "is " + value.length()
                    + " characters long; at most " + max + " are allowed");
        }
        return value;
    }

    public static <T> T notNull(String field, @Nullable T value) {
        if (value == null) {
            throw new InvalidValueException(field, null, "must not be null");
        }
        return value;
    }

    public static String notBlank(String field, String value) {
        notNull(field, value);
        if (value.isBlank()) {
            throw new InvalidValueException(field, value, "must not be blank");
        }
        return value;
    }

    public static int atLeast(String field, int value, int min) {
        if (value < min) {
            throw new InvalidValueException(field, value, "must be at least " + min);
        }
        return value;
    }

    public static long atLeast(String field, long value, long min) {
        if (value < min) {
            throw new InvalidValueException(field, value, "must be at least " + min);
        }
        return value;
    }

    public static int between(String field, int value, int min, int max) {
        if (value < min || value > max) {
            throw new InvalidValueException(field, value, "must be between " + min + " and " + max);
        }
        return value;
    }

    /** Immutable copy of a list, refusing null elements with the element's index in the field name. */
    public static <T> List<T> list(String field, Collection<T> values) {
        notNull(field, values);
        int i = 0;
        for (T v : values) {
            if (v == null) {   // the element's name is built only for the message
                notNull(field + "[" + i + "]", v);
            }
            i++;
        }
        return List.copyOf(values);
    }

    /** Immutable copy of a set of non-blank strings. */
    public static Set<String> names(String field, Collection<String> values) {
        notNull(field, values);
        for (String v : values) {
            notBlank(field + "[]", v);
        }
        return Set.copyOf(values);
    }

    /** Immutable copy of a map of non-blank keys to non-null values. */
    public static Map<String, String> labels(String field, Map<String, String> values) {
        notNull(field, values);
        for (Map.Entry<String, String> e : values.entrySet()) {
            notBlank(field + " key", e.getKey());
            notNull(field + "[" + e.getKey() + "]", e.getValue());
        }
        return Map.copyOf(values);
    }
}
