package io.qgpu.core.gate.internal;

import io.qgpu.core.gate.GateTenantSpec;

/**
 * Makes the public handles of a gate's tenants and leases: final subclasses of {@link TenantState}
 * and {@link LeaseImpl} in the gate's package, which implement its sealed {@code Tenant} and
 * {@code Lease} interfaces. The gate's facade passes one to its {@link GateCore}, so that nothing
 * here refers to the facade's classes.
 *
 * <p>Thread safety: implementations must be thread-safe (leases are made on every acquiring thread).
 */
public interface Handles {

    /** A new tenant of {@code core}. */
    TenantState tenant(GateCore core, GateTenantSpec spec, long limitNanos);

    /**
     * A new running lease of {@code t}; the arguments go to
     * {@link LeaseImpl#LeaseImpl(TenantState, Holder, LeaseSlot, long, long)}.
     */
    LeaseImpl lease(TenantState t, Holder holder, LeaseSlot slot, long acquiredAt, long entry);
}
