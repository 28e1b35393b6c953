package io.qgpu.api.placement;

import io.qgpu.api.Claim;
import io.qgpu.api.ClusterView;
import io.qgpu.api.NodeState;

/**
 * Ranks the nodes that passed every filter. The engine adds {@code weight x score} to each
 * candidate's total (the weight is given when the scorer is registered); the highest total wins.
 *
 * <pre>{@code
 * NodeScorer preferPoolA = new NodeScorer() {
 *     public String name() { return "prefer-pool-a"; }
 *     public double score(Claim c, NodeState n, ClusterView v) {
 *         return "a".equals(n.node().labels().get("pool")) ? 1.0 : 0.0;
 *     }
 * };
 * }</pre>
 *
 * <p>Thread safety: implementations must be thread-safe and side-effect free.
 */
public interface NodeScorer {

    /** Short name shown by {@code explain}. */
    String name();

    /** The score, between 0 (worst) and 1 (best). Called on the hot path: keep it cheap. */
    double score(Claim claim, NodeState node, ClusterView view);

    /** The score with the reason for it; called only by {@code explain}. */
    default Score explain(Claim claim, NodeState node, ClusterView view) {
        double v = score(claim, node, view);
        return new Score(Score.check(name() + ".score", v), name());
    }
}
