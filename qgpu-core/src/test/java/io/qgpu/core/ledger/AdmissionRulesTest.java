package io.qgpu.core.ledger;

import static io.qgpu.core.ledger.Fixtures.GIB;
import static io.qgpu.core.ledger.Fixtures.t4Node;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuState;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Selectors;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The exported read-only admission checks: the same answers as a reservation, typed errors for nulls. */
class AdmissionRulesTest {

    private final Node node = t4Node("n", 1);
    private final GranularityRules rules = GranularityRules.ofDefaults();

    @Test
    void aGpuThatCannotTakeTheSliceSaysWhyAndTheLedgerRefusesForTheSameReason() {
        Ledger ledger = Ledger.create(rules, List.of(node));
        assertTrue(ledger.reserve(Fixtures.on(Fixtures.claim("a", 12, 40, 100), node, 0)).reserved());
        Claim big = Fixtures.claim("b", 6, 40, 100);
        GpuState g = ledger.node("n").orElseThrow().gpu(0);

        var why = AdmissionRules.checkGpu(g, big, 6 * GIB, rules);
        assertEquals(List.of(ReasonCode.INSUFFICIENT_MEMORY), why.stream().map(r -> r.code()).toList());
        ReserveResult.Refused refused = (ReserveResult.Refused) ledger.reserve(Fixtures.on(big, node, 0));
        assertEquals(why, refused.reasons());

        assertEquals(List.of(), AdmissionRules.checkGpu(g, Fixtures.claim("c", 4, 40, 100), 4 * GIB, rules));
    }

    @Test
    void aNodeWhoseLabelsDoNotMatchSaysWhy() {
        Claim wantsH100 = Claim.builder("a").memoryGiB(1).compute(5, 5)
                .selectors(Selectors.builder().nodeLabel("pool", "h100").build()).build();
        assertEquals(ReasonCode.NODE_LABELS_MISMATCH, AdmissionRules.checkNode(node, wantsH100).get(0).code());
        assertEquals(List.of(), AdmissionRules.checkNode(node, Fixtures.claim("b", 1, 5, 5)));
    }

    @Test
    void nullArgumentsAreRefusedByName() {
        GpuState g = GpuState.empty(node.gpus().get(0));
        Claim c = Fixtures.claim("a", 1, 5, 5);
        assertEquals("gpu", assertThrows(InvalidValueException.class, () -> AdmissionRules.checkGpu(null, c, GIB, rules)).field());
        assertEquals("claim", assertThrows(InvalidValueException.class, () -> AdmissionRules.checkGpu(g, null, GIB, rules)).field());
        assertEquals("rules", assertThrows(InvalidValueException.class, () -> AdmissionRules.checkGpu(g, c, GIB, null)).field());
        assertEquals("node", assertThrows(InvalidValueException.class, () -> AdmissionRules.checkNode(null, c)).field());
        assertEquals("claim", assertThrows(InvalidValueException.class, () -> AdmissionRules.checkNode(node, null)).field());
    }
}
