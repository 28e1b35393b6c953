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

    @Test
    void releasingAnUnknownTenantKeepsTheSameState() {
        NodeState s = ((Admission.Admitted) Admission.reserve(NodeState.empty(node), on("t", "a", 1), RULES)).next();
        assertSame(s, Admission.release(s, "nobody"));
        assertEquals(0, Admission.release(s, "t").gpu(0).memoryUsed());
    }
}
