package io.qgpu.core.placement;

import io.qgpu.api.Claim;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.NodeRejection;
import io.qgpu.api.NodeState;
import io.qgpu.api.Reason;
import io.qgpu.api.Ticker;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Builds {@link PlacementEngine#explain}'s answer once the general checks passed: every candidate with
 * its terms (best total first, ties in cluster order), and every other node's full rejection.
 *
 * <p>Thread safety: stateless.
 */
final class Explanations {

    private Explanations() {
    }

    static PlacementExplanation build(ClaimShape c, NodeIndex idx, NodePass pass, Refusals refusals, ExplainTerms terms,
                                      Ticker ticker, long t0) {
        Claim claim = c.claim;
        GranularityRules rules = idx.feed.rules();
        List<NodeState> nodes = NodePass.nodesOf(idx.feed);
        NodePass.Eval e = pass.evaluate(c, idx, nodes, true);
        Set<NodeSummary> shortlisted = Collections.newSetFromMap(new IdentityHashMap<>());
        shortlisted.addAll(e.shortlist);
        Set<NodeState> feasibleStates = Collections.newSetFromMap(new IdentityHashMap<>());
        List<PlacementExplanation.Candidate> candidates = new ArrayList<>();
        PlacementExplanation.Candidate chosen = null;
        for (NodeSummary s : e.feasible) {
            feasibleStates.add(s.state);
            SetSearch search = pass.search(s, c);
            int[] positions;
            if (e.group != null) {
                positions = e.group.positions();
                search.single(positions);
            } else {
                SetSearch.Choice best = pass.bestSet(s, c, search);
                positions = s == e.chosen ? java.util.Objects.requireNonNull(e.positions, "positions: set with chosen")
                        : java.util.Objects.requireNonNull(best, "best: a feasible node has a set").positions();
            }
            PlacementExplanation.Candidate cd = terms.candidate(s, c, positions, search.maxLeftFor(positions),
                    shortlisted.contains(s));
            candidates.add(cd);
            if (s == e.chosen) {
                chosen = cd;
            }
        }
        // best total first; the sort is stable, so ties stay in cluster order
        candidates.sort((a, b) -> Double.compare(b.total(), a.total()));
        Map<String, NodeRejection> rejected = new LinkedHashMap<>();
        NodePass.Group group = c.affinity == null ? null : NodePass.findGroup(c, idx, nodes);
        for (NodeState ns : nodes) {
            if (!feasibleStates.contains(ns)) {
                rejected.put(ns.name(), refusals.rejection(c, ns, rules, group));
            }
        }
        List<Reason> gen = nodes.isEmpty() ? List.of(Refusals.noNodes(c)) : List.of();
        return new PlacementExplanation(claim.tenantId(), c.nodePolicy, c.gpuPolicy, candidates, rejected, gen,
                Optional.ofNullable(chosen), ticker.read() - t0);
    }
}
