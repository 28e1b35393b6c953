package io.qgpu.core.placement;

import static io.qgpu.core.placement.Nodes.claim;
import static io.qgpu.core.placement.Nodes.on;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.Node;
import io.qgpu.api.NodeRejection;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.ReserveResult;
import java.util.List;
import org.junit.jupiter.api.Test;

class PlacementEngineTest {

    static Placement placed(PlacementResult r) {
        return assertInstanceOf(PlacementResult.Placed.class, r, () -> r instanceof PlacementResult.Unschedulable u
                ? u.summary() : String.valueOf(r)).placement();
    }

    static PlacementResult.Unschedulable unschedulable(PlacementResult r) {
        return assertInstanceOf(PlacementResult.Unschedulable.class, r, String.valueOf(r));
    }

    @Test
    void placesAndCommitsToTheLedger() {
        Node a = Nodes.t4("a", 2);
        Ledger ledger = Ledger.create(List.of(a));
        PlacementEngine engine = PlacementEngine.create(ledger);
        Placement p = placed(engine.place(claim("job-1", 4, 20, 50)));
        assertEquals("a", p.nodeName());
        assertEquals(p, ledger.placement("job-1").orElseThrow());
        assertEquals(4 * Nodes.GIB, p.slices().get(0).memoryBytes());
        assertTrue(engine.release("job-1").isPresent());
        assertTrue(ledger.placement("job-1").isEmpty());
    }

    @Test
    void unschedulableNamesEveryNodeAndGpuWithTheShortfall() {
        Node a = Nodes.t4("a", 2);
        Node b = Nodes.t4("b", 1);
        Ledger ledger = Ledger.create(List.of(a, b));
        assertTrue(ledger.reserve(on(claim("big", 12, 0, 100), a, 0)).reserved());
        PlacementResult.Unschedulable u = unschedulable(PlacementEngine.create(ledger).place(claim("x", 20, 0, 100)));
        assertEquals(2, u.nodes().size());
        NodeRejection ra = u.nodes().get("a");
        assertEquals(2, ra.gpuReasons().size());
        Reason mem0 = ra.gpuReasons().get("a-g0").get(0);
        assertEquals(ReasonCode.INSUFFICIENT_MEMORY, mem0.code());
        assertEquals(20 * Nodes.GIB, mem0.requested());
        assertEquals(4 * Nodes.GIB, mem0.available());
        assertEquals(16 * Nodes.GIB, mem0.shortfall());
        assertEquals(4 * Nodes.GIB, ra.gpuReasons().get("a-g1").get(0).shortfall());
        Reason notEnough = ra.nodeReasons().get(0);
        assertEquals(ReasonCode.NOT_ENOUGH_GPUS, notEnough.code());
        assertEquals(1, notEnough.requested());
        assertEquals(0, notEnough.available());
        assertTrue(u.failedNodes().get("b").contains("INSUFFICIENT_MEMORY"));
        assertEquals(1, ledger.size(), "nothing committed");
    }

    @Test
    void generalReasonsForGranularityDuplicatesAndEmptyCluster() {
        Node a = Nodes.t4("a", 1);
        Ledger ledger = Ledger.create(List.of(a));
        PlacementEngine engine = PlacementEngine.create(ledger);
        PlacementResult.Unschedulable g = unschedulable(engine.place(Claim.builder("odd").memoryGiB(1).compute(7, 50).build()));
        assertEquals(ReasonCode.GRANULARITY, g.general().get(0).code());
        placed(engine.place(claim("dup", 1, 0, 100)));
        PlacementResult.Unschedulable d = unschedulable(engine.place(claim("dup", 1, 0, 100)));
        assertEquals(ReasonCode.DUPLICATE_TENANT, d.general().get(0).code());
        PlacementResult.Unschedulable e = unschedulable(PlacementEngine.create(Ledger.create(List.of())).place(claim("x", 1, 0, 100)));
        assertEquals(ReasonCode.NOT_ENOUGH_GPUS, e.general().get(0).code());
    }

    @Test
    void nodeBinpackFillsTheFullestNodeAndSpreadTheEmptiest() {
        Node a = Nodes.t4("a", 2);
        Node b = Nodes.t4("b", 2);
        Ledger ledger = Ledger.create(List.of(a, b));
        assertTrue(ledger.reserve(on(claim("seed", 4, 20, 100), b, 0)).reserved());
        PlacementEngine binpack = PlacementEngine.builder(ledger).policies(PlacementPolicy.BINPACK, PlacementPolicy.BINPACK).build();
        assertEquals("b", placed(binpack.place(claim("bp", 4, 10, 100))).nodeName());
        PlacementEngine spread = PlacementEngine.builder(ledger).policies(PlacementPolicy.SPREAD, PlacementPolicy.SPREAD).build();
        assertEquals("a", placed(spread.place(claim("sp", 4, 10, 100))).nodeName());
    }

    @Test
    void gpuBinpackFillsTheFullestGpuAndSpreadTheEmptiest() {
        Node a = Nodes.t4("a", 4);
        Ledger ledger = Ledger.create(List.of(a));
        assertTrue(ledger.reserve(on(claim("seed", 4, 20, 100), a, 2)).reserved());
        PlacementEngine binpack = PlacementEngine.builder(ledger).policies(PlacementPolicy.BINPACK, PlacementPolicy.BINPACK).build();
        assertEquals(List.of("a-g2"), placed(binpack.place(claim("bp", 4, 10, 100))).gpuUuids());
        PlacementEngine spread = PlacementEngine.builder(ledger).policies(PlacementPolicy.BINPACK, PlacementPolicy.SPREAD).build();
        // GPUs 0, 1 and 3 are idle (load 0); taking 3 keeps the idle PIX pair 0-1 whole (look-ahead),
        // while taking 0 or 1 would leave 1 or 0 and 3 without an idle partner behind one switch
        assertEquals(List.of("a-g3"), placed(spread.place(claim("sp", 4, 10, 100))).gpuUuids());
    }

    @Test
    void claimOverridesBeatClassDefaultsWhichBeatEngineDefaults() {
        PlacementConfig cfg = PlacementConfig.builder().nodePolicy(PlacementPolicy.BINPACK).gpuPolicy(PlacementPolicy.BINPACK)
                .classPolicy(io.qgpu.api.PriorityClass.ONLINE, PlacementPolicy.SPREAD, PlacementPolicy.SPREAD).build();
        Claim offline = claim("off", 1, 0, 100);
        Claim online = Nodes.online("on", 1, 0);
        Claim overridden = Nodes.online("ov", 1, 0).toBuilder().gpuPolicy(PlacementPolicy.BINPACK).build();
        assertEquals(PlacementPolicy.BINPACK, cfg.gpuPolicyFor(offline));
        assertEquals(PlacementPolicy.SPREAD, cfg.gpuPolicyFor(online));
        assertEquals(PlacementPolicy.SPREAD, cfg.nodePolicyFor(overridden));
        assertEquals(PlacementPolicy.BINPACK, cfg.gpuPolicyFor(overridden));
    }

    @Test
    void explainCommitsNothingAndChoosesWhatPlaceCommits() {
        Node a = Nodes.t4("a", 2);
        Node b = Nodes.t4("b", 2);
        Ledger ledger = Ledger.create(List.of(a, b));
        assertTrue(ledger.reserve(on(claim("seed", 4, 20, 100), b, 1)).reserved());
        PlacementEngine engine = PlacementEngine.create(ledger);
        Claim c = claim("x", 2, 10, 20);
        PlacementExplanation e = engine.explain(c);
        assertEquals(1, ledger.size(), "explain commits nothing");
        assertEquals(2, e.candidates().size());
        PlacementExplanation.Candidate chosen = e.chosen().orElseThrow();
        Placement p = placed(engine.place(c));
        assertEquals(chosen.node(), p.nodeName());
        assertEquals(chosen.gpuUuids(), p.gpuUuids());
        assertEquals("b", p.nodeName(), "node binpack by default");
        assertEquals(List.of("b-g0"), p.gpuUuids(), "gpu spread by default");
        for (PlacementExplanation.Candidate cd : e.candidates()) {
            assertEquals(cd.total(), cd.nodeScore() + cd.setScore(), 1e-9);
            assertFalse(cd.terms().isEmpty());
        }
        assertTrue(e.table().contains("=>"));
    }
}
