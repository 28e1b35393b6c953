package io.qgpu.core.gate;

import io.qgpu.api.PriorityClass;

/**
 * A tenant registered with a {@link Gate}: the handle that {@code acquire} takes. Obtained from
 * {@link Gate#register(GateTenantSpec)}; only the gate implements it (the interface is sealed). A
 * tenant of another gate is refused with {@link GateStateException}.
 *
 * <pre>{@code
 * Tenant chat = gate.register(GateTenantSpec.online("chat").limit(60).build());
 * try (Lease lease = gate.acquire(chat)) {
 *     runBatch();
 * }
 * }</pre>
 *
 * <p>Thread safety: thread-safe; share the handle freely.
 */
public sealed interface Tenant permits GateTenant {

    /** The tenant's name, unique within its gate. */
    String name();

    /** What it registered with. */
    GateTenantSpec spec();

    /** Its priority class. */
    default PriorityClass priority() {
        return spec().priority();
    }

    /** The gate it belongs to. */
    Gate gate();

    /** Leases running now (a snapshot). */
    int runningLeases();
}
