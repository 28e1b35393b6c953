package io.qgpu.core.gate;

import io.qgpu.core.gate.internal.GateCore;
import io.qgpu.core.gate.internal.TenantState;

/**
 * The one implementation of {@link Tenant}: the tenant's state is its superclass's, in the gate's
 * internal package; this class adds the gate it belongs to.
 *
 * <p>Thread safety: thread-safe (see {@link Tenant}).
 */
final class GateTenant extends TenantState implements Tenant {

    private final Gate gate;

    GateTenant(Gate gate, GateCore core, GateTenantSpec spec, long limitNanos) {
        super(core, spec, limitNanos);
        this.gate = gate;
    }

    @Override
    public Gate gate() {
        return gate;
    }
}
