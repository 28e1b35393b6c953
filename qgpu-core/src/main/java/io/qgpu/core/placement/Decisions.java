package io.qgpu.core.placement;

import io.qgpu.api.CauseCount;
import io.qgpu.api.Claim;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.NodeState;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Validate;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The {@link PlacementEngine}'s decisions on one view of the ledger, without committing: where a
 * claim goes in the whole cluster ({@link #anywhere}, for {@code place}), on one named node
 * ({@link #onNode}, for {@code placeOn}), and whether each named node can take it ({@link #check}).
 * A decision is a {@link io.qgpu.api.Placement} to commit or the final {@link PlacementResult}; the
 * engine commits and retries. Not exported.
 *
 * <p>Thread safety: immutable after construction; each decision works on its own state.
 */
final class Decisions {
    private final NodePass pass;
    private final Refusals refusals;
    private final int refusalDetail;

    Decisions(NodePass pass, Refusals refusals, int refusalDetail) {
        this.pass = pass;
        this.refusals = refusals;
        this.refusalDetail = refusalDetail;
    }

    /** The decision of {@code place} on one view: a placement to commit, or the refusal. */
    Object anywhere(ClaimShape c, NodeIndex idx, GranularityRules rules) {
        long settled = idx.settled();
        NodePass.Eval e = pass.evaluate(c, idx, null, false);
        if (e.chosen == null) {
            // the fast pass found nothing: its own counts prove it when no key could lag behind
            // its node, else a scan over every node's current summary does (RefusalScan)
            RefusalScan.Tally t = settled < 0 ? null : RefusalScan.fromPass(c, idx, pass, e, refusalDetail, settled);
            if (t == null) {
                t = RefusalScan.scan(c, idx, pass, refusalDetail, false);
            }
            if (t.feasible != null) {
                // a key lagged behind its node: decide exactly on every node, as explain does
                e = pass.evaluate(c, idx, NodePass.nodesOf(idx.feed), false);
                if (e.chosen == null) {
                    t = RefusalScan.scan(c, idx, pass, refusalDetail, true);
                }
            }
            if (e.chosen == null) {
                return refusals.unschedulable(c, idx, t, rules, refusalDetail);
            }
        }
        return NodePass.placementOf(c, e.chosen, java.util.Objects.requireNonNull(e.positions, "positions: set with chosen"));
    }

    /** The decision of {@code placeOn} on one view: the named node as the whole cluster. */
    Object onNode(ClaimShape c, String nodeName, NodeIndex idx, GranularityRules rules) {
        int i = idx.positionOf(nodeName);
        if (i < 0) {
            return new PlacementResult.Unschedulable(c.claim.tenantId(), Map.of(), List.of(unknown(nodeName)));
        }
        NodeState ns = idx.feed.nodeAt(i);
        NodeSummary s = idx.summary(i, ns);
        NodePass.Group group = c.affinity == null ? null : NodePass.findGroup(c, idx, null);
        NodeFit fit = pass.fit(c, s, group);
        if (fit instanceof NodeFit.Refused no) {
            return new PlacementResult.Unschedulable(c.claim.tenantId(),
                    Map.of(nodeName, refusals.rejection(c, ns, rules, group)), List.of(),
                    List.of(new CauseCount(no.reason().code(), 1)), 1);
        }
        return NodePass.placementOf(c, s, ((NodeFit.Fits) fit).gpus().positions());
    }

    /** The answers of {@code check}: each named node's fit, in the order asked. */
    List<NodeFit> check(Claim claim, ClaimShape c, List<String> nodeNames, NodeIndex idx, GranularityRules rules) {
        List<Reason> general = refusals.generalReasons(claim, rules).stream()
                .filter(r -> r.code() == ReasonCode.GRANULARITY).toList();
        NodePass.Group group = general.isEmpty() && c.affinity != null ? NodePass.findGroup(c, idx, null) : null;
        List<NodeFit> out = new ArrayList<>(nodeNames.size());
        for (String name : nodeNames) {
            int i = idx.positionOf(Validate.notNull("nodeNames[]", name));
            if (!general.isEmpty()) {
                out.add(new NodeFit.Refused(name, general.get(0)));
            } else if (i < 0) {
                out.add(new NodeFit.Refused(name, unknown(name)));
            } else {
                out.add(pass.fit(c, idx.summary(i, idx.feed.nodeAt(i)), group));
            }
        }
        return out;
    }

    private static Reason unknown(String name) {
        return Reason.of(ReasonCode.UNKNOWN_TARGET, name, "no such node in the ledger");
    }
}
