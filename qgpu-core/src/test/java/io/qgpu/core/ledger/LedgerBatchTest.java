package io.qgpu.core.ledger;

import static io.qgpu.core.ledger.Fixtures.claim;
import static io.qgpu.core.ledger.Fixtures.on;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.Locality;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.ReasonCode;
import java.util.List;
import org.junit.jupiter.api.Test;

class LedgerBatchTest {

    private final Node a = Fixtures.t4Node("a", 2);
    private final Node b = Fixtures.t4Node("b", 1);

    @Test
    void releasesAndReservesInOneStep() {
        Ledger l = Ledger.create(List.of(a, b));
        Placement v1 = on(claim("v1", 10, 0, 100), a, 0);
        Placement v2 = on(claim("v2", 10, 0, 100), b, 0);
        assertTrue(l.reserve(v1).reserved());
        assertTrue(l.reserve(v2).reserved());
        // 16 GiB GPUs: x fits on a-g0 only once v1 is gone
        Placement x = on(claim("x", 12, 50, 100), a, 0);
        Placement y = on(claim("y", 12, 50, 100), a, 1);
        BatchResult.Committed c = assertInstanceOf(BatchResult.Committed.class, l.commit(List.of(v1), List.of(x, y)));
        assertEquals(List.of(v1), c.released());
        assertEquals(List.of(x, y), c.reserved());
        assertTrue(l.placement("v1").isEmpty());
        assertEquals(x, l.placement("x").orElseThrow());
        assertEquals(y, l.placement("y").orElseThrow());
        assertEquals(v2, l.placement("v2").orElseThrow());
        assertEquals(12 * Fixtures.GIB, l.node("a").orElseThrow().gpu(0).memoryUsed());
        assertEquals(3, l.size());
    }

    @Test
    void anyRefusalChangesNothingAndNamesEveryProblem() {
        Ledger l = Ledger.create(List.of(a, b));
        Placement v1 = on(claim("v1", 10, 0, 100), a, 0);
        assertTrue(l.reserve(v1).reserved());
        LedgerSnapshot before = l.snapshot();
        Placement fits = on(claim("fits", 4, 0, 100), b, 0);
        Placement tooBig = on(claim("big", 8, 0, 100), a, 0);     // 10 + 8 > 16 while v1 stays
        BatchResult.Refused r = assertInstanceOf(BatchResult.Refused.class,
                l.commit(List.of(on(claim("ghost", 1, 0, 100), b, 0)), List.of(fits, tooBig)));
        assertEquals(ReasonCode.UNKNOWN_TARGET, r.reasons().get("ghost").get(0).code());
        assertEquals(ReasonCode.INSUFFICIENT_MEMORY, r.reasons().get("big").get(0).code());
        assertEquals(2, r.reasons().size(), r.summary());
        assertEquals(before, l.snapshot());
        assertTrue(l.placement("fits").isEmpty());
        // a later reservation of the same id is not blocked by the refused batch
        assertTrue(l.reserve(fits).reserved());
    }

    @Test
    void laterReservationsOfTheBatchSeeTheEarlierOnes() {
        Ledger l = Ledger.create(List.of(b));
        Placement x = on(claim("x", 10, 0, 100), b, 0);
        Placement y = on(claim("y", 10, 0, 100), b, 0);
        BatchResult.Refused r = assertInstanceOf(BatchResult.Refused.class, l.commit(List.of(), List.of(x, y)));
        assertEquals(List.of("y"), List.copyOf(r.reasons().keySet()));
        assertEquals(0, l.size());
    }

    @Test
    void duplicatesAreRefused() {
        Ledger l = Ledger.create(List.of(a));
        Placement x = on(claim("x", 1, 0, 100), a, 0);
        assertTrue(l.reserve(x).reserved());
        Placement again = on(claim("x", 1, 0, 100), a, 1);
        assertEquals(ReasonCode.DUPLICATE_TENANT, ((BatchResult.Refused) l.commit(List.of(), List.of(again)))
                .reasons().get("x").get(0).code());
        assertEquals(ReasonCode.DUPLICATE_TENANT, ((BatchResult.Refused) l.commit(List.of(x, x), List.of()))
                .reasons().get("x").get(0).code());
        // released and reserved again in one batch: the id is named twice
        assertEquals(ReasonCode.DUPLICATE_TENANT, ((BatchResult.Refused) l.commit(List.of(x), List.of(again)))
                .reasons().get("x").get(0).code());
        assertEquals(x, l.placement("x").orElseThrow());
    }

    @Test
    void aReleaseMustNameTheCurrentReservationExactly() {
        Ledger l = Ledger.create(List.of(a));
        Placement old = on(claim("x", 1, 0, 100), a, 0);
        Placement now = on(claim("x", 1, 0, 100), a, 1);
        assertTrue(l.reserve(now).reserved());
        BatchResult.Refused r = assertInstanceOf(BatchResult.Refused.class, l.commit(List.of(old), List.of()));
        assertEquals(ReasonCode.CONFLICT, r.reasons().get("x").get(0).code());
        assertEquals(now, l.placement("x").orElseThrow());
    }

    @Test
    void affinityGroupsFollowTheBatch() {
        Ledger l = Ledger.create(List.of(a));
        Claim c1 = Claim.builder("g1").memoryGiB(1).locality(Locality.none().withAffinity("pair")).build();
        Claim c2 = Claim.builder("g2").memoryGiB(1).locality(Locality.none().withAffinity("pair")).build();
        assertTrue(l.reserve(on(c1, a, 0)).reserved());
        // g2 must join g1 on a-g0
        BatchResult.Refused r = assertInstanceOf(BatchResult.Refused.class, l.commit(List.of(), List.of(on(c2, a, 1))));
        assertEquals(ReasonCode.AFFINITY, r.reasons().get("g2").get(0).code());
        // with g1 released in the same batch, the label is free again: g2 may open a-g1
        assertTrue(l.commit(List.of(on(c1, a, 0)), List.of(on(c2, a, 1))).committed());
        Claim c3 = Claim.builder("g3").memoryGiB(1).locality(Locality.none().withAffinity("pair")).build();
        assertEquals(ReasonCode.AFFINITY, ((ReserveResult.Refused) l.reserve(on(c3, a, 0))).reasons().get(0).code());
        assertTrue(l.reserve(on(c3, a, 1)).reserved());
    }
}
