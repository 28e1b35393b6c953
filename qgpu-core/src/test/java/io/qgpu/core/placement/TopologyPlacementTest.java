package io.qgpu.core.placement;

import static io.qgpu.core.placement.Nodes.claim;
import static io.qgpu.core.placement.Nodes.on;
import static io.qgpu.core.placement.Nodes.positions;
import static io.qgpu.core.placement.PlacementEngineTest.placed;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.Topology;
import io.qgpu.api.TopologyLevel;
import io.qgpu.core.ledger.internal.Admission;
import io.qgpu.core.ledger.Ledger;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class TopologyPlacementTest {

    private static final long SEED = Long.getLong("qgpu.seed", 4242L);

    static boolean allNvLink(Topology t, int[] set) {
        for (int a = 0; a < set.length; a++) {
            for (int b = a + 1; b < set.length; b++) {
                if (!(t.link(set[a], set[b]) instanceof GpuLink.NvLink)) {
                    return false;
                }
            }
        }
        return true;
    }

    static PlacementEngine engine(Ledger l, PlacementPolicy node, PlacementPolicy gpu) {
        return PlacementEngine.builder(l).policies(node, gpu).build();
    }

    @Test
    void emptyDgx1TakesAQuadForFourGpusAndTheWidestNvLinkPairForTwo() {
        Node n = Nodes.dgx1("dgx");
        for (PlacementPolicy p : PlacementPolicy.values()) {
            Ledger l = Ledger.create(List.of(n));
            int[] four = positions(placed(engine(l, p, p).place(claim("four", 8, 20, 100).toBuilder().gpus(4).build())), n);
            assertTrue(java.util.Arrays.equals(four, new int[] {0, 1, 2, 3}) || java.util.Arrays.equals(four, new int[] {4, 5, 6, 7}),
                    java.util.Arrays.toString(four));
            Ledger l2 = Ledger.create(List.of(n));
            int[] two = positions(placed(engine(l2, p, p).place(claim("two", 8, 20, 100).toBuilder().gpus(2).build())), n);
            assertEquals(new GpuLink.NvLink(2), n.topology().link(two[0], two[1]), "NV2 beats NV1 at equal load");
        }
    }

    @Test
    void loadChoosesBetweenQuadsButNeverBreaksAClique() {
        Node n = Nodes.dgx1("dgx");
        Ledger l = Ledger.create(List.of(n));
        assertTrue(l.reserve(on(claim("busy", 16, 50, 100), n, 0)).reserved());
        Claim four = Claim.builder("four").gpus(4).memoryGiB(8).compute(20, 100).build();
        assertArrayEquals(new int[] {4, 5, 6, 7}, positions(placed(engine(l, PlacementPolicy.BINPACK, PlacementPolicy.SPREAD).place(four)), n));
        l.release("four");
        assertArrayEquals(new int[] {0, 1, 2, 3}, positions(placed(engine(l, PlacementPolicy.BINPACK, PlacementPolicy.BINPACK).place(four)), n));
        l.release("four");
        // GPU 4 is taken: only quad 0-3 is a free clique, even though GPU 0 is loaded and spread prefers empty GPUs
        assertTrue(l.reserve(on(Nodes.exclusive("whole", 1), n, 4)).reserved());
        assertArrayEquals(new int[] {0, 1, 2, 3}, positions(placed(engine(l, PlacementPolicy.BINPACK, PlacementPolicy.SPREAD).place(four)), n));
    }

    /** Seeded: whenever a fully NVLink-connected admissible set exists, the engine takes one. */
    @Test
    void dgx1TwoAndFourGpuClaimsLandOnNvLinkCliquesWheneverOneIsFree() {
        Node n = Nodes.dgx1("dgx");
        SplittableRandom rnd = new SplittableRandom(SEED);
        int withClique = 0;
        int without = 0;
        for (int trial = 0; trial < 400; trial++) {
            Ledger l = Ledger.create(List.of(n));
            int t = 0;
            for (int g = 0; g < 8; g++) {
                int what = rnd.nextInt(4);
                if (what == 0) {
                    l.reserve(on(Nodes.exclusive("x" + t++, 1), n, g));
                } else if (what == 1) {
                    l.reserve(on(claim("p" + t++, 4 * (1 + rnd.nextInt(6)), 5 * rnd.nextInt(15), 100), n, g));
                }
            }
            PlacementPolicy gp = rnd.nextBoolean() ? PlacementPolicy.BINPACK : PlacementPolicy.SPREAD;
            for (int k : new int[] {2, 4}) {
                Claim c = Claim.builder("c" + k).gpus(k).memoryGiB(4).compute(10, 100).build();
                boolean cliqueFree = cliqueFree(l, n, c);
                var r = engine(l, PlacementPolicy.BINPACK, gp).place(c);
                if (r instanceof io.qgpu.api.PlacementResult.Placed p) {
                    int[] set = positions(p.placement(), n);
                    if (cliqueFree) {
                        withClique++;
                        assertTrue(allNvLink(n.topology(), set), "trial " + trial + " k " + k + " chose " + java.util.Arrays.toString(set));
                    } else {
                        without++;
                    }
                    l.release(c.tenantId());
                } else {
                    assertTrue(!cliqueFree, "unschedulable although a clique is free");
                }
            }
        }
        assertTrue(withClique > 200 && without > 20, "both cases exercised: " + withClique + "/" + without);
    }

    private static boolean cliqueFree(Ledger l, Node n, Claim c) {
        NodeState ns = l.node(n.name()).orElseThrow();
        List<Integer> ok = new ArrayList<>();
        for (int g = 0; g < 8; g++) {
            if (Admission.checkGpu(ns.gpu(g), c, c.memoryPerGpuBytes(), l.rules()).isEmpty()) {
                ok.add(g);
            }
        }
        int m = ok.size();
        for (int mask = 0; mask < (1 << m); mask++) {
            if (Integer.bitCount(mask) != c.gpuCount()) {
                continue;
            }
            int[] set = new int[c.gpuCount()];
            int j = 0;
            for (int i = 0; i < m; i++) {
                if ((mask & (1 << i)) != 0) {
                    set[j++] = ok.get(i);
                }
            }
            if (allNvLink(n.topology(), set)) {
                return true;
            }
        }
        return false;
    }

    @Test
    void onNvSwitchLoadDecides() {
        Node n = Nodes.nvswitch("hgx", 8);
        Ledger l = Ledger.create(List.of(n));
        // GPUs 0..3 carry increasing load; 4..7 are idle
        for (int g = 0; g < 4; g++) {
            assertTrue(l.reserve(on(claim("load" + g, 10L * (g + 1), 10 * (g + 1), 100), n, g)).reserved());
        }
        Claim four = Claim.builder("four").gpus(4).memoryGiB(8).compute(10, 100).build();
        assertArrayEquals(new int[] {4, 5, 6, 7}, positions(placed(engine(l, PlacementPolicy.BINPACK, PlacementPolicy.SPREAD).place(four)), n));
        l.release("four");
        assertArrayEquals(new int[] {0, 1, 2, 3}, positions(placed(engine(l, PlacementPolicy.BINPACK, PlacementPolicy.BINPACK).place(four)), n));
        l.release("four");
        Claim two = Claim.builder("two").gpus(2).memoryGiB(8).compute(10, 100).build();
        assertArrayEquals(new int[] {2, 3}, positions(placed(engine(l, PlacementPolicy.BINPACK, PlacementPolicy.BINPACK).place(two)), n),
                "the two most loaded");
    }

    @Test
    void onPcieNodesTheCloserAncestorWins() {
        Node n = Nodes.t4("t4", 4);   // 0-1 and 2-3 under one switch (PIX), others PHB
        Ledger l = Ledger.create(List.of(n));
        assertTrue(l.reserve(on(claim("a", 1, 5, 100), n, 1)).reserved());
        Claim two = Claim.builder("two").gpus(2).memoryGiB(2).compute(10, 100).build();
        // spread would like 0 and 2 or 3 (idle); the PIX pair 2-3 is idle and closer
        assertArrayEquals(new int[] {2, 3}, positions(placed(engine(l, PlacementPolicy.SPREAD, PlacementPolicy.SPREAD).place(two)), n));
    }

    /** Two 8-GPU NVSwitch islands joined over SYS: the clique lives in one island. */
    static Node twoIslands(String name, int perIsland) {
        Node.Builder b = Node.builder(name).defaultLink(new GpuLink.Pcie(TopologyLevel.SYSTEM));
        for (int i = 0; i < 2 * perIsland; i++) {
            b.gpu(GpuDevice.builder(name + "-g" + i).index(i).model("NVIDIA A100-SXM4-80GB").memoryGiB(80).build());
        }
        for (int a = 0; a < 2 * perIsland; a++) {
            for (int c = a + 1; c < 2 * perIsland; c++) {
                if (a / perIsland == c / perIsland) {
                    b.link(a, c, new GpuLink.NvLink(12));
                }
            }
        }
        return b.build();
    }

    @Test
    void greedySearchFindsTheCliqueOnLargeNodesWithoutEnumerating() {
        Node n = twoIslands("big", 32);   // 64 GPUs: C(64, 8) = 4.4e9 sets, far beyond any enumeration
        Ledger l = Ledger.create(List.of(n));
        // island A (0..31) is mostly taken: 27 GPUs held exclusively, so only 5 free there
        for (int g = 0; g < 27; g++) {
            assertTrue(l.reserve(on(Nodes.exclusive("x" + g, 1), n, g)).reserved());
        }
        // spread would love island A's idle GPUs 27..31 as much as island B's; 8 GPUs fit only in B as a clique
        Claim eight = Claim.builder("eight").gpus(8).memoryGiB(8).compute(10, 100).build();
        int[] set = positions(placed(engine(l, PlacementPolicy.BINPACK, PlacementPolicy.SPREAD).place(eight)), n);
        assertTrue(allNvLink(n.topology(), set), java.util.Arrays.toString(set));
        for (int p : set) {
            assertTrue(p >= 32, java.util.Arrays.toString(set));
        }
    }

    @Test
    void greedyIsNeverBetterThanExhaustiveAndUsuallyEqual() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        GranularityRules rules = GranularityRules.ofDefaults();
        int equal = 0;
        int cases = 0;
        for (int trial = 0; trial < 300; trial++) {
            Node n = Gen.node(rnd, "r" + trial);
            if (n.gpus().size() < 3) {
                continue;
            }
            Ledger l = Ledger.create(rules, List.of(n));
            for (int g = 0; g < n.gpus().size(); g++) {
                if (rnd.nextInt(3) == 0) {
                    l.reserve(on(claim("p" + g, 1 + rnd.nextInt(8), 5 * rnd.nextInt(10), 100), n, g));
                }
            }
            int k = 2 + rnd.nextInt(Math.min(3, n.gpus().size() - 1));
            Claim c = Claim.builder("c").gpus(k).memoryGiB(1).compute(0, 100).build();
            NodeSummary s = NodeSummary.of(l.node(n.name()).orElseThrow(), null, rules);
            // the greedy search does not look ahead, so both are compared without it
            PlacementConfig exhaustiveCfg = PlacementConfig.builder().leftoverWeight(0).gpuPolicy(rnd.nextBoolean() ? PlacementPolicy.BINPACK : PlacementPolicy.SPREAD).build();
            PlacementConfig greedyCfg = exhaustiveCfg.toBuilder().exhaustiveSetLimit(1).build();
            ClaimShape shape = new ClaimShape(c, exhaustiveCfg, io.qgpu.api.GranularityRules.ofDefaults());
            int[] cand = new int[s.size];
            int m = 0;
            for (int g = 0; g < s.size; g++) {
                if (s.admits(g, shape)) {
                    cand[m++] = g;
                }
            }
            if (m < k + 1) {
                continue;
            }
            cases++;
            SetSearch exhaustive = new SetSearch(s, shape, exhaustiveCfg, new io.qgpu.api.placement.GpuSetScorer[0], new double[0], l);
            var ex = exhaustive.best(cand, m, new int[0], 0);
            var gr = new SetSearch(s, shape, greedyCfg, new io.qgpu.api.placement.GpuSetScorer[0], new double[0], l).best(cand, m, new int[0], 0);
            assertEquals(k, gr.positions().length);
            // both sets scored the same way: against the exhaustive search's look-ahead reference (every set seen)
            double greedyScore = exhaustive.scoreOf(gr.positions());
            assertTrue(greedyScore <= ex.score() + 1e-9, "greedy cannot beat the exhaustive optimum");
            if (Math.abs(greedyScore - ex.score()) < 1e-9) {
                equal++;
            }
        }
        assertTrue(cases > 100, "cases " + cases);
        assertTrue(equal >= cases * 9 / 10, "greedy matched the optimum in " + equal + " of " + cases);
    }

    @Test
    void binomialBoundDoesNotOverflow() {
        assertTrue(SetSearch.binomialAtMost(8, 4, 70));
        assertTrue(!SetSearch.binomialAtMost(8, 4, 69));
        assertTrue(!SetSearch.binomialAtMost(4096, 2048, Long.MAX_VALUE / 4096));
        assertTrue(SetSearch.binomialAtMost(4096, 4096, 1));
    }

    @Test
    void placementFitsTheChosenSetOnly() {
        Node n = Nodes.dgx1("dgx");
        Ledger l = Ledger.create(List.of(n));
        Placement p = placed(PlacementEngine.create(l).place(Claim.builder("e").gpus(4).exclusive().build()));
        for (var s : p.slices()) {
            assertEquals(32 * Nodes.GIB, s.memoryBytes(), "an exclusive slice holds the whole device");
        }
    }
}
