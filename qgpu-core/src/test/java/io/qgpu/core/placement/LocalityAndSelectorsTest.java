package io.qgpu.core.placement;

import static io.qgpu.core.placement.Nodes.claim;
import static io.qgpu.core.placement.Nodes.on;
import static io.qgpu.core.placement.PlacementEngineTest.placed;
import static io.qgpu.core.placement.PlacementEngineTest.unschedulable;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.Locality;
import io.qgpu.api.Node;
import io.qgpu.api.NodeRejection;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Selectors;
import io.qgpu.core.ledger.Ledger;
import java.util.List;
import org.junit.jupiter.api.Test;

class LocalityAndSelectorsTest {

    static Claim labelled(String id, long gib, int gpus, Locality l) {
        return Claim.builder(id).gpus(gpus).memoryGiB(gib).compute(10, 100).locality(l).build();
    }

    static boolean has(List<Reason> rs, ReasonCode code) {
        return rs.stream().anyMatch(r -> r.code() == code);
    }

    // ------------------------------------------------------------------ affinity

    @Test
    void affinityFirstTenantOpensAnIdleGpuAndTheNextJoinIt() {
        Node a = Nodes.t4("a", 2);
        Node b = Nodes.t4("b", 2);
        Ledger l = Ledger.create(List.of(a, b));
        PlacementEngine spread = PlacementEngine.builder(l).policies(PlacementPolicy.SPREAD, PlacementPolicy.SPREAD).build();
        Locality pipe = Locality.none().withAffinity("pipe");
        Placement first = placed(spread.place(labelled("p1", 2, 1, pipe)));
        // spread would put the next tenant on an idle GPU; affinity keeps it with the first
        Placement second = placed(spread.place(labelled("p2", 2, 1, pipe)));
        assertEquals(first.nodeName(), second.nodeName());
        assertEquals(first.gpuUuids(), second.gpuUuids());
        Placement other = placed(spread.place(claim("free", 2, 10, 100)));
        assertNotEquals(first.gpuUuids(), other.gpuUuids(), "without the label spread picks an idle GPU");
        // once every member is gone the label may open a GPU anywhere again
        l.release("p1");
        l.release("p2");
        assertTrue(spread.explain(labelled("p3", 2, 1, pipe)).candidates().size() >= 2);
    }

    @Test
    void affinityGroupIsTheOnlyCandidateAndFailuresSayWhy() {
        Node a = Nodes.t4("a", 2);
        Node b = Nodes.t4("b", 2);
        Ledger l = Ledger.create(List.of(a, b));
        PlacementEngine e = PlacementEngine.create(l);
        Locality pipe = Locality.none().withAffinity("pipe");
        Placement first = placed(e.place(labelled("p1", 12, 1, pipe)));
        String groupNode = first.nodeName();
        String otherNode = groupNode.equals("a") ? "b" : "a";
        // the group's GPU has 4 GiB left: 8 GiB does not fit, although other GPUs are empty
        PlacementResult.Unschedulable u = unschedulable(e.place(labelled("p2", 8, 1, pipe)));
        NodeRejection here = u.nodes().get(groupNode);
        Reason mem = here.gpuReasons().get(first.gpuUuids().get(0)).get(0);
        assertEquals(ReasonCode.INSUFFICIENT_MEMORY, mem.code());
        assertEquals(4 * Nodes.GIB, mem.shortfall());
        String otherGpu = groupNode + "-g" + (first.gpuUuids().get(0).endsWith("0") ? 1 : 0);
        assertTrue(has(here.gpuReasons().get(otherGpu), ReasonCode.AFFINITY));
        assertTrue(has(u.nodes().get(otherNode).nodeReasons(), ReasonCode.AFFINITY));
        // a 2-GPU claim cannot join a 1-GPU group
        PlacementResult.Unschedulable two = unschedulable(e.place(labelled("p3", 1, 2, pipe)));
        Reason size = two.nodes().get(groupNode).nodeReasons().stream().filter(r -> r.code() == ReasonCode.AFFINITY).findFirst().orElseThrow();
        assertEquals(2, size.requested());
        assertEquals(1, size.available());
        // 4 GiB fits
        assertEquals(first.gpuUuids(), placed(e.place(labelled("p4", 4, 1, pipe))).gpuUuids());
    }

    @Test
    void multiGpuAffinityKeepsTheSameSet() {
        Node n = Nodes.dgx1("dgx");
        Ledger l = Ledger.create(List.of(n, Nodes.dgx1("dgx2")));
        PlacementEngine e = PlacementEngine.builder(l).policies(PlacementPolicy.SPREAD, PlacementPolicy.SPREAD).build();
        Locality ring = Locality.none().withAffinity("ring");
        Placement p1 = placed(e.place(labelled("r1", 4, 4, ring)));
        Placement p2 = placed(e.place(labelled("r2", 4, 4, ring)));
        assertEquals(p1.nodeName(), p2.nodeName());
        assertEquals(new java.util.TreeSet<>(p1.gpuUuids()), new java.util.TreeSet<>(p2.gpuUuids()));
        assertTrue(TopologyPlacementTest.allNvLink(n.topology(), Nodes.positions(p1, n)));
    }

    // ------------------------------------------------------------------ anti-affinity and exclusion

    @Test
    void antiAffinityNeverSharesAGpu() {
        Node a = Nodes.t4("a", 2);
        Ledger l = Ledger.create(List.of(a));
        PlacementEngine binpack = PlacementEngine.builder(l).policies(PlacementPolicy.BINPACK, PlacementPolicy.BINPACK).build();
        Locality replicas = Locality.none().withAntiAffinity("replicas");
        Placement r1 = placed(binpack.place(labelled("r1", 2, 1, replicas)));
        Placement r2 = placed(binpack.place(labelled("r2", 2, 1, replicas)));
        assertNotEquals(r1.gpuUuids(), r2.gpuUuids(), "binpack would stack them; anti-affinity keeps them apart");
        Placement plain = placed(binpack.place(claim("plain", 2, 10, 100)));
        assertTrue(plain.gpuUuids().equals(r1.gpuUuids()) || plain.gpuUuids().equals(r2.gpuUuids()));
        PlacementResult.Unschedulable u = unschedulable(binpack.place(labelled("r3", 2, 1, replicas)));
        for (List<Reason> rs : u.nodes().get("a").gpuReasons().values()) {
            assertTrue(has(rs, ReasonCode.ANTI_AFFINITY), rs.toString());
        }
    }

    @Test
    void exclusionDedicatesAGpuToOneLabel() {
        Node a = Nodes.t4("a", 2);
        Ledger l = Ledger.create(List.of(a));
        PlacementEngine binpack = PlacementEngine.builder(l).policies(PlacementPolicy.BINPACK, PlacementPolicy.BINPACK).build();
        Placement teamA = placed(binpack.place(labelled("a1", 2, 1, Locality.none().withExclusion("team-a"))));
        Placement plain = placed(binpack.place(claim("plain", 2, 10, 100)));
        assertNotEquals(teamA.gpuUuids(), plain.gpuUuids(), "an unlabelled tenant may not join a dedicated GPU");
        Placement teamA2 = placed(binpack.place(labelled("a2", 2, 1, Locality.none().withExclusion("team-a"))));
        assertEquals(teamA.gpuUuids(), teamA2.gpuUuids(), "binpack joins the team's own GPU");
        PlacementResult.Unschedulable u = unschedulable(binpack.place(labelled("b1", 2, 1, Locality.none().withExclusion("team-b"))));
        for (List<Reason> rs : u.nodes().get("a").gpuReasons().values()) {
            assertTrue(has(rs, ReasonCode.EXCLUSION), rs.toString());
        }
    }

    // ------------------------------------------------------------------ selectors

    @Test
    void modelSelectorsAreReportedPerGpu() {
        Node t4 = Nodes.t4("t4", 2);
        Node v100 = Nodes.dgx1("v100");
        Ledger l = Ledger.create(List.of(v100, t4));
        PlacementEngine e = PlacementEngine.create(l);
        Claim onlyT4 = claim("x", 2, 10, 100).toBuilder().selectors(Selectors.builder().includeModel("Tesla T4").build()).build();
        assertEquals("t4", placed(e.place(onlyT4)).nodeName());
        Claim notT4 = claim("y", 2, 10, 100).toBuilder().selectors(Selectors.builder().excludeModel("Tesla T4").build()).build();
        assertEquals("v100", placed(e.place(notT4)).nodeName());
        Claim none = claim("z", 2, 10, 100).toBuilder().selectors(Selectors.builder().includeModel("H200").build()).build();
        PlacementResult.Unschedulable u = unschedulable(e.place(none));
        assertEquals(10, u.nodes().values().stream().mapToInt(r -> r.gpuReasons().size()).sum());
        u.nodes().values().forEach(r -> r.gpuReasons().values().forEach(rs -> assertTrue(has(rs, ReasonCode.MODEL_NOT_SELECTED))));
        assertTrue(has(u.nodes().get("t4").nodeReasons(), ReasonCode.NOT_ENOUGH_GPUS));
    }

    @Test
    void uuidSelectorsIncludeAndExclude() {
        Node a = Nodes.t4("a", 3);
        Ledger l = Ledger.create(List.of(a));
        PlacementEngine e = PlacementEngine.builder(l).policies(PlacementPolicy.BINPACK, PlacementPolicy.BINPACK).build();
        Claim pinned = claim("p", 2, 10, 100).toBuilder().selectors(Selectors.builder().includeUuid("a-g2").build()).build();
        assertEquals(List.of("a-g2"), placed(e.place(pinned)).gpuUuids());
        Claim avoid = claim("q", 2, 10, 100).toBuilder().selectors(Selectors.builder().excludeUuid("a-g2").build()).build();
        assertNotEquals(List.of("a-g2"), placed(e.place(avoid)).gpuUuids(), "binpack would pick the loaded a-g2");
        Claim impossible = claim("r", 2, 10, 100).toBuilder()
                .selectors(Selectors.builder().includeUuid("a-g0").excludeUuid("a-g0").build()).build();
        PlacementResult.Unschedulable u = unschedulable(e.place(impossible));
        assertTrue(has(u.nodes().get("a").gpuReasons().get("a-g0"), ReasonCode.UUID_NOT_SELECTED));
        assertTrue(has(u.nodes().get("a").gpuReasons().get("a-g1"), ReasonCode.UUID_NOT_SELECTED));
    }

    @Test
    void nodeLabelSelectorIsANodeReason() {
        Node t4 = Nodes.t4("t4", 1);
        Node v100 = Nodes.dgx1("v100");
        Ledger l = Ledger.create(List.of(t4, v100));
        PlacementEngine e = PlacementEngine.create(l);
        Claim c = claim("x", 2, 10, 100).toBuilder().selectors(Selectors.builder().nodeLabel("pool", "v100").build()).build();
        assertEquals("v100", placed(e.place(c)).nodeName());
        Claim none = claim("y", 2, 10, 100).toBuilder().selectors(Selectors.builder().nodeLabel("pool", "tpu").build()).build();
        PlacementResult.Unschedulable u = unschedulable(e.place(none));
        assertTrue(has(u.nodes().get("t4").nodeReasons(), ReasonCode.NODE_LABELS_MISMATCH));
        assertTrue(has(u.nodes().get("v100").nodeReasons(), ReasonCode.NODE_LABELS_MISMATCH));
    }

    @Test
    void unhealthyGpusAreSkippedAndReported() {
        Node a = Nodes.t4("a", 2);
        Ledger l = Ledger.create(List.of(a));
        l.setHealth("a-g0", io.qgpu.api.Health.UNHEALTHY);
        PlacementEngine e = PlacementEngine.create(l);
        assertEquals(List.of("a-g1"), placed(e.place(Nodes.exclusive("x", 1))).gpuUuids());
        PlacementResult.Unschedulable u = unschedulable(e.place(Nodes.exclusive("y", 1)));
        assertTrue(has(u.nodes().get("a").gpuReasons().get("a-g0"), ReasonCode.UNHEALTHY));
        assertTrue(has(u.nodes().get("a").gpuReasons().get("a-g1"), ReasonCode.EXCLUSIVE));
    }

    @Test
    void onlyTheFirstCandidateShowsInThePlacementButExplainListsAll() {
        Node a = Nodes.t4("a", 2);
        Node b = Nodes.t4("b", 2);
        Ledger l = Ledger.create(List.of(a, b));
        assertTrue(l.reserve(on(claim("big", 14, 0, 100), a, 0)).reserved());
        assertTrue(l.reserve(on(claim("big2", 14, 0, 100), a, 1)).reserved());
        PlacementExplanation ex = PlacementEngine.create(l).explain(claim("x", 4, 10, 100));
        assertEquals(1, ex.candidates().size());
        assertEquals("b", ex.candidates().get(0).node());
        assertTrue(has(ex.rejected().get("a").nodeReasons(), ReasonCode.NOT_ENOUGH_GPUS));
    }
}
