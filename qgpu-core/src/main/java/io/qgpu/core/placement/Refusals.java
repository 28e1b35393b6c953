package io.qgpu.core.placement;

import io.qgpu.api.CauseCount;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuState;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.NodeRejection;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.placement.GpuFilter;
import io.qgpu.api.placement.NodeFilter;
import io.qgpu.core.ledger.AdmissionRules;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.ReserveResult;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The reasons of a {@link PlacementEngine} refusal (the slow path): the claim's general reasons, and
 * for every node that cannot take it the node's own reasons and each GPU's; the answer after a lost
 * commit race. Not exported.
 *
 * <p>Thread safety: immutable after construction.
 */
final class Refusals {
    private static final Logger LOG = LoggerFactory.getLogger(PlacementEngine.class);

    private final Ledger ledger;
    private final PlacementConfig config;
    private final NodeFilter[] nodeFilters;
    private final GpuFilter[] gpuFilters;
    private final NodePass pass;

    Refusals(Ledger ledger, PlacementConfig config, NodeFilter[] nodeFilters, GpuFilter[] gpuFilters, NodePass pass) {
        this.ledger = ledger;
        this.config = config;
        this.nodeFilters = nodeFilters;
        this.gpuFilters = gpuFilters;
        this.pass = pass;
    }

    /** The exception's message, never null: the exception's type when it has no message. */
    static String message(Exception e) {
        String m = e.getMessage();
        return m != null ? m : e.getClass().getSimpleName();
    }

    List<Reason> generalReasons(Claim claim, GranularityRules rules) {
        try {
            rules.validate(claim);
        } catch (InvalidValueException e) {
            return List.of(Reason.of(ReasonCode.GRANULARITY, claim.tenantId(), message(e)));
        }
        Optional<Placement> held = ledger.placement(claim.tenantId());
        if (held.isPresent()) {
            return List.of(Reason.of(ReasonCode.DUPLICATE_TENANT, claim.tenantId(),
                    "already reserved on " + held.get().nodeName()));
        }
        return List.of();
    }

    static Reason noNodes(ClaimShape c) {
        return new Reason(ReasonCode.NOT_ENOUGH_GPUS, c.claim.tenantId(), c.k, 0, "the cluster has no nodes");
    }

    /**
     * The refusal after a scan that found no node: the causes counted by the scan and the full detail
     * ({@link #rejection}) of at most {@code detail} nodes: first the first node of each cause (most
     * nodes first), then the first refused nodes in cluster order. With {@code detail} at least the
     * number of nodes, every node's detail, read now, as {@link PlacementEngine#explain} gives it.
     */
    @SuppressWarnings("EnumOrdinal") // the tally counts are an array indexed by ReasonCode ordinal
    PlacementResult.Unschedulable unschedulable(ClaimShape c, NodeIndex idx, RefusalScan.Tally t, GranularityRules rules,
                                                int detail) {
        Map<String, NodeRejection> out = new LinkedHashMap<>();
        List<CauseCount> causes = t.causes();
        if (detail >= t.nodes) {
            NodePass.Group group = c.affinity == null ? null : NodePass.findGroup(c, idx, null);
            for (NodeState ns : NodePass.nodesOf(idx.feed)) {
                out.put(ns.name(), rejection(c, ns, rules, group));
            }
        } else {
            for (CauseCount cc : causes) {
                add(out, c, t.firstOf[cc.code().ordinal()], rules, t.group, detail);
            }
            for (NodeState ns : t.leading) {
                add(out, c, ns, rules, t.group, detail);
            }
        }
        PlacementResult.Unschedulable u = new PlacementResult.Unschedulable(c.claim.tenantId(), out,
                t.nodes == 0 ? List.of(noNodes(c)) : List.of(), causes, Math.max(t.nodes, out.size()));
        if (LOG.isDebugEnabled()) {
            LOG.debug("{}", u.summary());
        }
        return u;
    }

    private void add(Map<String, NodeRejection> out, ClaimShape c, NodeState ns, GranularityRules rules,
                     NodePass.@Nullable Group group, int detail) {
        if (out.size() < detail && !out.containsKey(ns.name())) {
            out.put(ns.name(), rejection(c, ns, rules, group));
        }
    }

    /** Every reason {@code ns} cannot take the claim: the node's own, and each GPU's. */
    NodeRejection rejection(ClaimShape c, NodeState ns, GranularityRules rules, NodePass.@Nullable Group group) {
        Claim claim = c.claim;
        List<Reason> nodeReasons = new ArrayList<>(AdmissionRules.checkNode(ns.node(), claim));
        nodeReasons.addAll(AdmissionRules.checkHost(ns, claim));
        for (NodeFilter f : nodeFilters) {
            nodeReasons.addAll(f.check(claim, ns, ledger));
        }
        boolean groupHere = group != null && group.on(ns);
        if (group != null && !groupHere) {
            nodeReasons.add(Reason.of(ReasonCode.AFFINITY, ns.name(), "affinity label " + c.affinity
                    + " is bound to node " + group.summary().state.name() + " GPUs " + uuids(group.summary().state, group.positions())));
        } else if (groupHere && group != null && group.positions().length != c.k) {
            nodeReasons.add(new Reason(ReasonCode.AFFINITY, ns.name(), c.k, group.positions().length,
                    "affinity label " + c.affinity + " holds " + group.positions().length + " GPU(s); a claim with it must ask for as many"));
        }
        Map<String, List<Reason>> gpuReasons = new LinkedHashMap<>();
        int usable = 0;
        for (int p = 0; p < ns.gpus().size(); p++) {
            GpuState g = ns.gpu(p);
            long mem = claim.exclusive() ? g.device().memoryBytes() : claim.memoryPerGpuBytes();
            List<Reason> rs = new ArrayList<>(AdmissionRules.checkGpu(g, claim, mem, rules));
            for (GpuFilter f : gpuFilters) {
                rs.addAll(f.check(claim, ns, g, ledger));
            }
            if (groupHere && group != null && !group.contains(p)) {
                rs.add(Reason.of(ReasonCode.AFFINITY, g.uuid(), "not one of the GPUs of affinity label " + c.affinity));
            }
            if (rs.isEmpty()) {
                usable++;
            } else {
                gpuReasons.put(g.uuid(), rs);
            }
        }
        if (usable < c.k) {
            nodeReasons.add(new Reason(ReasonCode.NOT_ENOUGH_GPUS, ns.name(), c.k, usable, "usable GPUs"));
        } else if (c.mustInclude || c.numaRequired) {
            List<Reason> shortfall = pass.setConstraintShortfall(NodeSummary.of(ns, null, rules), c);
            if (shortfall != null) {
                nodeReasons.addAll(shortfall);
            }
        }
        if (nodeReasons.isEmpty() && gpuReasons.isEmpty()) {
            // only when a registered filter answers differently from one call to the next
            nodeReasons.add(Reason.of(ReasonCode.CONFLICT, ns.name(), "feasible when re-checked; filters are not stable"));
        }
        return new NodeRejection(ns.name(), nodeReasons, gpuReasons);
    }

    private static List<String> uuids(NodeState ns, int[] positions) {
        List<String> out = new ArrayList<>(positions.length);
        for (int p : positions) {
            out.add(ns.gpu(p).uuid());
        }
        return out;
    }

    PlacementResult.Unschedulable conflict(Claim claim, String node, ReserveResult.Refused last) {
        Reason why = Reason.of(ReasonCode.CONFLICT, claim.tenantId(), "the capacity chosen was taken by concurrent "
                + "placements " + config.maxCommitAttempts() + " time(s); last refusal on " + node + ": " + last.summary());
        List<Reason> nodeReasons = new ArrayList<>();
        nodeReasons.add(Reason.of(ReasonCode.CONFLICT, node, "lost the commit race"));
        Map<String, List<Reason>> gpuReasons = new LinkedHashMap<>();
        for (Reason r : last.reasons()) {
            if (r.target().equals(node)) {
                nodeReasons.add(r);
            } else {
                gpuReasons.computeIfAbsent(r.target(), k -> new ArrayList<>()).add(r);
            }
        }
        LOG.info("{}: unschedulable after {} lost commit race(s)", claim.tenantId(), config.maxCommitAttempts());
        return new PlacementResult.Unschedulable(claim.tenantId(),
                Map.of(node, new NodeRejection(node, nodeReasons, gpuReasons)), List.of(why));
    }

}
