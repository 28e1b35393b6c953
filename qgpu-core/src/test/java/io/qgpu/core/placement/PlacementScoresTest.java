package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.GpuLink;
import io.qgpu.api.GpuState;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Health;
import io.qgpu.api.Node;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.TopologyLevel;
import io.qgpu.core.ledger.Ledger;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PlacementScoresTest {

    @Test
    void gpuLoadFollowsTheDocumentedFormula() {
        Node n = Nodes.t4("a", 2);   // 16 GiB: at most 4 tenants under qGPU rules
        Ledger l = Ledger.create(List.of(n));
        l.reserve(Nodes.on(Nodes.claim("x", 4, 30, 100), n, 0));
        l.reserve(Nodes.on(Nodes.online("y", 4, 50), n, 0));
        GpuState g = l.node("a").orElseThrow().gpu(0);
        // memory 8 of 16 GiB, compute: the more booked class (online 50, offline 30) of 100, slots 2 of 4
        double mem = 8.0 / 16;
        double compute = 50.0 / 100;
        double slots = 2.0 / 4;
        double expected = 0.9 * Math.max(mem, Math.max(compute, slots)) + 0.1 * (mem + compute + slots) / 3;
        assertEquals(expected, PlacementScores.gpuLoad(g, GranularityRules.ofDefaults()), 1e-12);
        l.reserve(Nodes.on(Nodes.exclusive("z", 1), n, 1));
        assertEquals(1.0, PlacementScores.gpuLoad(l.node("a").orElseThrow().gpu(1), GranularityRules.ofDefaults()));
        assertEquals((expected + 1.0) / 2, PlacementScores.nodeLoad(l.node("a").orElseThrow(), GranularityRules.ofDefaults()), 1e-12);
        l.setHealth("a-g1", Health.UNHEALTHY);
        assertEquals(expected, PlacementScores.nodeLoad(l.node("a").orElseThrow(), GranularityRules.ofDefaults()), 1e-12,
                "unhealthy GPUs do not count");
    }

    @Test
    void policyTermIsLoadForBinpackAndItsComplementForSpread() {
        assertEquals(0.3, PlacementScores.policyTerm(PlacementPolicy.BINPACK, 0.3));
        assertEquals(0.7, PlacementScores.policyTerm(PlacementPolicy.SPREAD, 0.3), 1e-12);
    }

    @Test
    void linkScoresFollowGpuLinkQualityAndEveryNvLinkBeatsEveryPcie() {
        List<GpuLink> worstToBest = new ArrayList<>();
        TopologyLevel[] levels = TopologyLevel.values();
        for (int i = levels.length - 1; i >= 0; i--) {
            worstToBest.add(new GpuLink.Pcie(levels[i]));
        }
        for (int lanes = 1; lanes <= 18; lanes++) {
            worstToBest.add(new GpuLink.NvLink(lanes));
        }
        double prev = 0;
        for (GpuLink l : worstToBest) {
            double s = PlacementScores.linkScore(l, 18);
            assertTrue(s > prev && s <= 1.0, l + " " + s);
            prev = s;
        }
        assertEquals(1.0, PlacementScores.linkScore(new GpuLink.NvLink(2), 2));
        assertEquals(0.75, PlacementScores.linkScore(new GpuLink.NvLink(1), 2));
        assertEquals(0.5 * 10 / 60, PlacementScores.linkScore(new GpuLink.Pcie(TopologyLevel.SYSTEM), 2), 1e-12);
        assertEquals(2, PlacementScores.maxLanes(Nodes.dgx1("d").topology()));
        assertEquals(1, PlacementScores.maxLanes(Nodes.t4("t", 4).topology()));
    }

    @Test
    void nodeIndexKeyRoundTripsAndSaturatesConservatively() {
        long k = NodeIndex.key(0.5, 3, 3, 1, 40, 10L << 30);
        assertEquals(0.5, NodeIndex.load(k), 1.0 / 65535);
        ClaimShape fits = new ClaimShape(Nodes.claim("a", 10, 40, 100).toBuilder().gpus(3).build(), PlacementConfig.defaults(), io.qgpu.api.GranularityRules.ofDefaults());
        ClaimShape tooBig = new ClaimShape(Nodes.claim("b", 11, 40, 100), PlacementConfig.defaults(), io.qgpu.api.GranularityRules.ofDefaults());
        ClaimShape tooMuchCompute = new ClaimShape(Nodes.claim("c", 1, 45, 100), PlacementConfig.defaults(), io.qgpu.api.GranularityRules.ofDefaults());
        ClaimShape tooMany = new ClaimShape(Nodes.claim("d", 1, 0, 100).toBuilder().gpus(4).build(), PlacementConfig.defaults(), io.qgpu.api.GranularityRules.ofDefaults());
        assertTrue(NodeIndex.fits(k, fits));
        assertTrue(!NodeIndex.fits(k, tooBig));
        assertTrue(!NodeIndex.fits(k, tooMuchCompute));
        assertTrue(!NodeIndex.fits(k, tooMany));
        long huge = NodeIndex.key(0, 4000, 4000, 4000, 100, Long.MAX_VALUE);
        ClaimShape many = new ClaimShape(Nodes.claim("e", 1, 0, 100).toBuilder().gpus(1000).build(), PlacementConfig.defaults(), io.qgpu.api.GranularityRules.ofDefaults());
        assertTrue(NodeIndex.fits(huge, many), "saturated counts and memory never reject");
        // three open GPUs, only two with a free tenant slot: a 3-GPU claim is refused for the slots
        long slots = NodeIndex.key(0.5, 3, 2, 1, 40, 10L << 30);
        assertEquals(io.qgpu.api.ReasonCode.TOO_MANY_TENANTS, NodeIndex.cause(slots, fits));
        assertEquals(io.qgpu.api.ReasonCode.NOT_ENOUGH_GPUS, NodeIndex.cause(k, tooMany));
    }
}
