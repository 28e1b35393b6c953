package io.qgpu.api;

/**
 * One tenant's slice as seen from the GPU that holds it.
 *
 * @param tenantId       the tenant
 * @param priority       its class
 * @param memoryBytes    memory held on this GPU
 * @param computeRequest guaranteed compute in percent
 * @param computeLimit   maximum compute in percent
 * @param exclusive      whether it holds the GPU alone
 * @param locality       its locality labels
 *
 * <p>Thread safety: immutable.
 */
public record Holding(String tenantId, PriorityClass priority, long memoryBytes, int computeRequest,
                      int computeLimit, boolean exclusive, Locality locality) {

    public Holding {
        Validate.name("holding.tenantId", tenantId, Validate.MAX_TENANT_ID_LENGTH);
        Validate.notNull("holding.priority", priority);
        Validate.atLeast("holding.memoryBytes", memoryBytes, 1);
        Validate.notNull("holding.locality", locality);
    }

    /** The holding a placement puts on one of its GPUs. */
    public static Holding of(Placement placement, Slice slice) {
        Claim c = placement.claim();
        return new Holding(c.tenantId(), c.priority(), slice.memoryBytes(), slice.computeRequest(),
                slice.computeLimit(), c.exclusive(), c.locality());
    }
}
