package io.qgpu.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.Function;
import com.sun.jna.NativeLibrary;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.Node;
import io.qgpu.api.PlacementResult;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.discovery.MigInstance;
import io.qgpu.nvml.discovery.NvmlDiscovery;
import io.qgpu.nvml.discovery.NvmlInventory;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * End to end: NVML discovery of a MIG machine (the fake a100-mig, seen from a container) feeds the placement
 * engine, which treats each MIG instance as a device of its own: whole-instance (exclusive) claims take one
 * instance each, and a slice goes only to an instance with room for it.
 */
class MigPlacementTest {

    private static NvmlInventory discover() {
        String lib = InventoryCommandTest.fake().toString();
        try (Nvml nvml = Nvml.builder().libraryName(lib).open()) {
            Function select = NativeLibrary.getInstance(lib).getFunction(InventoryCommand.FAKE_SELECT);
            assertEquals(0, select.invokeInt(new Object[] {"a100-mig"}));
            return NvmlDiscovery.builder().session(nvml).build().inventory("mig-node");
        }
    }

    @Test
    void wholeInstanceClaimsTakeOneMigInstanceEach() {
        NvmlInventory inv = discover();
        Node node = inv.node();
        Set<String> instances = new HashSet<>();
        inv.migInstances().forEach(m -> instances.add(m.uuid()));
        assertEquals(5, instances.size());
        PlacementEngine engine = PlacementEngine.builder(Ledger.create(List.of(node))).build();
        Set<String> taken = new HashSet<>();
        for (int i = 0; i < 5; i++) {
            PlacementResult r = engine.place(Claim.builder("whole-" + i).gpus(1).exclusive().build());
            PlacementResult.Placed p = assertInstanceOf(PlacementResult.Placed.class, r, r.toString());
            String uuid = p.placement().gpuUuids().get(0);
            assertTrue(uuid.startsWith("MIG-"), uuid);
            assertTrue(taken.add(uuid), "an instance was given twice: " + uuid);
        }
        assertEquals(instances, taken);
        assertInstanceOf(PlacementResult.Unschedulable.class, engine.place(Claim.builder("sixth").gpus(1).exclusive().build()),
                "every instance is taken");
    }

    @Test
    void aSliceGoesOnlyToAnInstanceWithRoomForIt() {
        NvmlInventory inv = discover();
        PlacementEngine engine = PlacementEngine.builder(Ledger.create(List.of(inv.node()))).build();
        PlacementResult r = engine.place(Claim.builder("big").gpus(1).memoryGiB(30).compute(50, 100).build());
        PlacementResult.Placed p = assertInstanceOf(PlacementResult.Placed.class, r, r.toString());
        MigInstance where = inv.migInstance(p.placement().gpuUuids().get(0)).orElseThrow();
        assertTrue(where.memoryTotalBytes() >= 30L * GpuDevice.GIB, where.toString());
        assertTrue(where.name().endsWith("3g.40gb") || where.name().endsWith("7g.80gb"), where.name());
    }
}
