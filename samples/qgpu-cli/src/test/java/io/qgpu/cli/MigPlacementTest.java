package io.qgpu.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.Function;
import com.sun.jna.NativeLibrary;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.Selectors;
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
 * instance each, a slice goes only to an instance with room for it, and an instance holds one tenant unless
 * the granularity rule {@code shareMigInstances} lets slices share it.
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

    /** A 4 GiB slice that bin-packs (so it would join a busy device if the rules let it), optionally on one instance. */
    private static Claim slice(String id, String onlyOn) {
        Claim.Builder b = Claim.builder(id).gpus(1).memoryGiB(4).compute(10, 20).gpuPolicy(PlacementPolicy.BINPACK);
        if (onlyOn != null) {
            b.selectors(Selectors.builder().includeUuid(onlyOn).build());
        }
        return b.build();
    }

    private static String placedOn(PlacementEngine engine, Claim c) {
        PlacementResult r = engine.place(c);
        return assertInstanceOf(PlacementResult.Placed.class, r, r.toString()).placement().gpuUuids().get(0);
    }

    @Test
    void aSecondSliceOnAnInstanceGoesToAnotherInstanceOrIsRefusedWhenNoneIsFree() {
        NvmlInventory inv = discover();
        PlacementEngine engine = PlacementEngine.builder(Ledger.create(List.of(inv.node()))).build();
        String first = inv.migInstances().get(0).uuid();
        assertEquals(first, placedOn(engine, slice("s0", first)));
        PlacementResult again = engine.place(slice("aimed", first));
        String why = assertInstanceOf(PlacementResult.Unschedulable.class, again, again.toString()).failedNodes().get("mig-node");
        assertTrue(why.contains(first + ": MIG_INSTANCE_IN_USE a MIG instance is a whole device")
                && why.contains("shareMigInstances"), why);
        Set<String> taken = new HashSet<>(Set.of(first));
        for (int i = 1; i < 5; i++) {
            String uuid = placedOn(engine, slice("s" + i, null));
            assertTrue(taken.add(uuid), "a busy instance was given a second slice: " + uuid);
        }
        PlacementResult sixth = engine.place(slice("s5", null));
        String none = assertInstanceOf(PlacementResult.Unschedulable.class, sixth, sixth.toString()).failedNodes().get("mig-node");
        for (MigInstance m : inv.migInstances()) {
            assertTrue(none.contains(m.uuid() + ": MIG_INSTANCE_IN_USE"), none);
        }
    }

    @Test
    void withShareMigInstancesSlicesShareAnInstance() {
        NvmlInventory inv = discover();
        GranularityRules share = GranularityRules.ofDefaults().toBuilder().shareMigInstances(true).build();
        PlacementEngine engine = PlacementEngine.builder(Ledger.create(share, List.of(inv.node()))).build();
        String first = inv.migInstances().get(0).uuid();
        assertEquals(first, placedOn(engine, slice("s0", first)));
        assertEquals(first, placedOn(engine, slice("aimed", first)));
        assertEquals(first, placedOn(engine, slice("packed", null)), "bin-packing joins the busy instance");
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
