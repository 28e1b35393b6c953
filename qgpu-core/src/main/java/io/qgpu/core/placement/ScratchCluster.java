package io.qgpu.core.placement;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuState;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Holding;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.Slice;
import io.qgpu.core.ledger.Ledger;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A private ledger holding copies of some nodes' current states, for trying several placements one
 * after the other without anyone else seeing them (the members of a gang, a claim after a
 * preemption plan's evictions). Each tenant on a node is rebuilt from its holdings: its class,
 * compute, memory per GPU, exclusivity and locality labels, which is everything the admission rules
 * read; its selectors and its priority within the class are not copied (nothing in the copy needs them).
 *
 * <p>Thread safety: stateless; the ledgers it makes are not shared.
 */
final class ScratchCluster {

    private ScratchCluster() {
    }

    /**
     * A new ledger with these rules and these nodes as they are in {@code states}. The tenants are
     * reserved again in snapshot-replay order (compute request 0 first, then by id). One the copy
     * refuses (a tenant on a GPU that turned unhealthy, which takes no new tenant either way) is
     * left out: the copy may then show more room than the real ledger, never less, and the real
     * ledger re-validates whatever is committed.
     */
    static Ledger of(GranularityRules rules, List<NodeState> states) {
        List<Node> nodes = new ArrayList<>(states.size());
        List<Placement> placements = new ArrayList<>();
        for (NodeState ns : states) {
            nodes.add(ns.node());
            placements.addAll(placementsOn(ns));
        }
        placements.sort(Comparator.comparing((Placement p) -> p.claim().computeRequest() != 0)
                .thenComparing(Placement::tenantId));
        Ledger copy = Ledger.create(rules, nodes);
        placements.forEach(copy::reserve);
        return copy;
    }

    /** The tenants of one node state, rebuilt from their holdings. */
    static List<Placement> placementsOn(NodeState ns) {
        Map<String, List<Slice>> slices = new LinkedHashMap<>();
        Map<String, Holding> first = new LinkedHashMap<>();
        for (GpuState g : ns.gpus()) {
            for (Holding h : g.holdings()) {
                slices.computeIfAbsent(h.tenantId(), k -> new ArrayList<>())
                        .add(new Slice(g.uuid(), h.memoryBytes(), h.computeRequest(), h.computeLimit()));
                first.putIfAbsent(h.tenantId(), h);
            }
        }
        List<Placement> out = new ArrayList<>(slices.size());
        slices.forEach((id, s) -> {
            Holding h = first.get(id);
            Claim.Builder b = Claim.builder(id).gpus(s.size()).priority(h.priority()).locality(h.locality());
            if (h.exclusive()) {
                b.exclusive();
            } else {
                b.memoryBytes(h.memoryBytes()).compute(h.computeRequest(), h.computeLimit());
            }
            out.add(new Placement(b.build(), ns.name(), s));
        });
        return out;
    }
}
