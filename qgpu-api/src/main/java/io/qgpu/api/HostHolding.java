package io.qgpu.api;

/**
 * One tenant's host resources as the node that holds them sees them.
 *
 * @param tenantId    the tenant
 * @param cpuMillis   CPU reserved, millicores
 * @param memoryBytes host memory reserved, bytes
 *
 * <p>Thread safety: immutable.
 */
public record HostHolding(String tenantId, long cpuMillis, long memoryBytes) {

    public HostHolding {
        Validate.notBlank("hostHolding.tenantId", tenantId);
        Validate.atLeast("hostHolding[" + tenantId + "].cpuMillis", cpuMillis, 0);
        Validate.atLeast("hostHolding[" + tenantId + "].memoryBytes", memoryBytes, 0);
    }

    /** The holding a placement puts on its node. */
    public static HostHolding of(Placement placement) {
        HostRequest r = placement.claim().host();
        return new HostHolding(placement.tenantId(), r.cpuMillis(), r.memoryBytes());
    }
}
