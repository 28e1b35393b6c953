package io.qgpu.api;

import java.util.List;
import java.util.stream.Collectors;

/**
 * Outcome of committing a {@link PreemptionPlan.Proposed}: the victims were released and the claim
 * reserved in one step ({@link Committed}), or nothing changed because the plan went stale
 * ({@link Stale}: plan again).
 *
 * <p>Thread safety: immutable.
 */
public sealed interface PreemptionResult {

    /** The claim's tenant id. */
    String tenantId();

    /**
     * Done: evict these tenants (their reservations are already released) and start the claim.
     *
     * @param placement the claim's reservation
     * @param evicted   the released victims, in plan order
     */
    record Committed(Placement placement, List<Placement> evicted) implements PreemptionResult {
        public Committed {
            Validate.notNull("preemption.placement", placement);
            evicted = Validate.list("preemption[" + placement.tenantId() + "].evicted", evicted);
        }

        @Override
        public String tenantId() {
            return placement.tenantId();
        }
    }

    /**
     * Nothing changed: a victim is gone or changed, or the room was taken since the plan was made.
     *
     * @param tenantId the claim's tenant id
     * @param reasons  what changed
     */
    record Stale(String tenantId, List<Reason> reasons) implements PreemptionResult {
        public Stale {
            Validate.notBlank("preemption.tenantId", tenantId);
            reasons = Validate.list("preemption[" + tenantId + "].reasons", reasons);
        }

        public String summary() {
            return reasons.stream().map(Reason::message).collect(Collectors.joining("; "));
        }
    }
}
