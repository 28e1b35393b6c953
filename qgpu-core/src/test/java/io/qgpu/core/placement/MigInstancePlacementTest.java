package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Selectors;
import io.qgpu.api.TopologyLevel;
import io.qgpu.core.ledger.Ledger;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The engine treats a MIG instance (a device whose UUID starts with {@code MIG-}) as a whole device: a
 * second tenant is refused on it with {@code MIG_INSTANCE_IN_USE} and goes to a free instance, unless the
 * rules share instances. The claims ask for bin-packing, which would put them together on a GPU.
 */
class MigInstancePlacementTest {

    private static final String A = "MIG-aaaaaaaa-0000-0000-0000-000000000000";
    private static final String B = "MIG-bbbbbbbb-0000-0000-0000-000000000000";

    private static Node node() {
        return Node.builder("mig").defaultLink(new GpuLink.Pcie(TopologyLevel.SINGLE))
                .gpu(GpuDevice.builder(A).index(0).model("NVIDIA A100-SXM4-80GB MIG 3g.40gb").memoryGiB(40).build())
                .gpu(GpuDevice.builder(B).index(1).model("NVIDIA A100-SXM4-80GB MIG 3g.40gb").memoryGiB(40).build())
                .build();
    }

    private static Claim packed(String id, String onlyOn) {
        Claim.Builder b = Claim.builder(id).memoryGiB(4).compute(10, 20).gpuPolicy(PlacementPolicy.BINPACK);
        if (onlyOn != null) {
            b.selectors(Selectors.builder().includeUuid(onlyOn).build());
        }
        return b.build();
    }

    private static String placedOn(PlacementEngine e, Claim c) {
        PlacementResult r = e.place(c);
        return assertInstanceOf(PlacementResult.Placed.class, r, r.toString()).placement().gpuUuids().get(0);
    }

    @Test
    void aSecondTenantIsRefusedOnABusyInstanceAndPlacedOnAFreeOne() {
        PlacementEngine e = PlacementEngine.create(Ledger.create(List.of(node())));
        assertEquals(A, placedOn(e, packed("first", A)));
        PlacementResult r = e.place(packed("second", A));
        PlacementResult.Unschedulable u = assertInstanceOf(PlacementResult.Unschedulable.class, r, r.toString());
        String why = u.failedNodes().get("mig");
        assertTrue(why.contains(ReasonCode.MIG_INSTANCE_IN_USE.name()) && why.contains("shareMigInstances"), why);
        assertEquals(B, placedOn(e, packed("second", null)), "bin-packing would pick the busy instance");
        PlacementResult third = e.place(packed("third", null));
        assertTrue(assertInstanceOf(PlacementResult.Unschedulable.class, third, third.toString()).failedNodes().get("mig")
                .contains(ReasonCode.MIG_INSTANCE_IN_USE.name()), third.toString());
    }

    @Test
    void withShareMigInstancesTenantsShareAnInstance() {
        Ledger l = Ledger.create(GranularityRules.ofDefaults().toBuilder().shareMigInstances(true).build(), List.of(node()));
        PlacementEngine e = PlacementEngine.create(l);
        assertEquals(A, placedOn(e, packed("first", A)));
        assertEquals(A, placedOn(e, packed("second", A)));
        assertEquals(A, placedOn(e, packed("third", null)), "bin-packing keeps filling the busy instance");
    }
}
