package io.qgpu.core.ledger;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.Node;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** The check that a set of nodes has no node name and no GPU UUID twice, as {@link Ledger#addNode} requires. */
final class DistinctNodes {
    private DistinctNodes() {
    }

    /**
     * @throws LedgerStateException naming every duplicate node name and every GPU UUID found on two nodes
     */
    static void require(Collection<Node> nodes) {
        List<Reason> reasons = new ArrayList<>();
        Set<String> names = new HashSet<>();
        Map<String, String> owner = new HashMap<>();
        for (Node n : nodes) {
            if (!names.add(n.name())) {
                reasons.add(Reason.of(ReasonCode.UNKNOWN_TARGET, n.name(), "node name given twice"));
                continue;
            }
            for (GpuDevice g : n.gpus()) {
                String other = owner.putIfAbsent(g.uuid(), n.name());
                if (other != null) {
                    reasons.add(Reason.of(ReasonCode.UNKNOWN_TARGET, g.uuid(), "GPU on both " + other + " and " + n.name()));
                }
            }
        }
        if (!reasons.isEmpty()) {
            throw new LedgerStateException("nodes are not distinct", reasons);
        }
    }
}
