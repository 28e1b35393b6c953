package io.qgpu.api;

import java.util.Map;
import java.util.stream.Collectors;

/**
 * Outcome of placing a claim: {@link Placed} or {@link Unschedulable}.
 *
 * <pre>{@code
 * PlacementResult result = engine.place(claim);
 * if (result instanceof PlacementResult.Placed p) {
 *     start(p.placement().environment());
 * } else if (result instanceof PlacementResult.Unschedulable u) {
 *     log.warn("{}", u.summary());
 * }
 * }</pre>
 *
 * <p>The interface is sealed: on Java 21 or later a {@code switch} with type patterns over it is
 * checked by the compiler to cover both cases (the library itself needs only Java 17).
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
     * <p>By default the placement engine gives the reasons aggregated by cause for every node it
     * considered ({@link #causes()}, each refused node counted once, under the code of its first
     * reason) and the full per-node, per-GPU detail ({@link #nodes()}) for a bounded number of them;
     * {@link #complete()} says whether every considered node has its detail.
     *
     * <pre>{@code
     * u.summary();   // "job-7 unschedulable: 0/4000 nodes are available: 2950 insufficient GPU memory,
     *                //  1050 no free whole GPU; [n12] n12: INSUFFICIENT_MEMORY ..."
     * }</pre>
     *
     * @param tenantId  the claim's tenant
     * @param nodes     per node name, why it was refused: every considered node, or a bounded number
     * @param general   reasons not tied to a node (duplicate tenant, bad granularity, no nodes)
     * @param causes    how many nodes refused the claim for each cause, most nodes first
     * @param nodeCount how many nodes were considered (at least {@code nodes.size()} and the sum of
     *                  {@code causes}); 0 when a general reason refused the claim before any node
     */
    record Unschedulable(String tenantId, Map<String, NodeRejection> nodes, java.util.List<Reason> general,
                         java.util.List<CauseCount> causes, int nodeCount)
            implements PlacementResult {
        public Unschedulable {
            Validate.notBlank("unschedulable.tenantId", tenantId);
            nodes = Map.copyOf(Validate.notNull("unschedulable.nodes", nodes));
            general = Validate.list("unschedulable.general", general);
            causes = Validate.list("unschedulable.causes", causes);
            int counted = causes.stream().mapToInt(CauseCount::nodes).sum();
            Validate.atLeast("unschedulable.nodeCount", nodeCount, Math.max(nodes.size(), counted));
        }

        /** Every node's detail given: the causes are tallied from {@code nodes} ({@link CauseCount#tally}). */
        public Unschedulable(String tenantId, Map<String, NodeRejection> nodes, java.util.List<Reason> general) {
            this(tenantId, nodes, general, CauseCount.tally(Validate.notNull("unschedulable.nodes", nodes).values()),
                    nodes.size());
        }

        /** Whether {@link #nodes()} has the detail of every considered node. */
        public boolean complete() {
            return nodes.size() == nodeCount;
        }

        /** Per node of {@link #nodes()}, one line of reasons (the extender's {@code FailedNodes}). */
        public Map<String, String> failedNodes() {
            return nodes.values().stream().collect(Collectors.toMap(NodeRejection::nodeName, NodeRejection::summary));
        }

        /**
         * One line: {@code "<tenant> unschedulable: 0/<nodeCount> nodes are available: <n> <cause>, ..."},
         * then the general reasons, then each detailed node's reasons.
         */
        public String summary() {
            StringBuilder sb = new StringBuilder(tenantId).append(" unschedulable");
            if (nodeCount > 0) {
                sb.append(": 0/").append(nodeCount).append(" nodes are available");
                String sep = ": ";
                for (CauseCount c : causes) {
                    sb.append(sep).append(c.message());
                    sep = ", ";
                }
            }
            general.forEach(r -> sb.append("; ").append(r.message()));
            nodes.values().forEach(n -> sb.append("; [").append(n.nodeName()).append("] ").append(n.summary()));
            return sb.toString();
        }
    }
}
