package io.qgpu.cli.replay;

import io.qgpu.api.CauseCount;
import io.qgpu.api.Claim;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Validate;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.NodeFit;
import io.qgpu.core.placement.PlacementConfig;
import io.qgpu.core.placement.PlacementEngine;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * What kube-scheduler with Dynamic Resource Allocation would do with each pod of the replay, decided
 * through qgpu's {@link PlacementEngine} and committed to its {@link Ledger} (so CPU, memory, GPU
 * shares, exclusivity and model selectors are enforced exactly as for the other policies):
 *
 * <ol>
 *   <li><b>Which nodes are looked at.</b> The nodes in cluster order, starting where the previous pod's
 *       search stopped, until {@link #numFeasibleNodesToFind} nodes that can take the pod are found
 *       (kube-scheduler's adaptive {@code percentageOfNodesToScore}: 497 of the trace's 1,213 nodes);
 *       the next pod starts after the last node looked at (feasible or not). Feasibility is the
 *       engine's {@link PlacementEngine#check}: free CPU and memory (NodeResourcesFit's filter) and
 *       enough devices that can hold the claim (the DRA filter).</li>
 *   <li><b>Which of them wins.</b> The highest {@link KubeScoring} total; among equal totals one chosen
 *       uniformly at random by reservoir sampling, as kube-scheduler's {@code selectHost} does, with a
 *       {@link Random} seeded with the replay's seed (so a replay is reproducible).</li>
 *   <li><b>Which devices.</b> {@link PlacementEngine#placeOn} on that node with every built-in term of
 *       the set score at weight 0 ({@link #config}): all sets of admissible GPUs score alike and the
 *       engine keeps the lexicographically first, which is the first {@code k} GPUs in index order
 *       that can hold the claim: the DRA structured allocator's first fit, which walks the node's
 *       devices in the order its ResourceSlice lists them ({@code gpu-0}, {@code gpu-1}, ... for qgpu's
 *       driver) and takes the first whose remaining capacity holds the request (a share of a device
 *       published with {@code allowMultipleAllocations} consumes its part; a whole-GPU request, which
 *       asks no capacity amount, consumes all of it and so needs an untouched device). With one
 *       request per claim and no constraints between devices the allocator never backtracks.</li>
 * </ol>
 * Filtering is modelled as one sequential walk: kube-scheduler filters with 16 goroutines and may look
 * at a few more nodes before it notices it has enough, which moves the next start slightly; the
 * kubelet's pod limit per node (110 by default) is not modelled, as the trace gives none.
 *
 * <p>Thread safety: not thread-safe (the start index and the random source are state); a replay runs
 * on one thread.
 */
public final class KubeDraScheduler {
    /** Below this many nodes every node is looked at; and never fewer are looked for. */
    public static final int MIN_FEASIBLE_NODES_TO_FIND = 100;
    /** The adaptive percentage never goes below this. */
    public static final int MIN_FEASIBLE_NODES_PERCENTAGE = 5;
    /** How many nodes one {@link PlacementEngine#check} call asks about. */
    private static final int CHUNK = 64;

    private final PlacementEngine engine;
    private final List<String> nodes;
    private final int toFind;
    private final Random random;
    private int nextStart;

    private KubeDraScheduler(PlacementEngine engine, List<String> nodes, long seed) {
        this.engine = engine;
        this.nodes = List.copyOf(nodes);
        this.toFind = numFeasibleNodesToFind(this.nodes.size());
        this.random = new Random(seed);
    }

    /**
     * The scheduler over {@code ledger}'s nodes in the order given ({@code nodeNames}, the cluster
     * order), with its engine ({@link #config} and {@link KubeScoring} at weight 1) and its tie-breaks
     * seeded with {@code seed}.
     */
    public static KubeDraScheduler create(Ledger ledger, List<String> nodeNames, long seed) {
        Validate.notNull("kubeDra.ledger", ledger);
        Validate.notNull("kubeDra.nodeNames", nodeNames);
        PlacementEngine engine = PlacementEngine.builder(ledger).config(config())
                .nodeScorer(new KubeScoring(), 1.0).build();
        return new KubeDraScheduler(engine, nodeNames, seed);
    }

    /**
     * The engine configuration of this policy: every built-in node and set term at weight 0 (so only
     * {@link KubeScoring} ranks nodes and every admissible GPU set of a node scores alike), a shortlist
     * of one.
     */
    public static PlacementConfig config() {
        return PlacementConfig.builder().nodePolicy(PlacementPolicy.BINPACK).gpuPolicy(PlacementPolicy.BINPACK)
                .nodeWeight(0).cliqueWeight(0).linkWeight(0).loadWeight(0).leftoverWeight(0).numaWeight(0).pcieWeight(0)
                .fragmentationWeight(0).shortlist(1).build();
    }

    /**
     * kube-scheduler's number of feasible nodes to find among {@code allNodes}, with
     * {@code percentageOfNodesToScore} left at its default (adaptive): every node below
     * {@value #MIN_FEASIBLE_NODES_TO_FIND} nodes; else {@code 50 - allNodes / 125} percent (whole-number
     * division), at least {@value #MIN_FEASIBLE_NODES_PERCENTAGE}%, of the nodes, rounded down, and at
     * least {@value #MIN_FEASIBLE_NODES_TO_FIND}.
     */
    public static int numFeasibleNodesToFind(int allNodes) {
        if (allNodes < MIN_FEASIBLE_NODES_TO_FIND) {
            return allNodes;
        }
        int percentage = Math.max(MIN_FEASIBLE_NODES_PERCENTAGE, 50 - allNodes / 125);
        int n = (int) ((long) allNodes * percentage / 100);
        return Math.max(n, MIN_FEASIBLE_NODES_TO_FIND);
    }

    /** Where the next pod's search starts (a position in the node order). */
    int nextStart() {
        return nextStart;
    }

    /** How many feasible nodes each search stops at. */
    int toFind() {
        return toFind;
    }

    /**
     * Schedules one pod's claim: the nodes looked at, the winner, and its first-fit devices, committed
     * ({@link PlacementEngine#placeOn}'s answer); when no node can take it, an {@code Unschedulable} that
     * counts the nodes looked at by the cause of their refusal.
     */
    public PlacementResult place(Claim claim) {
        int n = nodes.size();
        List<NodeFit.Fits> feasible = new ArrayList<>();
        Map<ReasonCode, Integer> refused = new EnumMap<>(ReasonCode.class);
        int processed = 0;
        while (processed < n && feasible.size() < toFind) {
            int len = Math.min(CHUNK, n - processed);
            List<String> ask = new ArrayList<>(len);
            for (int j = 0; j < len; j++) {
                ask.add(nodes.get((nextStart + processed + j) % n));
            }
            for (NodeFit fit : engine.check(claim, ask)) {
                processed++;
                if (fit instanceof NodeFit.Fits f) {
                    feasible.add(f);
                    if (feasible.size() == toFind) {
                        break;
                    }
                } else {
                    refused.merge(((NodeFit.Refused) fit).reason().code(), 1, Integer::sum);
                }
            }
        }
        nextStart = n == 0 ? 0 : (nextStart + processed) % n;
        if (feasible.isEmpty()) {
            List<CauseCount> causes = new ArrayList<>();
            refused.forEach((code, count) -> causes.add(new CauseCount(code, count)));
            causes.sort((a, b) -> Integer.compare(b.nodes(), a.nodes()));
            return new PlacementResult.Unschedulable(claim.tenantId(), Map.of(), List.of(), causes, processed);
        }
        return engine.placeOn(claim, feasible.get(selectHost(feasible, random)).node());
    }

    /**
     * The index of the node kube-scheduler's {@code selectHost} picks: the highest {@link KubeScoring}
     * total, ties broken by reservoir sampling (the {@code i}-th tied node replaces the pick with
     * probability {@code 1/i}), so each of the tied nodes is equally likely.
     */
    static int selectHost(List<NodeFit.Fits> feasible, Random random) {
        int pick = 0;
        long best = KubeScoring.totalOf(feasible.get(0).total());
        int ties = 1;
        for (int i = 1; i < feasible.size(); i++) {
            long t = KubeScoring.totalOf(feasible.get(i).total());
            if (t > best) {
                best = t;
                pick = i;
                ties = 1;
            } else if (t == best) {
                ties++;
                if (random.nextInt(ties) == 0) {
                    pick = i;
                }
            }
        }
        return pick;
    }
}
