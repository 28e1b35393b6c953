package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.ClusterView;
import io.qgpu.api.GpuState;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.placement.GpuSet;
import io.qgpu.api.placement.GpuSetScorer;
import io.qgpu.core.ledger.Ledger;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The fragmentation policy in the engine, on a crafted stream where fragmentation decides: two
 * single-GPU nodes and shares of 50, 30, 70 and 50 percent arriving in that order. Binpack puts the
 * 30 beside the first 50 (the fullest node), leaving 20 there that nothing expected can use, and the
 * last 50 finds no room; the fragmentation policy puts the 30 on the empty node, where 70 still fits,
 * and places all four.
 */
class FragmentationPlacementTest {

    static final List<Integer> STREAM = List.of(50, 30, 70, 50);

    static RequestMix expected() {
        return FragmentationTest.mix(FragmentationTest.share(50), 2, FragmentationTest.share(30), 1, FragmentationTest.share(70), 1);
    }

    static Ledger cluster() {
        Node a = FragmentationTest.node("a", "T4");
        Node b = FragmentationTest.node("b", "T4");
        return Ledger.create(List.of(a, b));
    }

    /** How many of the stream's claims the engine places, all claims of the given node policy. */
    static int placed(PlacementEngine engine, PlacementPolicy policy) {
        int placed = 0;
        for (int i = 0; i < STREAM.size(); i++) {
            Claim c = Claim.builder("c" + i).memoryGiB(1).compute(STREAM.get(i), 100).nodePolicy(policy).gpuPolicy(policy).build();
            placed += engine.place(c) instanceof PlacementResult.Placed ? 1 : 0;
        }
        return placed;
    }

    @Test
    void fragmentationPlacesTheWholeCraftedStreamWhereBinpackLeavesOneOut() {
        assertEquals(3, placed(PlacementEngine.create(cluster()), PlacementPolicy.BINPACK));
        PlacementEngine fgd = PlacementEngine.builder(cluster()).fragmentation(FragmentationScorer.of(expected())).build();
        assertEquals(4, placed(fgd, PlacementPolicy.FRAGMENTATION));
        assertEquals(4, fgd.ledger().nodes().stream().mapToInt(NodeState::tenants).sum());
    }

    @Test
    void withAnEmptyMixTheFragmentationPolicyRanksLikeBinpack() {
        PlacementEngine e = PlacementEngine.builder(cluster()).fragmentation(FragmentationScorer.of(RequestMix.empty())).build();
        assertEquals(3, placed(e, PlacementPolicy.FRAGMENTATION));
    }

    @Test
    void theSlidingSampleLearnsTheMixFromPastRequests() {
        PlacementEngine e = PlacementEngine.builder(cluster())
                .config(PlacementConfig.builder().nodePolicy(PlacementPolicy.FRAGMENTATION).build()).build();
        RequestSample s = e.fragmentation().sample().orElseThrow();
        // the last 1024 requests looked like the stream: twice 50, once 30 and 70
        for (int i = 0; i < 256; i++) {
            s.record(FragmentationTest.share(50));
            s.record(FragmentationTest.share(50));
            s.record(FragmentationTest.share(30));
            s.record(FragmentationTest.share(70));
        }
        assertEquals(4, placed(e, PlacementPolicy.FRAGMENTATION));
        assertEquals(1024, s.size());
    }

    /**
     * The crafted stream catches a broken fragmentation term: a scorer that prefers the set that
     * grows fragmentation most (the sign flipped), at the same weight, places only three.
     */
    @Test
    void aScorerThatPrefersFragmentationIsCaughtByTheCraftedStream() {
        FragmentationScorer real = FragmentationScorer.of(expected());
        GpuSetScorer flipped = new GpuSetScorer() {
            @Override
            public String name() {
                return "flipped";
            }

            @Override
            public double score(Claim claim, NodeState node, GpuSet gpus, ClusterView view) {
                return FragmentationScorer.toScore(-real.delta(claim, node, gpus));
            }
        };
        PlacementEngine broken = PlacementEngine.builder(cluster())
                .gpuSetScorer(flipped, PlacementConfig.defaults().fragmentationWeight() * FragmentationScorer.WEIGHT_SCALE).build();
        assertEquals(3, placed(broken, PlacementPolicy.BINPACK), "the flipped scorer must not place the whole stream");
    }

    @Test
    void otherPoliciesAreUntouchedAndExplainShowsTheTerm() {
        PlacementEngine e = PlacementEngine.builder(cluster()).fragmentation(FragmentationScorer.of(expected())).build();
        Claim binpack = Claim.builder("b").memoryGiB(1).compute(50, 100).build();
        PlacementExplanation x = e.explain(binpack);
        assertTrue(x.candidates().stream().flatMap(c -> c.terms().stream()).noneMatch(t -> t.scorer().equals("fragmentation")),
                "no fragmentation line for a binpack claim: " + x.table());
        Claim frag = binpack.toBuilder().nodePolicy(PlacementPolicy.FRAGMENTATION).build();
        PlacementExplanation y = e.explain(frag);
        assertTrue(y.table().contains("expected fragmentation"), y.table());
        assertTrue(y.table().contains("stranded by CPU"), "the CPU balance part is shown: " + y.table());
    }

    /**
     * A host-only claim under the fragmentation policy goes where the CPU it takes strands no GPU
     * capacity: node a (a T4 half booked, 8 cores) could still run the expected T4 half-shares asking 4
     * cores, node b's GPU is of a model they may not use. With the paper's measure, binpack takes the fuller
     * a, fragmentation b. With the CPU balance term both grow by 75 (a: +50 as the shape loses its fit and
     * 25 stranded behind the CPU; b: its V100, though no expected shape may use it, counts as GPU compute
     * the CPU left cannot feed, +75), so binpack load breaks the tie and takes a: the term counts every
     * free GPU, whatever its model (docs/placement.md).
     */
    @Test
    void aHostOnlyClaimTakesCpuWhereItStrandsNoGpu() {
        RequestMix mix = FragmentationTest.mix(new RequestShape(1, 50, 4000, Set.of("T4")), 1);
        Node a = Node.builder("a").gpu(io.qgpu.api.GpuDevice.builder("a-g0").model("T4").memoryGiB(16).build())
                .host(io.qgpu.api.HostCapacity.of(8000, 64 * Nodes.GIB)).build();
        Node b = Node.builder("b").gpu(io.qgpu.api.GpuDevice.builder("b-g0").model("V100").memoryGiB(16).build())
                .host(io.qgpu.api.HostCapacity.of(8000, 64 * Nodes.GIB)).build();
        Claim etl = Claim.builder("etl").hostOnly().cpuMillis(6000).build();
        for (PlacementPolicy p : List.of(PlacementPolicy.BINPACK, PlacementPolicy.FRAGMENTATION)) {
            Ledger l = Ledger.create(List.of(a, b));
            assertTrue(l.reserve(Nodes.on(Nodes.claim("half", 1, 50, 100), a, 0)).reserved());
            PlacementEngine e = PlacementEngine.builder(l).fragmentation(FragmentationScorer.of(mix).withCpuBalance(false))
                    .policies(p, p).build();
            PlacementResult r = e.place(etl);
            assertEquals(p == PlacementPolicy.BINPACK ? "a" : "b", ((PlacementResult.Placed) r).placement().nodeName(), p.wireName());
            if (p == PlacementPolicy.FRAGMENTATION) {
                l.release("etl");
                PlacementExplanation x = e.explain(etl);
                assertEquals("b", x.chosen().orElseThrow().node(), "explain chooses what place chose");
                String onA = x.candidates().stream().filter(c -> c.node().equals("a")).findFirst().orElseThrow().terms().stream()
                        .filter(t -> t.scorer().equals("fragmentation")).findFirst().orElseThrow().why();
                assertTrue(onA.contains("changes the expected fragmentation by +50.0% of a GPU"), onA);
            }
        }
        Ledger l = Ledger.create(List.of(a, b));
        assertTrue(l.reserve(Nodes.on(Nodes.claim("half", 1, 50, 100), a, 0)).reserved());
        FragmentationScorer balanced = FragmentationScorer.of(mix);
        PlacementEngine e = PlacementEngine.builder(l).fragmentation(balanced)
                .policies(PlacementPolicy.FRAGMENTATION, PlacementPolicy.FRAGMENTATION).build();
        for (NodeState n : l.nodes()) {
            assertEquals(75.0, balanced.delta(etl, n, GpuSet.empty()), 1e-9, n.name());
        }
        assertEquals("a", ((PlacementResult.Placed) e.place(etl)).placement().nodeName(), "a tie: binpack load takes the fuller a");
    }

    @Test
    void cpuMakesANodeUnusableForShapesThatNeedMoreThanIsLeft() {
        // node a has 4 CPUs left, b has 64; the expected shapes need 8 CPUs; a share of 50 asking 2 CPUs
        RequestMix mix = FragmentationTest.mix(new RequestShape(1, 50, 8000, Set.of()), 1);
        Ledger l = cluster();
        FragmentationScorer s = FragmentationScorer.of(mix)
                .withHostCpu(n -> n.name().equals("a") ? 4000 : 64000, c -> 2000);
        PlacementEngine e = PlacementEngine.builder(l).fragmentation(s)
                .policies(PlacementPolicy.FRAGMENTATION, PlacementPolicy.FRAGMENTATION).build();
        // a's GPU is fragmentation already (CPU short), so the claim goes there: b keeps its whole GPU usable
        PlacementResult r = e.place(Claim.builder("x").memoryGiB(1).compute(50, 100).build());
        assertEquals("a", ((PlacementResult.Placed) r).placement().nodeName());
        GpuState g = l.nodes().get(0).gpu(0);
        assertEquals(50, Fragmentation.freeCompute(g));
    }

    /**
     * The CPU balance term: a CPU-heavy host-only claim goes to the node whose CPU is spare for its GPUs
     * (t4: 2 GPUs, 104 cores) rather than to the one whose CPU its GPUs need (g2: 8 GPUs, 96 cores), though
     * after it both still fit the next expected request. The paper's measure alone sees no difference and
     * cluster order takes g2.
     */
    @Test
    void aCpuHeavyClaimGoesWhereTheCpuIsSpareForTheGpus() {
        RequestMix mix = FragmentationTest.mix(new RequestShape(1, 100, 11_000, Set.of()), 3, RequestShape.hostOnly(32_000), 1);
        Node.Builder g2 = Node.builder("g2").defaultLink(new io.qgpu.api.GpuLink.Pcie(io.qgpu.api.TopologyLevel.HOSTBRIDGE)).host(io.qgpu.api.HostCapacity.of(96_000, 384 * Nodes.GIB));
        for (int i = 0; i < 8; i++) {
            g2.gpu(io.qgpu.api.GpuDevice.builder("g2-g" + i).index(i).model("G2").memoryGiB(16).build());
        }
        Node.Builder t4 = Node.builder("t4").defaultLink(new io.qgpu.api.GpuLink.Pcie(io.qgpu.api.TopologyLevel.HOSTBRIDGE)).host(io.qgpu.api.HostCapacity.of(104_000, 512 * Nodes.GIB));
        for (int i = 0; i < 2; i++) {
            t4.gpu(io.qgpu.api.GpuDevice.builder("t4-g" + i).index(i).model("T4").memoryGiB(16).build());
        }
        Claim etl = Claim.builder("etl").hostOnly().cpuMillis(32_000).build();
        for (boolean balance : List.of(true, false)) {
            Ledger l = Ledger.create(List.of(g2.build(), t4.build()));
            PlacementEngine e = PlacementEngine.builder(l).fragmentation(FragmentationScorer.of(mix).withCpuBalance(balance))
                    .policies(PlacementPolicy.FRAGMENTATION, PlacementPolicy.FRAGMENTATION).build();
            PlacementResult r = e.place(etl);
            assertEquals(balance ? "t4" : "g2", ((PlacementResult.Placed) r).placement().nodeName(), "cpuBalance " + balance);
        }
    }
}
