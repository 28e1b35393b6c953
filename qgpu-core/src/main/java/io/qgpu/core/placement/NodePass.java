package io.qgpu.core.placement;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuState;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Slice;
import io.qgpu.api.placement.GpuFilter;
import io.qgpu.api.placement.GpuSet;
import io.qgpu.api.placement.GpuSetScorer;
import io.qgpu.api.placement.NodeFilter;
import io.qgpu.api.placement.NodeScorer;
import io.qgpu.api.placement.Score;
import io.qgpu.core.internal.NodeFeed;
import io.qgpu.core.ledger.Ledger;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * One pass of the {@link PlacementEngine} over the nodes: the feasibility checks (node selectors and
 * filters, admission of every GPU, must-include and NUMA constraints), the node and GPU-set scores and
 * the choice of the best node and set. Not exported; the engine builds one and keeps it.
 *
 * <p>Thread safety: safe for concurrent passes. Immutable after construction but for the
 * {@link SetMemo} of best sets, itself safe for concurrent use (immutable entries, each checked against
 * its full key); each pass works on its own {@link Eval}.
 */
final class NodePass {
    private final Ledger ledger;
    private final PlacementConfig config;
    private final NodeFilter[] nodeFilters;
    private final NodeScorer[] nodeScorers;
    private final double[] nodeScorerWeights;
    private final GpuSetScorer[] setScorers;
    private final double[] setScorerWeights;
    /**
     * The set scorers for a claim whose node policy is not {@code fragmentation}: the same without a
     * trailing {@link FragmentationScorer} (the engine's own term, which scores exactly 0 for such a
     * claim, so leaving it out changes no score and saves building a {@link GpuSet} per set tried).
     */
    private final GpuSetScorer[] plainSetScorers;
    private final double[] plainSetScorerWeights;
    final NodeVerdicts verdicts;
    /**
     * The best sets remembered between claims ({@link SetMemo}), consulted by {@link #choose} where
     * they are exact (see {@link #memoFor}); null for none.
     */
    private final @Nullable SetMemo memo;

    NodePass(Ledger ledger, PlacementConfig config, NodeFilter[] nodeFilters, GpuFilter[] gpuFilters,
             NodeScorer[] nodeScorers, double[] nodeScorerWeights, GpuSetScorer[] setScorers, double[] setScorerWeights) {
        this(ledger, config, nodeFilters, gpuFilters, nodeScorers, nodeScorerWeights, setScorers, setScorerWeights,
                new SetMemo());
    }

    NodePass(Ledger ledger, PlacementConfig config, NodeFilter[] nodeFilters, GpuFilter[] gpuFilters,
             NodeScorer[] nodeScorers, double[] nodeScorerWeights, GpuSetScorer[] setScorers, double[] setScorerWeights,
             @Nullable SetMemo memo) {
        this.ledger = ledger;
        this.config = config;
        this.nodeFilters = nodeFilters;
        this.nodeScorers = nodeScorers;
        this.nodeScorerWeights = nodeScorerWeights;
        this.setScorers = setScorers;
        this.setScorerWeights = setScorerWeights;
        int plain = setScorers.length > 0 && setScorers[setScorers.length - 1] instanceof FragmentationScorer
                ? setScorers.length - 1 : setScorers.length;
        this.plainSetScorers = java.util.Arrays.copyOf(setScorers, plain);
        this.plainSetScorerWeights = java.util.Arrays.copyOf(setScorerWeights, plain);
        this.verdicts = new NodeVerdicts(ledger, nodeFilters, gpuFilters);
        this.memo = plainSetScorers.length == 0 ? memo : null;   // a registered set scorer may read anything
    }

    /** Outcome of one pass over a view. */
    static final class Eval {
        @Nullable NodeSummary chosen;
        int @Nullable [] positions;
        double total = Double.NEGATIVE_INFINITY;
        @Nullable Group group;
        /** explain only: every feasible node, in cluster order. */
        final List<NodeSummary> feasible = new ArrayList<>();
        /** explain only: the shortlisted nodes. */
        final List<NodeSummary> shortlist = new ArrayList<>();
        /** Fast pass only: nodes refused by their key, per {@link io.qgpu.api.ReasonCode} ordinal. */
        int @Nullable [] keyCauses;
        /**
         * Fast pass only: the first node (lowest position) each key cause of {@link #keyCauses} was
         * counted for; made with {@link #keyCauses} (a pass from the room index has neither).
         */
        int[] firstKeyAt = NONE;
        /**
         * Fast pass only: positions (ascending) of the nodes whose key let the claim through and whose
         * summary refused it (grown on the first one: most passes have none).
         */
        int[] refusedBySummary = NONE;
        /**
         * Beside each of {@link #refusedBySummary}, its summary's cause ({@link NodeVerdicts#cause}) by
         * ordinal, taken while no feasible node had been seen (a refusal is possible only then), else -1.
         */
        int[] refusedBySummaryCause = NONE;
        int refusedBySummaryCount;
        /** Fast pass only: feasible nodes seen (0 means every node was refused). */
        int feasibleSeen;

        @SuppressWarnings("EnumOrdinal") // the causes are ReasonCode ordinals (no boxing in the scan)
        private void refusedBySummary(int i, @Nullable ReasonCode cause) {
            if (refusedBySummaryCount == refusedBySummary.length) {
                int grown = Math.max(8, 2 * refusedBySummaryCount);
                refusedBySummary = java.util.Arrays.copyOf(refusedBySummary, grown);
                refusedBySummaryCause = java.util.Arrays.copyOf(refusedBySummaryCause, grown);
            }
            refusedBySummaryCause[refusedBySummaryCount] = cause == null ? -1 : cause.ordinal();
            refusedBySummary[refusedBySummaryCount++] = i;
        }

        /** Counts node {@code i} under the key cause {@code code}, remembering the first such node. */
        @SuppressWarnings("EnumOrdinal") // the counts are an array indexed by ReasonCode ordinal
        private void keyCause(int i, ReasonCode code) {
            int o = code.ordinal();
            int[] counts = java.util.Objects.requireNonNull(keyCauses, "keyCauses: fast pass only");
            if (counts[o]++ == 0) {
                firstKeyAt[o] = i;
            }
        }
    }

    /** GPUs already holding an affinity label's tenants. */
    @SuppressWarnings("ArrayRecordComponent") // package-private carrier, never compared or hashed; not copied on the hot path
    record Group(NodeSummary summary, int[] positions) {
        boolean on(NodeState ns) {
            return summary.state.name().equals(ns.name());
        }

        boolean contains(int position) {
            for (int p : positions) {
                if (p == position) {
                    return true;
                }
            }
            return false;
        }
    }

    /**
     * One pass over the nodes. Fast ({@code nodes == null}): a scan of the index's keys, reading a
     * node only when its key may fit and its rank would enter the shortlist. Exact ({@code nodes}
     * given, all read at one go): every node's own summary is consulted (no key prefilter, no
     * shortlist cut-off), as explain and the re-scan before an unschedulable answer do; from a
     * consistent state it chooses what the fast pass chooses.
     */
    @SuppressWarnings("EnumOrdinal") // the refusal counts are an array indexed by ReasonCode ordinal (no boxing in the scan)
    Eval evaluate(ClaimShape c, NodeIndex idx, @Nullable List<NodeState> nodes, boolean explain) {
        Eval e = new Eval();
        NodeFeed feed = idx.feed;
        boolean exact = nodes != null;
        if (c.affinity != null) {
            Group g = findGroup(c, idx, nodes);
            if (g != null) {
                e.group = g;
                NodeSummary s = g.summary;
                SetSearch.Choice only = groupChoice(c, g);
                if (only != null) {
                    e.chosen = s;
                    e.positions = g.positions;
                    e.total = nodeScore(s, c) + only.score();
                    if (explain) {
                        e.feasible.add(s);
                        e.shortlist.add(s);
                    }
                }
                return e;
            }
        }
        int n = idx.size;
        int cap = Math.min(config.shortlist(), Math.max(1, n));
        if (!exact && nodeScorers.length == 0 && !c.hostOnly) {
            Eval fast = byRoom(c, idx, cap, explain);
            if (fast != null) {
                return fast;
            }
        }
        int[] keyCauses = exact ? null : new int[CAUSES];
        e.keyCauses = keyCauses;
        if (keyCauses != null) {
            e.firstKeyAt = new int[CAUSES];
        }
        if (keyCauses != null) {
            ReasonCode every = idx.room(c.online).refusesEvery(c);
            if (every != null) {
                // the largest fields of all keys refuse the claim at its first test, so each key does,
                // with that code: what the scan below would count, without reading a key
                keyCauses[every.ordinal()] = n;
                e.firstKeyAt[every.ordinal()] = 0;
                return e;
            }
        }
        NodeSummary[] topS = new NodeSummary[cap];
        double[] topV = new double[cap];
        int top = 0;
        double nodeWeight = config.nodeWeight();
        boolean scorers = nodeScorers.length > 0;
        boolean beyond = c.tiered || c.levelled;
        for (int i = 0; i < n; i++) {
            NodeState ns = null;
            NodeSummary s = null;
            long key;
            if (nodes != null) {   // exact
                ns = nodes.get(i);
                s = idx.summary(i, ns);
                key = s.key(c.online);
            } else {
                // the hot loop: one contiguous long per node; the node itself is read only if it may fit
                key = idx.key(i, c.online);
                ReasonCode cause = NodeIndex.cause(key, c);
                if (cause == null && beyond && scorers) {
                    cause = idx.keysBeyondTheFirst(i, c);   // before the registered scorers are asked
                }
                if (cause != null) {
                    e.keyCause(i, cause);   // counted for a refusal, should no node fit
                    continue;
                }
                if (scorers) {
                    ns = feed.nodeAt(i);
                }
            }
            // shortlist rank: the node policy term on the key's load (to 1/65535) plus registered scorers
            double load = NodeIndex.load(key);
            double v = nodeWeight * (c.nodeBinpack ? load : 1.0 - load);
            for (int j = 0; j < nodeScorers.length; j++) {
                v += nodeScorerWeights[j] * Score.check(nodeScorers[j].name() + ".score",
                        nodeScorers[j].score(c.claim, java.util.Objects.requireNonNull(ns, "ns"), ledger));
            }
            if (!exact && top == cap && v <= topV[cap - 1]) {
                // cut by rank: no key of it can change the shortlist. Not counted under a cause, which
                // only matters when no node fits, and then the shortlist never fills (top < cap)
                continue;
            }
            if (!exact && beyond && !scorers) {
                // the tier and level keys, read only for a node that would be read in full
                ReasonCode cause = idx.keysBeyondTheFirst(i, c);
                if (cause != null) {
                    e.keyCause(i, cause);
                    continue;
                }
            }
            if (s == null) {
                s = idx.summary(i, ns != null ? ns : feed.nodeAt(i));
            }
            if (!exact && e.feasibleSeen == 0) {
                // no node fits so far: this pass may end in a refusal, which counts this node's cause
                ReasonCode cause = verdicts.cause(s, c);
                if (cause != null) {
                    e.refusedBySummary(i, cause);
                    continue;
                }
            } else if (!feasible(s, c)) {
                if (!exact) {
                    e.refusedBySummary(i, null);
                }
                continue;
            }
            e.feasibleSeen++;
            if (explain) {
                e.feasible.add(s);
            }
            if (top < cap || v > topV[cap - 1]) {
                int j = top < cap ? top++ : cap - 1;
                while (j > 0 && topV[j - 1] < v) {
                    topV[j] = topV[j - 1];
                    topS[j] = topS[j - 1];
                    j--;
                }
                topV[j] = v;
                topS[j] = s;
            }
        }
        choose(e, topS, top, c, explain);
        return e;
    }

    /**
     * The fast pass without a scan of every key, for a claim with GPUs and no registered node scorer:
     * the shortlist is the first {@code cap} feasible nodes that {@link RoomTree#visit} hands out, which
     * come in the order of the scan's rank (the key's load under the node policy, ties in cluster order),
     * so it is the scan's shortlist. Null when it finds no node to choose (then the scan decides and
     * counts the causes of the refusal) or gives up past its budget (then the scan is cheaper).
     */
    @Nullable Eval byRoom(ClaimShape c, NodeIndex idx, int cap, boolean explain) {
        NodeSummary[] topS = new NodeSummary[cap];
        int[] top = new int[1];
        NodeFeed feed = idx.feed;
        RoomTree room = idx.room(c.online);
        boolean beyond = c.tiered || c.levelled;
        boolean done = room.visit(c, config.nodeWeight(), room.budget(cap), (i, key, rank) -> {
            if (beyond && idx.keysBeyondTheFirst(i, c) != null) {
                return true;   // the tier or level key refuses it: its summary would (the same bytes)
            }
            NodeSummary s = idx.summary(i, feed.nodeAt(i));
            if (feasible(s, c)) {
                topS[top[0]++] = s;
            }
            return top[0] < cap;
        });
        if (!done || top[0] == 0) {
            return null;
        }
        Eval e = new Eval();
        choose(e, topS, top[0], c, explain);
        return e.chosen == null ? null : e;
    }

    /** The best node and set of the shortlist {@code topS[0..top)}, in shortlist order (ties: the earlier). */
    private void choose(Eval e, NodeSummary[] topS, int top, ClaimShape c, boolean explain) {
        SetMemo m = memoFor(c);
        for (int j = 0; j < top; j++) {
            NodeSummary s = topS[j];
            SetSearch.Choice choice = m != null && s.size <= 64 ? rememberedBestSet(m, s, c) : bestSet(s, c, search(s, c));
            if (choice == null) {
                continue;   // feasible() already checked the set constraints; only an unstable filter gets here
            }
            double total = nodeScore(s, c) + choice.score();
            if (total > e.total) {
                e.total = total;
                e.chosen = s;
                e.positions = choice.positions();
            }
            if (explain) {
                e.shortlist.add(s);
            }
        }
    }


    /**
     * The affinity group's GPUs as the claim's only set on the group's node, scored; null when they
     * cannot take it (not {@code k} of them, the node or one of them refuses, a must-include GPU is
     * not among them, or {@code numa: required} fails).
     */
    SetSearch.@Nullable Choice groupChoice(ClaimShape c, Group g) {
        NodeSummary s = g.summary;
        return g.positions.length == c.k && nodeAccepts(s, c) && allAdmitted(s, c, g.positions)
                && mustIncludedIn(s, c, g.positions) ? search(s, c).single(g.positions) : null;
    }

    /**
     * Whether the node of {@code s} can take the claim, decided as {@link #evaluate} decides it: with
     * an affinity group only the group's GPUs on its node; otherwise {@link NodeVerdicts}, then the
     * best set and the total the pass would rank the node by.
     */
    NodeFit fit(ClaimShape c, NodeSummary s, @Nullable Group group) {
        String name = s.state.name();
        if (group != null) {
            if (!group.on(s.state)) {
                return new NodeFit.Refused(name, Reason.of(ReasonCode.AFFINITY, name, "affinity label " + c.affinity
                        + " is bound to node " + group.summary().state.name()));
            }
            SetSearch.Choice only = groupChoice(c, group);
            if (only != null) {
                return new NodeFit.Fits(name, GpuSet.of(only.positions()), nodeScore(s, c) + only.score());
            }
            Reason why = group.positions().length == c.k ? verdicts.reason(s, c) : null;
            return new NodeFit.Refused(name, why != null ? why : Reason.of(ReasonCode.AFFINITY, name, "the "
                    + group.positions().length + " GPU(s) of affinity label " + c.affinity + " cannot take the claim"));
        }
        SetSearch.Choice best;
        if (c.k == 1 && !c.mustInclude && s.size <= 64) {
            // one visit of the GPUs: the admissible ones' mask counts them for the verdict and is the set search's input
            Reason why = verdicts.reasonBeforeGpus(s, c);
            long mask = why == null ? verdicts.candidateMask(s, c) : 0L;
            if (why == null) {
                why = verdicts.reasonFromGpus(s, c, Long.bitCount(mask));
            }
            if (why != null) {
                return new NodeFit.Refused(name, why);
            }
            best = search(s, c).bestOne(mask);
        } else {
            Reason why = verdicts.reason(s, c);
            if (why != null) {
                return new NodeFit.Refused(name, why);
            }
            best = bestSet(s, c, search(s, c));
        }
        if (best == null) {
            return new NodeFit.Refused(name, Reason.of(ReasonCode.CONFLICT, name, "feasible when re-checked; filters are not stable"));
        }
        return new NodeFit.Fits(name, c.hostOnly ? GpuSet.empty() : GpuSet.of(best.positions()), nodeScore(s, c) + best.score());
    }

    static List<NodeState> nodesOf(NodeFeed feed) {
        List<NodeState> out = new ArrayList<>(feed.size());
        for (int i = 0; i < feed.size(); i++) {
            out.add(feed.nodeAt(i));
        }
        return out;
    }

    private boolean feasible(NodeSummary s, ClaimShape c) {
        return verdicts.feasible(s, c);
    }

    private static final int[] NONE = new int[0];
    private static final int CAUSES = io.qgpu.api.ReasonCode.values().length;

    SetSearch search(NodeSummary s, ClaimShape c) {
        return c.nodePolicy == PlacementPolicy.FRAGMENTATION
                ? new SetSearch(s, c, config, setScorers, setScorerWeights, ledger)
                : new SetSearch(s, c, config, plainSetScorers, plainSetScorerWeights, ledger);
    }

    /**
     * The memo of best sets when it is exact for the claim, else null: only the node summary, the
     * admissible GPUs, {@code k}, the GPU policy and {@code numa: required} may enter the set score, so
     * not under the {@code fragmentation} node policy (the term reads the cluster-wide request mix),
     * not with registered set scorers (no memo then, see the constructor), not for must-include GPUs
     * (kept out of the key) and not for a host-only claim (no set).
     */
    private @Nullable SetMemo memoFor(ClaimShape c) {
        return memo == null || c.nodePolicy == PlacementPolicy.FRAGMENTATION || c.mustInclude || c.hostOnly ? null : memo;
    }

    /**
     * {@link #bestSet} through the memo (a node of at most 64 GPUs, a claim {@link #memoFor} lets
     * through). A remembered choice is handed out as it is: its positions are read, never written,
     * by every caller.
     */
    private SetSearch.@Nullable Choice rememberedBestSet(SetMemo m, NodeSummary s, ClaimShape c) {
        long mask = verdicts.candidateMask(s, c);
        int shape = SetMemo.shape(c);
        SetMemo.Entry hit = m.get(s, mask, shape);
        if (hit != null) {
            return hit.choice();
        }
        SetSearch.Choice choice;
        if (c.k == 1) {
            choice = search(s, c).bestOne(mask);   // SetSearch#best's single-GPU path, without the array
        } else {
            int[] cand = new int[Long.bitCount(mask)];
            int n = 0;
            for (long b = mask; b != 0; b &= b - 1) {
                cand[n++] = Long.numberOfTrailingZeros(b);   // ascending, as candidates() writes them
            }
            choice = search(s, c).best(cand, n, NONE, 0);
        }
        m.put(s, mask, shape, choice);
        return choice;
    }

    /** The best set on the node, or null when no admissible set satisfies the claim's set constraints. */
    SetSearch.@Nullable Choice bestSet(NodeSummary s, ClaimShape c, SetSearch search) {
        if (c.hostOnly) {
            return new SetSearch.Choice(NONE, hostOnlyTerm(s, c));   // no GPU: the node score (and fragmentation) decides
        }
        if (c.k == 1 && !c.mustInclude && s.size <= 64) {
            return search.bestOne(verdicts.candidateMask(s, c));   // SetSearch#best's single-GPU path, without the array
        }
        int[] cand = new int[s.size];
        int m = candidates(s, c, cand);
        int[] fixed = c.mustInclude ? SetConstraints.mustPositions(s, c) : NONE;
        if (fixed == null) {
            return null;
        }
        return search.best(cand, m, fixed, fixed.length);
    }

    /** A host-only claim has no set; only the fragmentation term scores its node (for the CPU it takes). */
    double hostOnlyTerm(NodeSummary s, ClaimShape c) {
        double v = 0;
        for (int i = 0; i < setScorers.length; i++) {
            if (setScorers[i] instanceof FragmentationScorer f) {
                v += setScorerWeights[i] * f.hostOnlyScore(c.claim, s.state);
            }
        }
        return v;
    }

    private static boolean mustIncludedIn(NodeSummary s, ClaimShape c, int[] positions) {
        if (!c.mustInclude) {
            return true;
        }
        int[] fixed = SetConstraints.mustPositions(s, c);
        if (fixed == null) {
            return false;
        }
        for (int p : fixed) {
            if (!java.util.Arrays.stream(positions).anyMatch(q -> q == p)) {
                return false;
            }
        }
        return true;
    }

    /** Null when must-include GPUs and {@code numa: required} can be met on the node, else the reasons why not. */
    @Nullable List<Reason> setConstraintShortfall(NodeSummary s, ClaimShape c) {
        return verdicts.setConstraintShortfall(s, c);
    }

    private boolean nodeAccepts(NodeSummary s, ClaimShape c) {
        if (c.cpuMillis > s.cpuFree || c.hostMemory > s.hostMemFree) {
            return false;   // the ledger's host rule, as NodeSummary#precheckCause applies it
        }
        if (c.nodeSelectors && !c.claim.selectors().matchesNode(s.state.node())) {
            return false;
        }
        for (NodeFilter f : nodeFilters) {
            if (!f.check(c.claim, s.state, ledger).isEmpty()) {
                return false;
            }
        }
        return true;
    }

    private boolean allAdmitted(NodeSummary s, ClaimShape c, int[] positions) {
        for (int p : positions) {
            if (!s.admits(p, c) || !gpuFiltersAccept(s, p, c)) {
                return false;
            }
        }
        return true;
    }

    private boolean gpuFiltersAccept(NodeSummary s, int g, ClaimShape c) {
        return verdicts.gpuFiltersAccept(s, g, c);
    }

    private int candidates(NodeSummary s, ClaimShape c, int[] out) {
        return verdicts.candidates(s, c, out);
    }

    double nodeScore(NodeSummary s, ClaimShape c) {
        double v = config.nodeWeight() * (c.nodeBinpack ? s.nodeLoad : 1.0 - s.nodeLoad);
        for (int i = 0; i < nodeScorers.length; i++) {
            v += nodeScorerWeights[i] * Score.check(nodeScorers[i].name() + ".score",
                    nodeScorers[i].score(c.claim, s.state, ledger));
        }
        return v;
    }

    /**
     * The GPUs holding tenants with the claim's affinity label (one node at most: the ledger keeps it
     * so), from {@code nodes} when given, else from the nodes' current states.
     */
    static @Nullable Group findGroup(ClaimShape c, NodeIndex idx, @Nullable List<NodeState> nodes) {
        for (int i = 0; i < idx.size; i++) {
            NodeSummary s = idx.summary(i, nodes != null ? nodes.get(i) : idx.feed.nodeAt(i));
            if (!s.anyAffinity) {
                continue;
            }
            int[] pos = new int[s.size];
            int m = 0;
            for (int g = 0; g < s.size; g++) {
                if (s.state.gpu(g).hasAffinity(java.util.Objects.requireNonNull(c.affinity, "affinity: callers check it"))) {
                    pos[m++] = g;
                }
            }
            if (m > 0) {
                return new Group(s, java.util.Arrays.copyOf(pos, m));
            }
        }
        return null;
    }

    static Placement placementOf(ClaimShape c, NodeSummary s, int[] positions) {
        Claim claim = c.claim;
        List<Slice> slices = new ArrayList<>(positions.length);
        for (int p : positions) {
            GpuState g = s.state.gpu(p);
            long mem = claim.exclusive() ? g.device().memoryBytes() : claim.memoryPerGpuBytes();
            slices.add(new Slice(g.uuid(), mem, claim.computeRequest(), claim.computeLimit()));
        }
        return new Placement(claim, s.state.name(), slices);
    }

}
