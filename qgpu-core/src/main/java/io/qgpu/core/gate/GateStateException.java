package io.qgpu.core.gate;

/**
 * A tenant or lease was used in a way its state does not allow: a tenant of another gate, a tenant
 * that was unregistered, a tenant name registered twice, a lease used after close, or a tenant
 * unregistered while it still has open leases. Nothing changed when it is thrown.
 *
 * <pre>{@code
 * gate.register(GateTenantSpec.online("chat").build());
 * gate.register(GateTenantSpec.online("chat").build());   // throws GateStateException: already registered
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public final class GateStateException extends GateException {
    private static final long serialVersionUID = 1L;

    private final String tenant;

    public GateStateException(String gpuUuid, String tenant, String message) {
        super("gate " + gpuUuid + ": tenant \"" + tenant + "\" " + message);
        this.tenant = tenant;
    }

    /** The tenant concerned. */
    public String tenant() {
        return tenant;
    }
}
