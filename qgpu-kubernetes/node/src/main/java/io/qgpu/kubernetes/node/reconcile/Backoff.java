package io.qgpu.kubernetes.node.reconcile;

import java.time.Duration;
import java.util.Objects;

/**
 * The node agents' one exponential back-off: the wait after {@code n} failures in a row is
 * {@code initial * 2^(n-1)}, at most {@code max}. The reconciler's per-step retries and the MPS supervisor's
 * daemon restarts both use it.
 *
 * <pre>{@code
 * Backoff b = new Backoff(Duration.ofMillis(500), Duration.ofSeconds(30));
 * b.afterFailures(1);   // 0.5 s
 * b.afterFailures(4);   // 4 s
 * b.afterFailures(99);  // 30 s
 * }</pre>
 *
 * @param initial the wait after the first failure (positive)
 * @param max     the longest wait (at least {@code initial})
 *
 * <p>Thread safety: immutable.
 */
public record Backoff(Duration initial, Duration max) {
    public Backoff {
        positive("initialBackoff", initial);
        positive("maxBackoff", max);
        if (max.compareTo(initial) < 0) {
            throw new IllegalArgumentException("maxBackoff = " + max + ": must be at least initialBackoff (" + initial + ")");
        }
    }

    /**
     * The wait, in nanoseconds, after this many failures in a row.
     *
     * @param failures at least 1 (0 is taken as 1)
     */
    public long afterFailures(int failures) {
        long cap = max.toNanos();
        long d = initial.toNanos();
        for (int i = 1; i < failures && d < cap; i++) {
            d = d > cap / 2 ? cap : d * 2;
        }
        return Math.min(d, cap);
    }

    /**
     * Checks a setting that must be a positive duration.
     *
     * @return the duration
     * @throws IllegalArgumentException naming the setting and the value when it is zero or negative
     * @throws NullPointerException     naming the setting when it is null
     */
    public static Duration positive(String name, Duration d) {
        Objects.requireNonNull(d, name);
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(name + " = " + d + ": must be positive");
        }
        return d;
    }
}
