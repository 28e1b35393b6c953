package io.qgpu.core.placement;

import static io.qgpu.core.placement.Nodes.exclusive;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.Gang;
import io.qgpu.api.GangResult;
import io.qgpu.api.GangScope;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.TopologyLevel;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.ReasonCode;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.LedgerSnapshot;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class GangPlacerTest {

    static Node rackNode(String name, String rack, int gpus) {
        Node.Builder b = Node.builder(name).label("rack", rack).defaultLink(new GpuLink.Pcie(TopologyLevel.HOSTBRIDGE));
        for (int i = 0; i < gpus; i++) {
            b.gpu(GpuDevice.builder(name + "-g" + i).index(i).model("Tesla T4").memoryGiB(16).build());
        }
        return b.build();
    }

    static Gang gang(String name, GangScope scope, int members, int gpusEach) {
        Gang.Builder b = Gang.builder(name).together(scope);
        for (int i = 0; i < members; i++) {
            b.member(exclusive(name + "-" + i, gpusEach));
        }
        return b.build();
    }

    static GangResult.Placed placed(GangResult r) {
        return assertInstanceOf(GangResult.Placed.class, r, () -> r instanceof GangResult.Unschedulable u ? u.summary() : "");
    }

    @Test
    void placesEveryMemberAndCommitsThem() {
        Ledger l = Ledger.create(List.of(rackNode("a", "r1", 2), rackNode("b", "r1", 2)));
        GangResult.Placed p = placed(new GangPlacer(PlacementEngine.create(l)).place(gang("job", GangScope.anywhere(), 3, 1)));
        assertEquals(List.of("job-0", "job-1", "job-2"), p.placements().stream().map(Placement::tenantId).toList());
        for (Placement x : p.placements()) {
            assertEquals(x, l.placement(x.tenantId()).orElseThrow());
        }
        assertEquals(3, l.size());
        assertEquals(3, p.placements().stream().flatMap(x -> x.gpuUuids().stream()).distinct().count());
    }

    @Test
    void aGangThatDoesNotFitCommitsNothingAndGivesReasonsPerMember() {
        Ledger l = Ledger.create(List.of(rackNode("a", "r1", 2), rackNode("b", "r1", 1)));
        LedgerSnapshot before = l.snapshot();
        // 2 + 2 GPUs on one node each: node a takes one member, node b none
        GangResult.Unschedulable u = assertInstanceOf(GangResult.Unschedulable.class,
                new GangPlacer(PlacementEngine.create(l)).place(gang("job", GangScope.anywhere(), 2, 2)));
        assertEquals(before, l.snapshot());
        assertEquals(Set.of("job-0", "job-1"), u.members().keySet());
        PlacementResult.Unschedulable fitted = u.members().get("job-0");
        assertEquals(ReasonCode.GANG, fitted.general().get(0).code(), u.summary());
        PlacementResult.Unschedulable refused = u.members().get("job-1");
        assertTrue(refused.nodes().containsKey("a") && refused.nodes().containsKey("b"), u.summary());
        assertEquals(ReasonCode.GANG, u.general().get(0).code());
    }

    @Test
    void sameLabelKeepsEveryMemberInOneRack() {
        Node a = rackNode("a", "r1", 1);
        Node b = rackNode("b", "r1", 1);
        Node c = rackNode("c", "r2", 2);
        Node d = rackNode("d", "r2", 2);
        Ledger l = Ledger.create(List.of(a, b, c, d));
        assertTrue(l.reserve(Nodes.on(exclusive("busy", 1), b, 0)).reserved());
        // r1 has one free GPU left, r2 four: the three members all go to r2
        GangResult.Placed p = placed(new GangPlacer(PlacementEngine.create(l))
                .place(gang("job", GangScope.sameLabel("rack"), 3, 1)));
        assertEquals(Set.of("c", "d"), p.placements().stream().map(Placement::nodeName).collect(Collectors.toSet()));
    }

    @Test
    void sameLabelWithoutTheLabelAnywhereIsAGeneralReason() {
        Ledger l = Ledger.create(List.of(Nodes.t4("a", 2)));
        GangResult.Unschedulable u = assertInstanceOf(GangResult.Unschedulable.class,
                new GangPlacer(PlacementEngine.create(l)).place(gang("job", GangScope.sameLabel("nvlink-domain"), 2, 1)));
        assertEquals(ReasonCode.GANG, u.general().get(0).code());
        assertTrue(u.summary().contains("nvlink-domain"), u.summary());
    }

    @Test
    void sameNodePutsEveryMemberOnOneNode() {
        Ledger l = Ledger.create(List.of(rackNode("a", "r1", 2), rackNode("b", "r1", 2), rackNode("c", "r1", 4)));
        GangResult.Placed p = placed(new GangPlacer(PlacementEngine.create(l)).place(gang("job", GangScope.sameNode(), 3, 1)));
        assertEquals(Set.of("c"), p.placements().stream().map(Placement::nodeName).collect(Collectors.toSet()));
        assertEquals(0, l.node("a").orElseThrow().tenants() + l.node("b").orElseThrow().tenants());
    }

    @Test
    void aMemberAlreadyReservedRefusesTheGang() {
        Node a = rackNode("a", "r1", 2);
        Ledger l = Ledger.create(List.of(a));
        assertTrue(l.reserve(Nodes.on(exclusive("job-1", 1), a, 0)).reserved());
        GangResult.Unschedulable u = assertInstanceOf(GangResult.Unschedulable.class,
                new GangPlacer(PlacementEngine.create(l)).place(gang("job", GangScope.anywhere(), 2, 1)));
        assertEquals(ReasonCode.DUPLICATE_TENANT, u.general().get(0).code());
        assertEquals(1, l.size());
    }

    @Test
    void aLostRaceIsRetriedFromTheCurrentState() {
        Node a = rackNode("a", "r1", 2);
        Node b = rackNode("b", "r1", 2);
        Ledger l = Ledger.create(List.of(a, b));
        // the thief takes a-g0 while the first trial runs on its private copy
        PlacementEngine e = PlacementEngine.builder(l)
                .nodeFilter(PlacementConcurrencyTest.stealOnce(l, Nodes.on(exclusive("thief", 1), a, 0))).build();
        GangResult.Placed p = placed(new GangPlacer(e).place(gang("job", GangScope.anywhere(), 3, 1)));
        assertEquals(3, p.placements().size());
        assertTrue(p.placements().stream().noneMatch(x -> x.gpuUuids().contains("a-g0")));
        assertEquals(4, l.size());
    }

    @Test
    void membersWithTheMostGpusArePlacedFirst() {
        Ledger l = Ledger.create(List.of(rackNode("a", "r1", 2), rackNode("b", "r1", 1)));
        // in member order the 1-GPU member could take a GPU of a and leave the 2-GPU member nowhere
        Gang g = Gang.builder("job").member(exclusive("small", 1)).member(exclusive("big", 2)).build();
        GangResult.Placed p = placed(new GangPlacer(PlacementEngine.create(l)).place(g));
        assertEquals(List.of("small", "big"), p.placements().stream().map(Placement::tenantId).toList());
        assertEquals("a", p.placements().get(1).nodeName());
        assertEquals("b", p.placements().get(0).nodeName());
    }

    @Test
    void whenCommitAttemptsRunOutTheAnswerIsConflict() {
        Node a = rackNode("a", "r1", 2);
        Ledger l = Ledger.create(List.of(a));
        PlacementEngine e = PlacementEngine.builder(l).config(PlacementConfig.builder().maxCommitAttempts(1).build())
                .nodeFilter(PlacementConcurrencyTest.stealOnce(l, Nodes.on(exclusive("thief", 1), a, 0))).build();
        GangResult.Unschedulable u = assertInstanceOf(GangResult.Unschedulable.class,
                new GangPlacer(e).place(gang("job", GangScope.anywhere(), 2, 1)));
        assertEquals(ReasonCode.CONFLICT, u.general().get(0).code(), u.summary());
        assertEquals(1, l.size(), "only the thief");
    }

    @Test
    void builderFailsFast() {
        assertThrows(InvalidValueException.class, () -> Gang.builder("g").build());
        Claim c = exclusive("x", 1);
        assertThrows(InvalidValueException.class, () -> Gang.builder("g").member(c).member(c).build());
        assertThrows(InvalidValueException.class, () -> GangScope.sameLabel(" "));
        assertThrows(InvalidValueException.class, () -> Gang.builder("g").member(null));
    }
}
