package io.qgpu.core.gate;

import io.qgpu.core.gate.internal.Holder;
import io.qgpu.core.gate.internal.LeaseImpl;
import io.qgpu.core.gate.internal.LeaseSlot;
import io.qgpu.core.gate.internal.TenantState;
import java.util.concurrent.CompletableFuture;

/**
 * The one implementation of {@link Lease}: the lease's state and behaviour are its superclass's, in
 * the gate's internal package; this class only gives them the public types.
 *
 * <p>Thread safety: thread-safe (see {@link Lease}).
 */
final class GateLease extends LeaseImpl implements Lease {

    GateLease(TenantState tenant, Holder holder, LeaseSlot slot, long acquiredAt, long entry) {
        super(tenant, holder, slot, acquiredAt, entry);
    }

    @Override
    public Tenant tenant() {
        return (GateTenant) tenantState();
    }

    @Override
    public CompletableFuture<Lease> checkpointAsync() {
        return Gate.asLeases(checkpointFuture());
    }
}
