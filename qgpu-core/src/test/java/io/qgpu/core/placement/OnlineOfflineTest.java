package io.qgpu.core.placement;

import static io.qgpu.core.placement.Nodes.claim;
import static io.qgpu.core.placement.Nodes.on;
import static io.qgpu.core.placement.PlacementEngineTest.placed;
import static io.qgpu.core.placement.PlacementEngineTest.unschedulable;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.Node;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.TopologyLevel;
import io.qgpu.core.ledger.Ledger;
import java.util.List;
import org.junit.jupiter.api.Test;

class OnlineOfflineTest {

    static Claim offline(String id, long gib, int request) {
        return Claim.builder(id).memoryGiB(gib).compute(request, 100).priority(PriorityClass.OFFLINE).build();
    }

    @Test
    void guaranteedComputeIsAdmittedPerClass() {
        Node a = Nodes.t4("a", 1);
        Ledger l = Ledger.create(List.of(a));
        PlacementEngine e = PlacementEngine.create(l);
        placed(e.place(offline("train", 4, 100)));
        // offline took 100% of the offline budget; online has its own 100%
        placed(e.place(Nodes.online("infer", 4, 60)));
        PlacementResult.Unschedulable u = unschedulable(e.place(offline("train-2", 4, 10)));
        Reason r = u.nodes().get("a").gpuReasons().get("a-g0").get(0);
        assertEquals(ReasonCode.INSUFFICIENT_COMPUTE, r.code());
        assertEquals(10, r.requested());
        assertEquals(0, r.available());
        PlacementResult.Unschedulable u2 = unschedulable(e.place(Nodes.online("infer-2", 4, 50)));
        Reason r2 = u2.nodes().get("a").gpuReasons().get("a-g0").get(0);
        assertEquals(40, r2.available());
        assertEquals(10, r2.shortfall());
    }

    @Test
    void classDefaultsSpreadOnlineAndBinpackOffline() {
        Node a = Nodes.t4("a", 2);
        Node b = Nodes.t4("b", 2);
        Ledger l = Ledger.create(List.of(a, b));
        assertTrue(l.reserve(on(claim("seed", 4, 20, 100), a, 0)).reserved());
        PlacementEngine e = PlacementEngine.builder(l).config(PlacementConfig.builder()
                .classPolicy(PriorityClass.ONLINE, PlacementPolicy.SPREAD, PlacementPolicy.SPREAD)
                .classPolicy(PriorityClass.OFFLINE, PlacementPolicy.BINPACK, PlacementPolicy.BINPACK)
                .build()).build();
        var on1 = placed(e.place(Nodes.online("on-1", 2, 10)));
        assertEquals("b", on1.nodeName(), "online spreads to the emptier node");
        var off1 = placed(e.place(offline("off-1", 2, 10)));
        assertEquals("a", off1.nodeName(), "offline packs onto the fuller node");
        assertEquals(List.of("a-g0"), off1.gpuUuids(), "and onto its fuller GPU");
        var on2 = placed(e.place(Nodes.online("on-2", 2, 10)));
        assertEquals(List.of("b-g1"), on2.gpuUuids(), "online avoids the GPU its peer uses");
    }

    @Test
    void aGpuKeptForOneClassTakesOnlyThatClass() {
        Node n = Node.builder("mixed").defaultLink(new GpuLink.Pcie(TopologyLevel.HOSTBRIDGE))
                .gpu(GpuDevice.builder("on-only").index(0).model("Tesla T4").memoryGiB(16).reservedFor(PriorityClass.ONLINE).build())
                .gpu(GpuDevice.builder("any").index(1).model("Tesla T4").memoryGiB(16).build())
                .build();
        Ledger l = Ledger.create(List.of(n));
        PlacementEngine e = PlacementEngine.builder(l).policies(PlacementPolicy.BINPACK, PlacementPolicy.SPREAD).build();
        assertEquals(List.of("any"), placed(e.place(offline("off-1", 2, 10))).gpuUuids());
        assertEquals(List.of("on-only"), placed(e.place(Nodes.online("on-1", 2, 10))).gpuUuids(),
                "spread: online prefers its idle reserved GPU");
        assertEquals(List.of("any"), placed(e.place(offline("off-2", 2, 10))).gpuUuids());
        l.release("off-1");
        l.release("off-2");
        assertTrue(l.reserve(on(claim("fill", 16, 0, 100), n, 1)).reserved());
        PlacementResult.Unschedulable u = unschedulable(e.place(offline("off-3", 2, 10)));
        assertEquals(ReasonCode.RESERVED_FOR_OTHER_CLASS, u.nodes().get("mixed").gpuReasons().get("on-only").get(0).code());
    }
}
