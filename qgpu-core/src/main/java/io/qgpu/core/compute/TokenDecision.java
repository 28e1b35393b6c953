package io.qgpu.core.compute;

import io.qgpu.api.Validate;

/**
 * What {@link ComputeEngine#schedule()} decided, as a value: nothing runs threads or sleeps inside
 * the engine, the caller acts on the decision.
 *
 * <pre>{@code
 * TokenDecision d = engine.schedule();
 * if (d instanceof TokenDecision.Granted g) {
 *     start(g.grant());                                  // run until g.grant().expiresAtNanos()
 * } else if (d instanceof TokenDecision.WaitUntil w) {
 *     timer.at(w.atNanos(), engine::schedule);           // or earlier, on a new request
 * }                                                      // Held: someone holds it; Idle: nobody asked
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public sealed interface TokenDecision {

    /** The token was just handed to {@code grant.tenant()}. */
    record Granted(Grant grant) implements TokenDecision {
        public Granted {
            Validate.notNull("granted.grant", grant);
        }
    }

    /** The token is held; nothing changed. */
    record Held(Grant grant) implements TokenDecision {
        public Held {
            Validate.notNull("held.grant", grant);
        }
    }

    /** Tenants wait, but none may run before {@code atNanos}: call {@code schedule()} again then (or on a new request). */
    record WaitUntil(long atNanos) implements TokenDecision {
    }

    /** No tenant asked for the token. */
    record Idle() implements TokenDecision {
    }
}
