package io.qgpu.api.placement;

import io.qgpu.api.Claim;
import io.qgpu.api.ClusterView;
import io.qgpu.api.NodeState;
import io.qgpu.api.Reason;
import java.util.List;

/**
 * Refuses a whole node for a claim. The engine's own node rules (node-label selectors) always
 * apply; a node filter adds more.
 *
 * <pre>{@code
 * NodeFilter noDrainingNodes = (claim, node, view) ->
 *         "true".equals(node.node().labels().get("draining"))
 *                 ? List.of(Reason.of(ReasonCode.NODE_LABELS_MISMATCH, node.name(), "node is draining"))
 *                 : List.of();
 * }</pre>
 *
 * <p>Thread safety: implementations must be thread-safe and side-effect free.
 */
@FunctionalInterface
public interface NodeFilter {

    /**
     * Why {@code node} cannot take {@code claim}; an empty list (preferably {@link List#of()}, which
     * allocates nothing) when it can. The target of each reason should be the node's name.
     */
    List<Reason> check(Claim claim, NodeState node, ClusterView view);
}
