package io.qgpu.testkit.invariants;

import io.qgpu.api.Validate;
import java.util.List;

/**
 * One broken invariant: which, about what (a GPU UUID, a tenant, a node or a label) and, in words,
 * what was found.
 *
 * <pre>{@code
 * Violation v = new Violation(Invariant.MEMORY, "GPU-1", "20 GiB reserved of 16 GiB by [t1 8 GiB, t2 12 GiB]");
 * v.toString();   // "[MEMORY] GPU-1: 20 GiB reserved of 16 GiB by [t1 8 GiB, t2 12 GiB]"
 * }</pre>
 *
 * @param invariant the rule broken
 * @param subject   what it is about
 * @param message   what was found
 *
 * <p>Thread safety: immutable.
 */
public record Violation(Invariant invariant, String subject, String message) {

    public Violation {
        Validate.notNull("violation.invariant", invariant);
        Validate.notNull("violation.subject", subject);
        Validate.notNull("violation.message", message);
    }

    @Override
    public String toString() {
        return "[" + invariant + "] " + subject + ": " + message;
    }

    /**
     * Throws an {@link AssertionError} listing every violation, one per line, after {@code context};
     * does nothing for an empty list.
     */
    public static void assertNone(String context, List<Violation> violations) {
        Validate.notNull("violations", violations);
        if (violations.isEmpty()) {
            return;
        }
        throw new AssertionError(render(context, violations));
    }

    /** The text {@link #assertNone} throws. */
    public static String render(String context, List<Violation> violations) {
        StringBuilder sb = new StringBuilder(context == null || context.isEmpty() ? "" : context + ": ")
                .append(violations.size()).append(violations.size() == 1 ? " violation" : " violations");
        for (Violation v : violations) {
            sb.append("\n  - ").append(v).append("  (rule: ").append(v.invariant().rule()).append(')');
        }
        return sb.toString();
    }
}
