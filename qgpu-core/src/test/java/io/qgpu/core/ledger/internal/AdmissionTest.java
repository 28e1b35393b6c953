package io.qgpu.core.ledger.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Slice;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The pure next-state functions on their own. */
class AdmissionTest {

    private static final GranularityRules RULES = GranularityRules.ofDefaults();
    private final Node node = Node.builder("a").defaultLink(new GpuLink.NvLink(1))
            .gpu(GpuDevice.builder("a-g0").index(0).model("Tesla T4").memoryGiB(16).build()).build();

    private static Placement on(String id, String nodeName, long gib) {
        return new Placement(Claim.builder(id).memoryGiB(gib).compute(5, 10).build(), nodeName,
                List.of(new Slice("a-g0", gib << 30, 5, 10)));
    }

    @Test
    void aPlacementForAnotherNodeIsRejectedNamingThatNode() {
        Admission.Result r = Admission.reserve(NodeState.empty(node), on("t", "b", 1), RULES);
        Admission.Rejected rej = assertInstanceOf(Admission.Rejected.class, r);
        assertEquals(List.of(ReasonCode.UNKNOWN_TARGET), rej.reasons().stream().map(Reason::code).toList());
        assertEquals("b", rej.reasons().get(0).target());
    }

    @Test
    void aFullGpuSaysNoSlotIsLeft() {
        NodeState s = NodeState.empty(node);
        int max = RULES.maxTenants(node.gpus().get(0));
        for (int i = 0; i < max; i++) {
            s = ((Admission.Admitted) Admission.reserve(s, on("t" + i, "a", 1), RULES)).next();
        }
        Admission.Rejected rej = assertInstanceOf(Admission.Rejected.class, Admission.reserve(s, on("x", "a", 1), RULES));
        Reason tooMany = rej.reasons().stream().filter(r -> r.code() == ReasonCode.TOO_MANY_TENANTS).findFirst().orElseThrow();
        assertEquals(1, tooMany.requested());
        assertEquals(0, tooMany.available());
    }

    // ------------------------------------------------------------------ MIG instances

    private static final String MIG = "MIG-0b5c1d5e-0000-0000-0000-000000000000";

    /** A node whose one device is a 40 GiB MIG instance (10 tenant slots by memory alone) or, with {@code GPU-}, a GPU. */
    private static Node single(String uuid) {
        return Node.builder("m").defaultLink(new GpuLink.NvLink(1))
                .gpu(GpuDevice.builder(uuid).index(0).model("NVIDIA A100-SXM4-80GB MIG 3g.40gb").memoryGiB(40).build()).build();
    }

    private static Placement slice(String id, String uuid) {
        return new Placement(Claim.builder(id).memoryGiB(4).compute(10, 20).build(), "m",
                List.of(new Slice(uuid, 4L << 30, 10, 20)));
    }

    private static Admission.Result secondTenant(String uuid, GranularityRules rules) {
        NodeState s = ((Admission.Admitted) Admission.reserve(NodeState.empty(single(uuid)), slice("first", uuid), rules)).next();
        return Admission.reserve(s, slice("second", uuid), rules);
    }

    @Test
    void aMigInstanceRefusesASecondTenantByDefaultNamingTheRule() {
        assertEquals(1, RULES.maxTenants(single(MIG).gpus().get(0)));
        Admission.Rejected rej = assertInstanceOf(Admission.Rejected.class, secondTenant(MIG, RULES));
        assertEquals(List.of(ReasonCode.MIG_INSTANCE_IN_USE), rej.reasons().stream().map(Reason::code).toList());
        assertEquals(MIG + ": MIG_INSTANCE_IN_USE a MIG instance is a whole device and this one holds 1 tenant"
                + " (the granularity rule shareMigInstances lets tenants share an instance)", rej.reasons().get(0).message());
        // every preset keeps instances whole
        for (GranularityRules preset : List.of(GranularityRules.hami(), GranularityRules.gpuManager())) {
            assertInstanceOf(Admission.Rejected.class, secondTenant(MIG, preset), preset.name());
        }
    }

    @Test
    void shareMigInstancesLetsTenantsShareAnInstanceWithinTheOtherRules() {
        GranularityRules share = RULES.toBuilder().shareMigInstances(true).build();
        Admission.Admitted ok = assertInstanceOf(Admission.Admitted.class, secondTenant(MIG, share));
        assertEquals(2, ok.next().gpu(0).tenants());
        assertEquals(10, share.maxTenants(single(MIG).gpus().get(0)), "then the usual slot rule: 40 GiB / 4 GiB");
    }

    @Test
    void aGpuThatIsNotAMigInstanceIsUnaffected() {
        String gpu = "GPU-0b5c1d5e-0000-0000-0000-000000000000";
        assertEquals(10, RULES.maxTenants(single(gpu).gpus().get(0)));
        Admission.Admitted ok = assertInstanceOf(Admission.Admitted.class, secondTenant(gpu, RULES));
        assertEquals(2, ok.next().gpu(0).tenants());
    }

    @Test
    void releasingAnUnknownTenantKeepsTheSameState() {
        NodeState s = ((Admission.Admitted) Admission.reserve(NodeState.empty(node), on("t", "a", 1), RULES)).next();
        assertSame(s, Admission.release(s, "nobody"));
        assertEquals(0, Admission.release(s, "t").gpu(0).memoryUsed());
    }
}
