package io.qgpu.core.compute;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Validate;

/**
 * The token of one GPU handed to a tenant: it may launch work from {@code startNanos} until
 * {@link #expiresAtNanos()}, then must return the token ({@link ComputeEngine#release}).
 *
 * <pre>{@code
 * if (engine.schedule() instanceof TokenDecision.Granted g) {
 *     runUntil(g.grant().tenant(), g.grant().expiresAtNanos());
 * }
 * }</pre>
 *
 * @param tenant      the holder
 * @param startNanos  when the token was handed over (ticker time)
 * @param quotaNanos  the tenant's adapted quota at that time
 * @param lengthNanos how long this grant lasts: the quota, or less when a strict limit cut it
 * @param cut         whether the strict limit cut the grant below the quota
 *
 * <p>Thread safety: immutable.
 */
public record Grant(String tenant, long startNanos, long quotaNanos, long lengthNanos, boolean cut) {

    public Grant {
        Validate.notBlank("grant.tenant", tenant);
        Validate.atLeast("grant.quotaNanos", quotaNanos, 1);
        Validate.atLeast("grant.lengthNanos", lengthNanos, 1);
        if (lengthNanos > quotaNanos) {
            throw new InvalidValueException("grant.lengthNanos", lengthNanos, "must be at most quotaNanos (" + quotaNanos + ")");
        }
    }

    /** When the holder must stop launching work. */
    public long expiresAtNanos() {
        return startNanos + lengthNanos;
    }
}
