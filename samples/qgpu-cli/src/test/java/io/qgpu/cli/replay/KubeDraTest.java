package io.qgpu.cli.replay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.NodeState;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.placement.GpuSet;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.NodeFit;
import io.qgpu.core.placement.PlacementEngine;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The {@code kube-dra} policy: kube-scheduler's default node scores against values computed by hand,
 * its node sampling and tie-break, and the DRA allocator's first-fit device order.
 */
class KubeDraTest {
    private static final long GIB_MIB = 1024;

    private static TracePod pod(String name, long cpu, long memMib, int gpus, int milli, String... models) {
        return new TracePod(name, cpu, memMib, gpus, milli, Set.of(models), "LS");
    }

    private static Claim claim(String tenant, TracePod p, List<TraceNode> nodes) {
        return TraceMapping.claim(tenant, p, TraceMapping.smallestMemory(nodes));
    }

    private static Ledger ledger(List<TraceNode> nodes) {
        return Ledger.create(TraceMapping.RULES, TraceMapping.nodes(nodes));
    }

    private static List<String> names(List<TraceNode> nodes) {
        return nodes.stream().map(TraceNode::name).toList();
    }

    private static String placedOn(PlacementResult r) {
        return assertInstanceOf(PlacementResult.Placed.class, r, r.toString()).placement().nodeName();
    }

    private static List<String> gpusOf(PlacementResult r) {
        return assertInstanceOf(PlacementResult.Placed.class, r, r.toString()).placement().gpuUuids();
    }

    @Test
    void leastAllocatedAndBalancedAllocationAsComputedByHand() {
        // (8000 - 3000) * 100 / 8000 = 62.5, rounded down
        assertEquals(62, KubeScoring.leastAllocated(3000, 8000));
        assertEquals(100, KubeScoring.leastAllocated(0, 8000));
        assertEquals(0, KubeScoring.leastAllocated(8000, 8000));
        assertEquals(0, KubeScoring.leastAllocated(9000, 8000), "a request past the capacity scores 0");
        assertEquals(0, KubeScoring.leastAllocated(1, 0), "no capacity scores 0");
        // cpu 62, memory (16 - 6) * 100 / 16 = 62.5 -> 62; mean 62
        assertEquals(62, KubeScoring.fit(3000, 8000, 6 * GIB_MIB, 16 * GIB_MIB));
        // cpu 87 (87.5), memory 25: (87 + 25) / 2 = 56
        assertEquals(56, KubeScoring.fit(1000, 8000, 12 * GIB_MIB, 16 * GIB_MIB));
        // fractions 0.375 and 0.25: std 0.0625, (1 - 0.0625) * 100 = 93.75 -> 93
        assertEquals(93, KubeScoring.balanced(3000, 8000, 4 * GIB_MIB, 16 * GIB_MIB));
        assertEquals(100, KubeScoring.balanced(4000, 8000, 8 * GIB_MIB, 16 * GIB_MIB), "equal fractions: perfectly balanced");
        // fractions capped at 1: 1.0 and 0.0 -> std 0.5 -> 50
        assertEquals(50, KubeScoring.balanced(12000, 8000, 0, 16 * GIB_MIB));
    }

    /**
     * Three nodes of 32 cores, 128 GiB and 2 T4 each, and a pod of 8 cores, 16 GiB and half a GPU:
     * <pre>
     *   a: 16 cores, 32 GiB used -> cpu 24/32: 25; memory 48/128: 62 (62.5); fit (25 + 62) / 2 = 43
     *      balanced: 0.75 and 0.375, std 0.1875 -> 81 (81.25); total 124
     *   b: no CPU (counted as 100 millicores for LeastAllocated), 96 GiB used -> cpu 8.1/32: 74 (74.7);
     *      memory 112/128: 12 (12.5); fit (74 + 12) / 2 = 43
     *      balanced (actual requests): 0.25 and 0.875, std 0.3125 -> 68 (68.75); total 111
     *   c: 10 millicores and 10 MiB used, but both GPUs held whole: cpu 74 (74.97), memory 87 (87.49),
     *      fit 80; balanced 0.2503 and 0.1251 -> 93 (93.74); total 173, and it is filtered out
     * </pre>
     * LeastAllocated alone ties a and b; BalancedAllocation sends the pod to a, on its first GPU.
     */
    @Test
    void theDefaultScoresChooseTheNodeAsComputedByHand() {
        List<TraceNode> nodes = List.of(new TraceNode("a", 32000, 128 * GIB_MIB, 2, "T4"),
                new TraceNode("b", 32000, 128 * GIB_MIB, 2, "T4"), new TraceNode("c", 32000, 128 * GIB_MIB, 2, "T4"));
        Ledger ledger = ledger(nodes);
        PlacementEngine plain = PlacementEngine.create(ledger);
        placedOn(plain.placeOn(claim("a-load", pod("a-load", 16000, 32 * GIB_MIB, 0, 0), nodes), "a"));
        placedOn(plain.placeOn(claim("b-load", pod("b-load", 0, 96 * GIB_MIB, 0, 0), nodes), "b"));
        placedOn(plain.placeOn(claim("c-load", pod("c-load", 10, 10, 2, 1000), nodes), "c"));
        Claim p = claim("p", pod("p", 8000, 16 * GIB_MIB, 1, 500), nodes);
        assertEquals(124, KubeScoring.total(p, state(ledger, "a")));
        assertEquals(111, KubeScoring.total(p, state(ledger, "b")));
        assertEquals(173, KubeScoring.total(p, state(ledger, "c")), "c scores best but cannot take a GPU");
        assertEquals(124.0 / 200, new KubeScoring().score(p, state(ledger, "a"), ledger));

        PlacementResult r = KubeDraScheduler.create(ledger, names(nodes), 42).place(p);
        assertEquals("a", placedOn(r));
        assertEquals(List.of("a-gpu0"), gpusOf(r));
    }

    /** The "non-zero" requests: a pod that asks no memory counts 200 MiB for LeastAllocated, nothing for BalancedAllocation. */
    @Test
    void podsThatAskNoMemoryCountTheDefaultForLeastAllocatedOnly() {
        List<TraceNode> nodes = List.of(new TraceNode("a", 8000, 1000, 1, "T4"));
        Ledger ledger = ledger(nodes);
        placedOn(PlacementEngine.create(ledger).placeOn(claim("z", pod("z", 2000, 0, 0, 0), nodes), "a"));
        Claim p = claim("p", pod("p", 2000, 0, 0, 0), nodes);
        // memory 1000 MiB; non-zero requested 200 + 200 = 400 MiB -> (600 * 100 / 1000) = 60; cpu 4000/8000 -> 50
        // fit (50 + 60) / 2 = 55; balanced on the actual requests: 0.5 and 0.0 -> std 0.25 -> 75
        assertEquals(55 + 75, KubeScoring.total(p, state(ledger, "a")));
    }

    private static NodeState state(Ledger ledger, String node) {
        return ledger.node(node).orElseThrow();
    }

    @Test
    void adaptivePercentageOfNodesToScore() {
        assertEquals(99, KubeDraScheduler.numFeasibleNodesToFind(99), "below 100 nodes: every node");
        assertEquals(100, KubeDraScheduler.numFeasibleNodesToFind(100), "50% of 100 is below the minimum of 100");
        assertEquals(120, KubeDraScheduler.numFeasibleNodesToFind(250), "48% of 250");
        assertEquals(497, KubeDraScheduler.numFeasibleNodesToFind(1213), "the trace: 41% of 1,213 = 497.33");
        assertEquals(500, KubeDraScheduler.numFeasibleNodesToFind(5000), "10% of 5,000");
        assertEquals(500, KubeDraScheduler.numFeasibleNodesToFind(10000), "at least 5%");
        assertEquals(1500, KubeDraScheduler.numFeasibleNodesToFind(30000));
    }

    /**
     * 130 nodes (100 to find): 110 T4 nodes, then 20 V100M16 nodes. The first T4 pod's search takes
     * nodes 0-99 and stops; the second starts at 100: 10 feasible, 20 infeasible, then 0-89, the
     * hundredth feasible node: 120 nodes looked at, the next start is (100 + 120) mod 130 = 90. A V100
     * pod finds only 20 nodes: every node is looked at and the start stays.
     */
    @Test
    void theSearchStopsAtTheFeasibleNodesToFindAndTheNextPodStartsAfterIt() {
        List<TraceNode> nodes = new ArrayList<>();
        for (int i = 0; i < 130; i++) {
            nodes.add(new TraceNode(String.format("n%03d", i), 32000, 128 * GIB_MIB, 1, i < 110 ? "T4" : "V100M16"));
        }
        KubeDraScheduler s = KubeDraScheduler.create(ledger(nodes), names(nodes), 7);
        assertEquals(100, s.toFind());
        int first = Integer.parseInt(placedOn(s.place(claim("p0", pod("p0", 1000, 1024, 1, 200, "T4"), nodes))).substring(1));
        assertTrue(first < 100, "only nodes 0-99 were looked at: " + first);
        assertEquals(100, s.nextStart());
        int second = Integer.parseInt(placedOn(s.place(claim("p1", pod("p1", 1000, 1024, 1, 200, "T4"), nodes))).substring(1));
        assertTrue(second < 110 && (second >= 100 || second < 90), "looked at 100-129 and 0-89: " + second);
        assertEquals(90, s.nextStart());
        int v100 = Integer.parseInt(placedOn(s.place(claim("p2", pod("p2", 1000, 1024, 1, 200, "V100M16"), nodes))).substring(1));
        assertTrue(v100 >= 110, "the model selector keeps it on a V100: " + v100);
        assertEquals(90, s.nextStart(), "every node looked at: the start goes round once");
        PlacementResult none = s.place(claim("p3", pod("p3", 1000, 1024, 1, 200, "A100"), nodes));
        PlacementResult.Unschedulable u = assertInstanceOf(PlacementResult.Unschedulable.class, none);
        assertEquals(130, u.nodeCount());
        assertEquals(130, u.causes().stream().mapToInt(c -> c.nodes()).sum());
        PlacementResult empty = KubeDraScheduler.create(ledger(List.of()), List.of(), 7).place(claim("p4", pod("p4", 1000, 1024, 1, 200), nodes));
        assertEquals(0, assertInstanceOf(PlacementResult.Unschedulable.class, empty).nodeCount(), "no nodes: refused, not a division by zero");
    }

    /** Equal totals: each of the tied nodes about equally often (seeded: the same counts every run); a higher total always wins. */
    @Test
    void tiesAreBrokenUniformlyAtRandomWithTheSeed() {
        List<NodeFit.Fits> fits = new ArrayList<>();
        for (long t : new long[] {150, 170, 170, 90, 170}) {
            fits.add(new NodeFit.Fits("n" + fits.size(), GpuSet.of(0), t / 200.0));
        }
        Random rnd = new Random(3);
        int[] counts = new int[fits.size()];
        for (int i = 0; i < 3000; i++) {
            counts[KubeDraScheduler.selectHost(fits, rnd)]++;
        }
        assertEquals(0, counts[0] + counts[3]);
        for (int i : new int[] {1, 2, 4}) {
            assertTrue(counts[i] > 900 && counts[i] < 1100, "about a third each: " + java.util.Arrays.toString(counts));
        }
        fits.add(new NodeFit.Fits("n5", GpuSet.of(0), 171 / 200.0));
        assertEquals(5, KubeDraScheduler.selectHost(fits, rnd));
        // the same seed, the same picks
        Random a = new Random(11);
        Random b = new Random(11);
        fits.remove(5);
        for (int i = 0; i < 50; i++) {
            assertEquals(KubeDraScheduler.selectHost(fits, a), KubeDraScheduler.selectHost(fits, b));
        }
    }

    /**
     * First fit in device order on one node of four T4: 20% goes to gpu0, 90% does not fit beside it and
     * goes to gpu1, then 10% goes to gpu0, the first device with room, where binpack would take the
     * fuller gpu1 and qgpu's default (GPU spread) an idle one; a whole GPU takes the first untouched one
     * (gpu2), two whole GPUs find only gpu3 untouched and are refused, and 85% goes to gpu3.
     */
    @Test
    void devicesAreTakenFirstFitInIndexOrder() {
        List<TraceNode> nodes = List.of(new TraceNode("a", 64000, 256 * GIB_MIB, 4, "T4"));
        Ledger ledger = ledger(nodes);
        KubeDraScheduler s = KubeDraScheduler.create(ledger, names(nodes), 1);
        assertEquals(List.of("a-gpu0"), gpusOf(s.place(claim("p1", pod("p1", 1000, 1024, 1, 200), nodes))));
        assertEquals(List.of("a-gpu1"), gpusOf(s.place(claim("p2", pod("p2", 1000, 1024, 1, 900), nodes))));
        Claim tenth = claim("p3", pod("p3", 1000, 1024, 1, 100), nodes);
        NodeFit binpack = PlacementEngine.builder(ledger).policies(PlacementPolicy.BINPACK, PlacementPolicy.BINPACK).build()
                .check(tenth, List.of("a")).get(0);
        assertEquals(List.of("a-gpu1"), ((NodeFit.Fits) binpack).gpus().uuids(state(ledger, "a")), "binpack would take the fuller gpu1");
        assertEquals(List.of("a-gpu0"), gpusOf(s.place(tenth)));
        assertEquals(List.of("a-gpu2"), gpusOf(s.place(claim("p4", pod("p4", 1000, 1024, 1, 1000), nodes))));
        assertInstanceOf(PlacementResult.Unschedulable.class, s.place(claim("p5", pod("p5", 1000, 1024, 2, 1000), nodes)));
        assertEquals(List.of("a-gpu3"), gpusOf(s.place(claim("p6", pod("p6", 1000, 1024, 1, 850), nodes))));
        assertEquals(List.of("a-gpu0"), gpusOf(s.place(claim("p7", pod("p7", 1000, 1024, 1, 700), nodes))), "gpu0 had 70% left");
        Set<String> multi = new HashSet<>(gpusOf(KubeDraScheduler.create(ledger(List.of(new TraceNode("b", 64000, 256 * GIB_MIB, 8, "T4"))),
                List.of("b"), 1).place(claim("p8", pod("p8", 1000, 1024, 3, 1000), List.of(new TraceNode("b", 64000, 256 * GIB_MIB, 8, "T4"))))));
        assertEquals(Set.of("b-gpu0", "b-gpu1", "b-gpu2"), multi, "three whole GPUs: the first three");
    }

    /** The same seed gives the same replay; the policy's name parses. */
    @Test
    void aKubeDraReplayIsReproducible() {
        List<TraceNode> nodes = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            nodes.add(new TraceNode("n" + i, 32000, 128 * GIB_MIB, i % 2 == 0 ? 2 : 4, i < 3 ? "T4" : "V100M16"));
        }
        List<TracePod> pods = new ArrayList<>();
        int[] milli = {250, 500, 1000, 300, 700, 100, 1000, 0};
        for (int i = 0; i < 30; i++) {
            int m = milli[i % milli.length];
            pods.add(pod("p" + i, 2000 + 500 * (i % 3), 4096, m == 0 ? 0 : i % 11 == 0 ? 2 : 1, m));
        }
        long cap = 18_000;
        TraceReplay.Result a = TraceReplay.run(nodes, Workload.stream(pods, cap, 1.2, 5), TraceReplay.Policy.fromName("kube-dra"), 5, null);
        TraceReplay.Result b = TraceReplay.run(nodes, Workload.stream(pods, cap, 1.2, 5), TraceReplay.Policy.KUBE_DRA, 5, null);
        assertEquals(TraceReplay.Policy.KUBE_DRA, a.policy());
        assertTrue(java.util.Arrays.equals(a.allocatedMilli(), b.allocatedMilli()));
        assertTrue(a.placed() > 0);
    }
}
