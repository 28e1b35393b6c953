package io.qgpu.api;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * A proposal for a claim that does not fit: which tenants to evict, and where the claim then goes
 * ({@link Proposed}); or why no eviction of lower-ranked tenants makes room ({@link Impossible}).
 * Made by {@code io.qgpu.core.placement.PreemptionPlanner}, which also commits it.
 *
 * <pre>{@code
 * PreemptionPlan plan = planner.plan(claim);
 * if (plan instanceof PreemptionPlan.Proposed p) {
 *     p.victims();                          // the tenants to evict, each ranked below the claim
 *     p.placement();                        // where the claim goes once they are gone
 *     if (planner.commit(p) instanceof PreemptionResult.Committed c) {
 *         c.evicted().forEach(v -> stop(v.tenantId()));
 *     }
 * }
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public sealed interface PreemptionPlan {

    /** The claim's tenant id. */
    String tenantId();

    /**
     * Evict {@code victims}, then reserve {@code placement}.
     *
     * @param placement where the claim goes
     * @param victims   the reservations to release, on the placement's node, each of a tenant that
     *                  {@link Claim#outranks ranks below} the claim; empty when the claim fits now
     * @param nodes     per other node, why it was not chosen (its plan evicts more tenants, or more
     *                  resources, or it has none)
     */
    record Proposed(Placement placement, List<Placement> victims, Map<String, List<Reason>> nodes)
            implements PreemptionPlan {
        public Proposed {
            Validate.notNull("plan.placement", placement);
            victims = Validate.list("plan[" + placement.tenantId() + "].victims", victims);
            nodes = copy("plan[" + placement.tenantId() + "].nodes", nodes);
        }

        @Override
        public String tenantId() {
            return placement.tenantId();
        }

        /** The claim the plan places. */
        public Claim claim() {
            return placement.claim();
        }

        /** The victims' tenant ids, in plan order. */
        public List<String> victimIds() {
            return victims.stream().map(Placement::tenantId).toList();
        }
    }

    /**
     * No plan: per node, why evicting its lower-ranked tenants does not make room.
     *
     * @param tenantId the claim's tenant id
     * @param nodes    per node name, the reasons
     * @param general  reasons not tied to a node (a duplicate tenant id, the granularity rules, no nodes)
     */
    record Impossible(String tenantId, Map<String, List<Reason>> nodes, List<Reason> general) implements PreemptionPlan {
        public Impossible {
            Validate.notBlank("plan.tenantId", tenantId);
            nodes = copy("plan[" + tenantId + "].nodes", nodes);
            general = Validate.list("plan[" + tenantId + "].general", general);
        }

        /** One line: the general reasons, then each node's. */
        public String summary() {
            StringBuilder sb = new StringBuilder(tenantId).append(": no preemption plan");
            general.forEach(r -> sb.append("; ").append(r.message()));
            new java.util.TreeMap<>(nodes).forEach((n, rs) -> sb.append("; [").append(n).append("] ")
                    .append(rs.stream().map(Reason::message).collect(Collectors.joining("; "))));
            return sb.toString();
        }
    }

    private static Map<String, List<Reason>> copy(String field, Map<String, List<Reason>> nodes) {
        Validate.notNull(field, nodes);
        return nodes.entrySet().stream().collect(Collectors.toUnmodifiableMap(Map.Entry::getKey,
                e -> List.copyOf(e.getValue())));
    }
}
