package io.qgpu.testkit.contract;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuState;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.NodeRejection;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Slice;
import io.qgpu.core.ledger.AdmissionRules;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.ReserveResult;
import io.qgpu.testkit.invariants.SchedulerUnderTest;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A reference scheduler over qgpu's {@link Ledger}: first node that can take the claim, and on it
 * the best-linked, best-fitting GPU set ({@link SetRanking}), filtered with the ledger's own
 * {@link AdmissionRules} rules and committed with {@link Ledger#reserve}. It stands in for the placement
 * engine while the suite is developed; the contract suite must pass on it.
 */
final class LedgerReferenceScheduler implements SchedulerUnderTest {

    private final Ledger ledger;

    LedgerReferenceScheduler(GranularityRules rules, List<Node> nodes) {
        this.ledger = Ledger.create(rules, nodes);
    }

    @Override
    public PlacementResult place(Claim claim) {
        String t = claim.tenantId();
        GranularityRules rules = ledger.rules();
        try {
            rules.validate(claim);
        } catch (InvalidValueException e) {
            return new PlacementResult.Unschedulable(t, Map.of(), List.of(Reason.of(ReasonCode.GRANULARITY, t, e.getMessage())));
        }
        if (ledger.placement(t).isPresent()) {
            return new PlacementResult.Unschedulable(t, Map.of(),
                    List.of(Reason.of(ReasonCode.DUPLICATE_TENANT, t, "already placed")));
        }
        Optional<Bound> bound = claim.locality().affinity().flatMap(this::boundTo);
        Map<String, NodeRejection> rejections = new LinkedHashMap<>();
        for (NodeState ns : ledger.nodes()) {
            Node node = ns.node();
            List<Reason> nodeReasons = AdmissionRules.checkNode(node, claim);
            if (!nodeReasons.isEmpty()) {
                rejections.put(node.name(), new NodeRejection(node.name(), nodeReasons, Map.of()));
                continue;
            }
            if (bound.isPresent() && !bound.get().node().equals(node.name())) {
                rejections.put(node.name(), new NodeRejection(node.name(), List.of(Reason.of(ReasonCode.AFFINITY,
                        node.name(), "affinity group is on " + bound.get().node())), Map.of()));
                continue;
            }
            List<Integer> usable = new ArrayList<>();
            Map<String, List<Reason>> gpuReasons = new LinkedHashMap<>();
            for (int i = 0; i < ns.gpus().size(); i++) {
                GpuState g = ns.gpu(i);
                long mem = claim.exclusive() ? g.device().memoryBytes() : claim.memoryPerGpuBytes();
                List<Reason> r = AdmissionRules.checkGpu(g, claim, mem, rules);
                if (bound.isPresent() && !bound.get().gpus().contains(g.uuid())) {
                    r = List.of(Reason.of(ReasonCode.AFFINITY, g.uuid(), "not in the affinity group"));
                }
                if (r.isEmpty()) {
                    usable.add(i);
                } else {
                    gpuReasons.put(g.uuid(), r);
                }
            }
            if (usable.size() < claim.gpuCount()) {
                rejections.put(node.name(), new NodeRejection(node.name(), List.of(Reason.shortOf(
                        ReasonCode.NOT_ENOUGH_GPUS, node.name(), claim.gpuCount(), usable.size())), gpuReasons));
                continue;
            }
            List<Reason> last = List.of();
            for (List<Integer> set : SetRanking.rank(node, usable, claim.gpuCount(), p -> ns.gpu(p).memoryFree())) {
                Placement p = placement(claim, ns, set);
                ReserveResult r = ledger.reserve(p);
                if (r instanceof ReserveResult.Reserved) {
                    return new PlacementResult.Placed(p);
                }
                last = ((ReserveResult.Refused) r).reasons();
            }
            rejections.put(node.name(), new NodeRejection(node.name(), last, gpuReasons));
        }
        return new PlacementResult.Unschedulable(t, rejections, List.of());
    }

    private record Bound(String node, Set<String> gpus) {
    }

    private Optional<Bound> boundTo(String label) {
        for (NodeState ns : ledger.nodes()) {
            Set<String> gpus = new HashSet<>();
            for (GpuState g : ns.gpus()) {
                if (g.hasAffinity(label)) {
                    gpus.add(g.uuid());
                }
            }
            if (!gpus.isEmpty()) {
                return Optional.of(new Bound(ns.name(), gpus));
            }
        }
        return Optional.empty();
    }

    private static Placement placement(Claim claim, NodeState ns, List<Integer> set) {
        List<Slice> slices = new ArrayList<>();
        for (int pos : set) {
            GpuState g = ns.gpu(pos);
            long mem = claim.exclusive() ? g.device().memoryBytes() : claim.memoryPerGpuBytes();
            slices.add(new Slice(g.uuid(), mem, claim.computeRequest(), claim.computeLimit()));
        }
        return new Placement(claim, ns.name(), slices);
    }

    @Override
    public void release(String tenantId) {
        ledger.release(tenantId);
    }
}
