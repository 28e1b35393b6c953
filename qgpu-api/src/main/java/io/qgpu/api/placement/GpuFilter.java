package io.qgpu.api.placement;

import io.qgpu.api.Claim;
import io.qgpu.api.ClusterView;
import io.qgpu.api.GpuState;
import io.qgpu.api.NodeState;
import io.qgpu.api.Reason;
import java.util.List;

/**
 * Refuses one GPU for a claim. The ledger's admission rules (health, class reservation, selectors,
 * memory, guaranteed compute, tenants, exclusivity, anti-affinity, exclusion) always apply; a GPU
 * filter adds more. A GPU it refuses is not counted among the node's usable GPUs.
 *
 * <pre>{@code
 * GpuFilter sameNuma = (claim, node, gpu, view) -> gpu.device().numaNode() == 0
 *         ? List.of()
 *         : List.of(Reason.of(ReasonCode.UUID_NOT_SELECTED, gpu.uuid(), "only NUMA node 0"));
 * }</pre>
 *
 * <p>Thread safety: implementations must be thread-safe and side-effect free.
 */
@FunctionalInterface
public interface GpuFilter {

    /**
     * Why {@code gpu} (one of {@code node}'s GPUs) cannot hold a slice of {@code claim}; an empty list
     * when it can. The target of each reason should be the GPU's UUID.
     */
    List<Reason> check(Claim claim, NodeState node, GpuState gpu, ClusterView view);
}
