package io.qgpu.core.placement;

import io.qgpu.api.CauseCount;
import io.qgpu.api.NodeState;
import io.qgpu.api.ReasonCode;
import io.qgpu.core.internal.NodeFeed;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The fast "no": one exact pass over every node that proves no node can take a claim, or finds one
 * that can, without visiting a GPU of a node whose summaries already refuse it. Each refused node is
 * counted once, under the code of its verdict.
 *
 * <p>When the index's keys are settled ({@link NodeIndex#settled}: every numbered change delivered,
 * no refresh under way, and none begun by the end of the scan), the pass streams through the
 * contiguous per-node keys: a key that shows a shortage ({@link NodeIndex#cause}; for a shared claim
 * also the tier and level keys, {@link RefusalTiers}) refuses its node
 * at once, and only the nodes the keys let through are read, their {@link NodeSummary} deciding
 * ({@link NodeVerdicts}) and their GPUs visited only when the summary's aggregates let the claim
 * through. Otherwise (concurrent changes or refreshes) it reads every node's current state and the
 * summary made from exactly that state, as the engine's explain does.
 *
 * <p>Exact: a node is refused here exactly when {@link NodeVerdicts#cause} refuses a state of it at
 * least as new as every change completed before the scan began, which is the placement pass's own
 * feasibility rule. With an affinity group only the group's node can take the claim
 * ({@link NodePass#groupChoice}); every other node counts as {@code AFFINITY}.
 *
 * <p>Thread safety: stateless; each scan returns its own {@link Tally}.
 */
final class RefusalScan {
    private static final ReasonCode[] CODES = ReasonCode.values();

    private RefusalScan() {
    }

    /** What a scan found. */
    static final class Tally {
        /** Refused nodes per {@link ReasonCode} ordinal. */
        final int[] counts = new int[CODES.length];
        /** The first refused node of each code (the state classified). */
        final NodeState[] firstOf = new NodeState[CODES.length];
        /** The first refused nodes in cluster order, at most the detail bound. */
        final List<NodeState> leading = new ArrayList<>();
        /** Nodes scanned. */
        int nodes;
        /** A node that can take the claim, or null when none can. */
        @Nullable NodeState feasible;
        /** The claim's affinity group, when its label holds GPUs. */
        NodePass.@Nullable Group group;

        /** Whether a node refused for {@code code} would be remembered for the detail. */
        @SuppressWarnings("EnumOrdinal") // counts is an array indexed by ReasonCode ordinal
        boolean wants(ReasonCode code, int detail) {
            return counts[code.ordinal()] == 0 || leading.size() < detail;
        }

        @SuppressWarnings("EnumOrdinal") // counts is an array indexed by ReasonCode ordinal
        void refuse(ReasonCode code, NodeState ns, int detail) {
            int o = code.ordinal();
            if (counts[o]++ == 0) {
                firstOf[o] = ns;
            }
            if (leading.size() < detail) {
                leading.add(ns);
            }
        }

        /** The counts, most nodes first. */
        List<CauseCount> causes() {
            Map<ReasonCode, Integer> m = new EnumMap<>(ReasonCode.class);
            for (int i = 0; i < counts.length; i++) {
                if (counts[i] > 0) {
                    m.put(CODES[i], counts[i]);
                }
            }
            return CauseCount.ordered(m);
        }
    }

    /**
     * Scans every node of {@code idx} for {@code c}; stops at the first node that can take it, or,
     * when {@code toEnd}, counts such a node as {@code CONFLICT} (feasible when re-checked: an
     * unstable filter or a concurrent change) and goes on.
     *
     * @param detail how many refused nodes to remember in cluster order ({@link Tally#leading})
     */
    static Tally scan(ClaimShape c, NodeIndex idx, NodePass pass, int detail, boolean toEnd) {
        Tally t = new Tally();
        int n = idx.size;
        t.nodes = n;
        NodePass.Group group = c.affinity == null ? null : NodePass.findGroup(c, idx, null);
        if (group != null) {
            t.group = group;
            return scanGroup(c, idx, pass, group, detail, toEnd, t);
        }
        long token = idx.settled();
        if (token >= 0) {
            scanKeys(c, idx, pass.verdicts, detail, toEnd, t);
            if (idx.stillSettled(token)) {
                return t;
            }
            t = new Tally();   // a key was written meanwhile: start over on the summaries themselves
            t.nodes = n;
        }
        scanSummaries(c, idx, pass.verdicts, detail, toEnd, t);
        return t;
    }

    /**
     * Over settled keys ({@link NodeIndex#settled}): streams through the contiguous keys; reads a node
     * only when its key lets the claim through, or to remember it for the detail.
     */
    @SuppressWarnings("EnumOrdinal") // counts is an array indexed by ReasonCode ordinal
    private static void scanKeys(ClaimShape c, NodeIndex idx, NodeVerdicts verdicts, int detail, boolean toEnd, Tally t) {
        NodeFeed feed = idx.feed;
        for (int i = 0; i < t.nodes; i++) {
            ReasonCode code = idx.cause(i, c);
            NodeState ns = null;
            if (code == null) {
                ns = feed.nodeAt(i);
                code = verdicts.cause(idx.summary(i, ns), c);
                if (code == null) {
                    t.feasible = ns;
                    if (!toEnd) {
                        return;
                    }
                    code = ReasonCode.CONFLICT;
                }
            }
            if (t.wants(code, detail)) {
                t.refuse(code, ns != null ? ns : feed.nodeAt(i), detail);
            } else {
                t.counts[code.ordinal()]++;
            }
        }
    }

    /** Over each node's current state and the summary made from exactly it. */
    private static void scanSummaries(ClaimShape c, NodeIndex idx, NodeVerdicts verdicts, int detail, boolean toEnd,
                                      Tally t) {
        NodeFeed feed = idx.feed;
        for (int i = 0; i < t.nodes; i++) {
            NodeState ns = feed.nodeAt(i);
            NodeSummary s = idx.summary(i, ns);
            ReasonCode code = NodeIndex.cause(s, c);
            if (code == null) {
                code = verdicts.cause(s, c);
                if (code == null) {
                    t.feasible = ns;
                    if (!toEnd) {
                        return;
                    }
                    code = ReasonCode.CONFLICT;
                }
            }
            t.refuse(code, ns, detail);
        }
    }

    /**
     * The tally of a placement pass over settled keys that found no feasible node
     * ({@link NodePass.Eval#feasibleSeen} 0, so the pass looked at every node: the key's cause for
     * each node its key refused, the summary's for the others), without a second pass over the keys;
     * null when a key was written since {@code token} ({@link NodeIndex#settled}), when the caller must
     * {@link #scan}.
     */
    @SuppressWarnings("EnumOrdinal") // counts is an array indexed by ReasonCode ordinal
    static @Nullable Tally fromPass(ClaimShape c, NodeIndex idx, NodePass pass, NodePass.Eval e, int detail, long token) {
        if (e.feasibleSeen != 0 || e.group != null || e.keyCauses == null || !idx.stillSettled(token)) {
            return null;
        }
        Tally t = new Tally();
        t.nodes = idx.size;
        System.arraycopy(e.keyCauses, 0, t.counts, 0, t.counts.length);
        NodeFeed feed = idx.feed;
        int[] firstAt = new int[CODES.length];
        java.util.Arrays.fill(firstAt, Integer.MAX_VALUE);
        for (int o = 0; o < CODES.length; o++) {
            if (e.keyCauses[o] > 0) {
                firstAt[o] = e.firstKeyAt[o];   // the pass went in cluster order: the first it counted
            }
        }
        for (int j = 0; j < e.refusedBySummaryCount; j++) {
            int i = e.refusedBySummary[j];
            // the cause the pass took from the node's summary (no node had fitted yet, so it took one)
            int o = e.refusedBySummaryCause[j];
            if (o < 0) {
                return null;   // not taken: a node fitted before this one, so feasibleSeen is not 0
            }
            t.counts[o]++;
            firstAt[o] = Math.min(firstAt[o], i);
        }
        for (int o = 0; o < CODES.length; o++) {
            if (firstAt[o] != Integer.MAX_VALUE) {
                t.firstOf[o] = feed.nodeAt(firstAt[o]);
            }
        }
        for (int i = 0; i < Math.min(detail, t.nodes); i++) {
            t.leading.add(feed.nodeAt(i));
        }
        return idx.stillSettled(token) ? t : null;
    }

    private static Tally scanGroup(ClaimShape c, NodeIndex idx, NodePass pass, NodePass.Group group, int detail,
                                   boolean toEnd, Tally t) {
        for (int i = 0; i < idx.size; i++) {
            NodeState ns = idx.feed.nodeAt(i);
            if (!group.on(ns)) {
                t.refuse(ReasonCode.AFFINITY, ns, detail);
                continue;
            }
            ReasonCode code;
            if (pass.groupChoice(c, group) != null) {
                t.feasible = group.summary().state;
                if (!toEnd) {
                    return t;
                }
                code = ReasonCode.CONFLICT;
            } else {
                code = group.positions().length == c.k ? pass.verdicts.cause(group.summary(), c) : null;
            }
            t.refuse(code == null ? ReasonCode.AFFINITY : code, group.summary().state, detail);
        }
        return t;
    }
}
