package io.qgpu.api;

import java.util.Map;
import java.util.stream.Collectors;

/**
 * Outcome of placing a claim: {@link Placed} or {@link Unschedulable}.
 *
 * <pre>{@code
 * switch (engine.place(claim)) {
 *     case PlacementResult.Placed p -> start(p.placement().environment());
 *     case PlacementResult.Unschedulable u -> log.warn("{}", u.summary());
 * }
 * }</pre>
 */
public sealed interface PlacementResult {

    String tenantId();

    /** The claim was placed and committed. */
    record Placed(Placement placement) implements PlacementResult {
        public Placed {
            Validate.notNull("placed.placement", placement);
        }

        @Override
        public String tenantId() {
            return placement.tenantId();
        }
    }

    /**
     * No node could take the claim.
     *
     * @param tenantId the claim's tenant
     * @param nodes    per node name, why it was refused
     * @param general  reasons not tied to a node (duplicate tenant, bad granularity, no nodes)
     */
    record Unschedulable(String tenantId, Map<String, NodeRejection> nodes, java.util.List<Reason> general)
            implements PlacementResult {
        public Unschedulable {
            Validate.notBlank("unschedulable.tenantId", tenantId);
            nodes = Map.copyOf(Validate.notNull("unschedulable.nodes", nodes));
            general = Validate.list("unschedulable.general", general);
        }

        /** Per node, one line of reasons (the extender's {@code FailedNodes}). */
        public Map<String, String> failedNodes() {
            return nodes.values().stream().collect(Collectors.toMap(NodeRejection::nodeName, NodeRejection::summary));
        }

        public String summary() {
            StringBuilder sb = new StringBuilder(tenantId).append(" unschedulable");
            general.forEach(r -> sb.append("; ").append(r.message()));
            nodes.values().forEach(n -> sb.append("; [").append(n.nodeName()).append("] ").append(n.summary()));
            return sb.toString();
        }
    }
}
