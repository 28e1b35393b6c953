package io.qgpu.api.placement;

import io.qgpu.api.Claim;
import io.qgpu.api.ClusterView;
import io.qgpu.api.NodeState;

/**
 * Ranks candidate sets of {@code claim.gpuCount()} GPUs on one node (a set of one GPU for a
 * single-GPU claim). The engine adds {@code weight x score} to the set's score; on each node the
 * best-scoring set is that node's candidate.
 *
 * <pre>{@code
 * GpuSetScorer sameNuma = new GpuSetScorer() {
 *     public String name() { return "same-numa"; }
 *     public double score(Claim c, NodeState n, GpuSet set, ClusterView v) {
 *         int first = n.gpu(set.position(0)).device().numaNode();
 *         for (int i = 1; i < set.size(); i++) {
 *             if (n.gpu(set.position(i)).device().numaNode() != first) return 0.0;
 *         }
 *         return 1.0;
 *     }
 * };
 * }</pre>
 *
 * <p>Thread safety: implementations must be thread-safe and side-effect free.
 */
public interface GpuSetScorer {

    /** Short name shown by {@code explain}. */
    String name();

    /** The score of {@code gpus} on {@code node}, between 0 (worst) and 1 (best). */
    double score(Claim claim, NodeState node, GpuSet gpus, ClusterView view);

    /** The score with the reason for it; called only by {@code explain}. */
    default Score explain(Claim claim, NodeState node, GpuSet gpus, ClusterView view) {
        double v = score(claim, node, gpus, view);
        return new Score(Score.check(name() + ".score", v), name());
    }
}
