package io.qgpu.cli.replay;

import io.qgpu.api.Claim;
import io.qgpu.api.ClusterView;
import io.qgpu.api.NodeState;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.placement.NodeFilter;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Host CPU and memory of the trace's nodes, booked by the replay beside the ledger (the replay is
 * single-threaded and pods never leave, so a plain book is enough). It is the replay's node filter:
 * a node whose free CPU or memory is short of the pod's is refused.
 *
 * <p>Thread safety: not thread-safe; one replay thread.
 */
final class HostBook implements NodeFilter {
    private final Map<String, long[]> free = new HashMap<>();
    private final Map<String, TracePod> asks = new HashMap<>();

    HostBook(List<TraceNode> nodes) {
        for (TraceNode n : nodes) {
            free.put(n.name(), new long[] {n.cpuMillis(), n.memoryMib()});
        }
    }

    /** Registers what the claim {@code tenantId} asks of the host, before it is placed. */
    void expect(String tenantId, TracePod pod) {
        asks.put(tenantId, pod);
    }

    boolean fits(String node, TracePod pod) {
        long[] f = free.get(node);
        return f != null && f[0] >= pod.cpuMillis() && f[1] >= pod.memoryMib();
    }

    void take(String node, TracePod pod) {
        long[] f = free.get(node);
        f[0] -= pod.cpuMillis();
        f[1] -= pod.memoryMib();
    }

    long cpuFree(String node) {
        long[] f = free.get(node);
        return f == null ? 0 : f[0];
    }

    long cpuAsked(Claim claim) {
        TracePod p = asks.get(claim.tenantId());
        return p == null ? 0 : p.cpuMillis();
    }

    @Override
    public List<Reason> check(Claim claim, NodeState node, ClusterView view) {
        TracePod p = asks.get(claim.tenantId());
        if (p == null || fits(node.name(), p)) {
            return List.of();
        }
        long[] f = free.get(node.name());
        return List.of(Reason.of(ReasonCode.NODE_LABELS_MISMATCH, node.name(),
                "host resources short: asks " + p.cpuMillis() + " mCPU and " + p.memoryMib() + " MiB, free "
                        + (f == null ? 0 : f[0]) + " mCPU and " + (f == null ? 0 : f[1]) + " MiB"));
    }
}
