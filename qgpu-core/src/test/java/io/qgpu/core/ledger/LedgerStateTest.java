package io.qgpu.core.ledger;

import static io.qgpu.core.ledger.Fixtures.GIB;
import static io.qgpu.core.ledger.Fixtures.claim;
import static io.qgpu.core.ledger.Fixtures.h100Node;
import static io.qgpu.core.ledger.Fixtures.on;
import static io.qgpu.core.ledger.Fixtures.t4Node;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Health;
import io.qgpu.api.Locality;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Slice;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Snapshot, restore and reconcile (through JSON: qgpu-json's SnapshotJsonTest). */
class LedgerStateTest {

    private final Node a = t4Node("a", 2);
    private final Node h = h100Node("h", 8);

    private Ledger populated() {
        Ledger l = Ledger.create(List.of(a, h));
        l.reserve(on(claim("t1", 4, 20, 50), a, 0));
        l.reserve(on(Claim.builder("on1").memoryGiB(8).compute(60, 100).priority(PriorityClass.ONLINE)
                .locality(Locality.of("grp", "rep", null)).build(), h, 2));
        l.reserve(on(Claim.builder("on2").memoryGiB(8).compute(10, 100).priority(PriorityClass.ONLINE)
                .locality(Locality.of("grp", null, null)).build(), h, 2));
        l.reserve(on(Claim.builder("train").gpus(4).exclusive().build(), h, 4, 5, 6, 7));
        l.setHealth("a-g0", Health.UNHEALTHY);
        return l;
    }

    @Test
    void aSnapshotRestoresToAnIdenticalLedger() {
        Ledger l = populated();
        LedgerSnapshot snap = l.snapshot();
        LedgerSnapshot back = new LedgerSnapshot(snap.rules(), snap.nodes(), snap.placements());
        assertEquals(snap, back);
        Ledger restored = Ledger.of(back);
        assertEquals(snap, restored.snapshot());
        assertEquals(l.nodes(), restored.nodes());
        assertEquals(l.displaced(), restored.displaced(), "a tenant on an unhealthy GPU survives a restore");
        // the affinity group is rebuilt too
        Placement wrong = on(Claim.builder("on3").memoryGiB(1).priority(PriorityClass.ONLINE)
                .locality(Locality.none().withAffinity("grp")).build(), h, 3);
        assertEquals(ReasonCode.AFFINITY, ((ReserveResult.Refused) restored.reserve(wrong)).reasons().get(0).code());
        // restore into an existing ledger replaces it
        Ledger other = Ledger.create(List.of(t4Node("zzz", 1)));
        other.restore(back);
        assertEquals(snap, other.snapshot());
    }

    @Test
    void oversubscribedSnapshotIsRefusedAndTheLedgerIsUntouched() {
        Ledger l = populated();
        LedgerSnapshot before = l.snapshot();
        List<Placement> over = new ArrayList<>(before.placements());
        over.add(on(claim("huge", 14, 0, 100), a, 1));
        over.add(on(claim("huge2", 14, 0, 100), a, 1));
        LedgerSnapshot bad = new LedgerSnapshot(before.rules(), before.nodes(), over);
        LedgerStateException e = assertThrows(LedgerStateException.class, () -> l.restore(bad));
        assertTrue(e.reasons().stream().anyMatch(r -> r.code() == ReasonCode.INSUFFICIENT_MEMORY), e.getMessage());
        assertEquals(before, l.snapshot());
    }

    @Test
    void snapshotWithUnknownGpuOrDuplicateIsRefused() {
        Ledger l = populated();
        LedgerSnapshot before = l.snapshot();
        List<Placement> unknown = new ArrayList<>(before.placements());
        unknown.add(new Placement(claim("ghost", 1, 0, 100), "a", List.of(new Slice("GPU-nope", GIB, 0, 100))));
        LedgerStateException e = assertThrows(LedgerStateException.class,
                () -> l.restore(new LedgerSnapshot(before.rules(), before.nodes(), unknown)));
        assertTrue(e.getMessage().contains("GPU-nope"), e.getMessage());
        List<Placement> dup = new ArrayList<>(before.placements());
        dup.add(before.placements().get(0));
        assertThrows(LedgerStateException.class, () -> l.restore(new LedgerSnapshot(before.rules(), before.nodes(), dup)));
        List<Node> dupNodes = List.of(a, a);
        assertThrows(LedgerStateException.class, () -> l.restore(new LedgerSnapshot(before.rules(), dupNodes, List.of())));
        assertEquals(before, l.snapshot());
    }

    @Test
    void reconcileRebuildsFromBoundAllocationsAndReportsEveryDifference() {
        Ledger l = populated();
        Placement t1 = l.placement("t1").orElseThrow();
        Placement on1 = l.placement("on1").orElseThrow();
        Placement train = l.placement("train").orElseThrow();
        // the truth: t1 and train are bound, on1 is bound elsewhere, on2 is gone, fresh is new, ghost cannot fit
        Placement on1Moved = on(on1.claim(), h, 3);
        Placement fresh = on(claim("fresh", 2, 10, 20), a, 1);
        Placement ghost = on(claim("ghost", 70, 0, 100), h, 4);
        ReconcileReport report = l.reconcile(List.of(t1, train, on1Moved, fresh, ghost));
        assertEquals(List.of("fresh"), tenants(report, ReconcileReport.Kind.ADDED));
        assertEquals(List.of("on2"), tenants(report, ReconcileReport.Kind.REMOVED));
        assertEquals(List.of("on1"), tenants(report, ReconcileReport.Kind.CHANGED));
        assertEquals(List.of("ghost"), tenants(report, ReconcileReport.Kind.REFUSED));
        assertTrue(report.of(ReconcileReport.Kind.REFUSED).get(0).reasons().stream()
                .anyMatch(r -> r.code() == ReasonCode.EXCLUSIVE || r.code() == ReasonCode.INSUFFICIENT_MEMORY));
        assertEquals(List.of("fresh", "on1", "t1", "train"), l.placements().stream().map(Placement::tenantId).toList());
        assertEquals(on1Moved, l.placement("on1").orElseThrow());
        assertEquals(4, report.differences().size());
        // reconciling again with the same truth changes nothing but still reports the refusal
        ReconcileReport again = l.reconcile(List.of(t1, train, on1Moved, fresh, ghost));
        assertEquals(List.of("ghost"), tenants(again, ReconcileReport.Kind.REFUSED));
        assertEquals(1, again.differences().size());
        assertTrue(l.reconcile(List.of(t1, train, on1Moved, fresh)).inSync());
    }

    @Test
    void restoreKeepsTheSnapshotsRules() {
        Ledger hami = Ledger.create(GranularityRules.hami(), List.of(a));
        hami.reserve(on(Claim.builder("odd").memoryGiB(1).compute(7, 13).build(), a, 1));
        Ledger back = Ledger.of(hami.snapshot());
        assertEquals(GranularityRules.hami(), back.rules());
        assertEquals(hami.snapshot(), back.snapshot());
    }

    private static List<String> tenants(ReconcileReport r, ReconcileReport.Kind kind) {
        return r.of(kind).stream().map(ReconcileReport.Difference::tenant).toList();
    }
}
