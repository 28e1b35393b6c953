package io.qgpu.core.placement;

import static io.qgpu.core.placement.Nodes.claim;
import static io.qgpu.core.placement.PlacementEngineTest.placed;
import static io.qgpu.core.placement.PlacementEngineTest.unschedulable;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.ClusterView;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.placement.GpuFilter;
import io.qgpu.api.placement.GpuSet;
import io.qgpu.api.placement.GpuSetScorer;
import io.qgpu.api.placement.NodeFilter;
import io.qgpu.api.placement.NodeScorer;
import io.qgpu.api.placement.Score;
import io.qgpu.core.ledger.Ledger;
import java.util.List;
import org.junit.jupiter.api.Test;

class ExtensionPointsTest {

    static final NodeFilter NOT_DRAINING = (claim, node, view) -> "yes".equals(node.node().labels().get("draining"))
            ? List.of(Reason.of(ReasonCode.NODE_LABELS_MISMATCH, node.name(), "draining"))
            : List.of();

    static Node draining(Node n) {
        return Node.builder(n.name()).labels(n.labels()).label("draining", "yes").gpus(n.gpus())
                .defaultLink(n.topology().link(0, 1)).build();
    }

    @Test
    void nodeFilterRefusesNodesAndItsReasonsAreReported() {
        Node a = draining(Nodes.t4("a", 2));
        Node b = Nodes.t4("b", 2);
        Ledger l = Ledger.create(List.of(a, b));
        PlacementEngine e = PlacementEngine.builder(l).nodeFilter(NOT_DRAINING).build();
        for (int i = 0; i < 8; i++) {
            assertEquals("b", placed(e.place(claim("x" + i, 1, 0, 100))).nodeName());
        }
        PlacementResult.Unschedulable u = unschedulable(e.place(claim("big", 16, 0, 100)));
        assertTrue(u.nodes().get("a").nodeReasons().stream().anyMatch(r -> r.detail().equals("draining")));
    }

    @Test
    void gpuFilterRefusesGpusAndReducesTheUsableCount() {
        Node a = Nodes.t4("a", 2);
        Ledger l = Ledger.create(List.of(a));
        GpuFilter onlyEven = (claim, node, gpu, view) -> gpu.device().index() % 2 == 0 ? List.of()
                : List.of(Reason.of(ReasonCode.UUID_NOT_SELECTED, gpu.uuid(), "odd index"));
        PlacementEngine e = PlacementEngine.builder(l).gpuFilter(onlyEven).policies(PlacementPolicy.SPREAD, PlacementPolicy.SPREAD).build();
        assertEquals(List.of("a-g0"), placed(e.place(claim("x", 1, 0, 100))).gpuUuids());
        assertEquals(List.of("a-g0"), placed(e.place(claim("y", 1, 0, 100))).gpuUuids(), "spread would pick g1");
        PlacementResult.Unschedulable u = unschedulable(e.place(claim("two", 1, 0, 100).toBuilder().gpus(2).build()));
        assertEquals("odd index", u.nodes().get("a").gpuReasons().get("a-g1").get(0).detail());
        assertEquals(1, u.nodes().get("a").nodeReasons().get(0).available());
    }

    @Test
    void scorersSteerTheChoiceAndAppearInExplain() {
        Node a = Nodes.t4("a", 4);
        Node b = Nodes.t4("b", 4);
        Ledger l = Ledger.create(List.of(a, b));
        NodeScorer preferB = new NodeScorer() {
            public String name() { return "prefer-b"; }
            public double score(Claim c, NodeState n, ClusterView v) { return n.name().equals("b") ? 1 : 0; }
            public Score explain(Claim c, NodeState n, ClusterView v) { return new Score(score(c, n, v), "b is cheaper"); }
        };
        GpuSetScorer highest = new GpuSetScorer() {
            public String name() { return "highest-index"; }
            public double score(Claim c, NodeState n, GpuSet s, ClusterView v) { return s.position(s.size() - 1) / 3.0; }
        };
        PlacementEngine e = PlacementEngine.builder(l).nodeScorer(preferB, 2).gpuSetScorer(highest, 5).build();
        var p = placed(e.place(claim("x", 1, 0, 100)));
        assertEquals("b", p.nodeName());
        assertEquals(List.of("b-g3"), p.gpuUuids());
        PlacementExplanation ex = e.explain(claim("y", 1, 0, 100));
        PlacementExplanation.Candidate top = ex.candidates().get(0);
        assertTrue(top.terms().stream().anyMatch(t -> t.scorer().equals("prefer-b") && t.why().equals("b is cheaper") && t.weight() == 2));
        assertTrue(top.terms().stream().anyMatch(t -> t.scorer().equals("highest-index") && t.level() == PlacementExplanation.Level.GPU_SET));
        assertTrue(ex.table().contains("prefer-b"));
    }

    @Test
    void aScoreOutsideZeroToOneIsRefusedNamingTheScorer() {
        Ledger l = Ledger.create(List.of(Nodes.t4("a", 1)));
        NodeScorer bad = new NodeScorer() {
            public String name() { return "bad"; }
            public double score(Claim c, NodeState n, ClusterView v) { return 1.5; }
        };
        PlacementEngine e = PlacementEngine.builder(l).nodeScorer(bad, 1).build();
        InvalidValueException ex = assertThrows(InvalidValueException.class, () -> e.place(claim("x", 1, 0, 100)));
        assertEquals("bad.score", ex.field());
        assertEquals(0, l.size());
    }

    @Test
    void builderAndConfigFailFastNamingTheField() {
        Ledger l = Ledger.create(List.of(Nodes.t4("a", 1)));
        NodeScorer s = new NodeScorer() {
            public String name() { return "s"; }
            public double score(Claim c, NodeState n, ClusterView v) { return 0; }
        };
        assertEquals("placementEngine.nodeScorer[s].weight",
                assertThrows(InvalidValueException.class, () -> PlacementEngine.builder(l).nodeScorer(s, -1)).field());
        assertEquals("placementEngine.nodeFilter",
                assertThrows(InvalidValueException.class, () -> PlacementEngine.builder(l).nodeFilter(null)).field());
        assertEquals("placementEngine.ledger", assertThrows(InvalidValueException.class, () -> PlacementEngine.builder(null)).field());
        assertEquals("placementConfig.maxCommitAttempts",
                assertThrows(InvalidValueException.class, () -> PlacementConfig.builder().maxCommitAttempts(0).build()).field());
        assertEquals("placementConfig.linkWeight",
                assertThrows(InvalidValueException.class, () -> PlacementConfig.builder().linkWeight(Double.NaN).build()).field());
        assertEquals("placementConfig.shortlist",
                assertThrows(InvalidValueException.class, () -> PlacementConfig.builder().shortlist(0).build()).field());
        assertEquals("claim", assertThrows(InvalidValueException.class, () -> PlacementEngine.create(l).place(null)).field());
        assertEquals("score.value", assertThrows(InvalidValueException.class, () -> new Score(-0.1, "")).field());
    }

    @Test
    void gpuSetIsSortedDistinctAndImmutable() {
        GpuSet s = GpuSet.of(3, 0, 1);
        assertEquals("[0, 1, 3]", s.toString());
        assertTrue(s.contains(3));
        int[] copy = s.positions();
        copy[0] = 99;
        assertEquals(0, s.position(0));
        assertEquals(GpuSet.of(0, 1, 3), s);
        assertThrows(InvalidValueException.class, () -> GpuSet.of(1, 1));
        assertThrows(InvalidValueException.class, () -> GpuSet.of());
        assertThrows(InvalidValueException.class, () -> GpuSet.of(-1));
    }

    @Test
    void weightsChangeTheBalanceBetweenLinksAndLoad() {
        // DGX-1 with GPU 0 loaded: with the clique term off and load dominant, spread avoids GPU 0's quad
        Node n = Nodes.dgx1("dgx");
        Ledger l = Ledger.create(List.of(n));
        l.reserve(Nodes.on(Nodes.exclusive("whole", 1), n, 4));
        l.reserve(Nodes.on(claim("busy", 24, 80, 100), n, 0));
        Claim four = Claim.builder("four").gpus(4).memoryGiB(4).compute(10, 100).build();
        PlacementEngine linksFirst = PlacementEngine.builder(l).policies(PlacementPolicy.BINPACK, PlacementPolicy.SPREAD).build();
        assertTrue(TopologyPlacementTest.allNvLink(n.topology(), Nodes.positions(placed(linksFirst.place(four)), n)));
        l.release("four");
        PlacementEngine loadFirst = PlacementEngine.builder(l).config(PlacementConfig.builder().gpuPolicy(PlacementPolicy.SPREAD)
                .cliqueWeight(0).linkWeight(0).loadWeight(1).build()).build();
        int[] set = Nodes.positions(placed(loadFirst.place(four)), n);
        assertTrue(java.util.Arrays.stream(set).noneMatch(p -> p == 0), java.util.Arrays.toString(set));
    }
}
