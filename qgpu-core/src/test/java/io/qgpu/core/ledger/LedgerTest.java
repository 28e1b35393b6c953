package io.qgpu.core.ledger;

import static io.qgpu.core.ledger.Fixtures.GIB;
import static io.qgpu.core.ledger.Fixtures.claim;
import static io.qgpu.core.ledger.Fixtures.on;
import static io.qgpu.core.ledger.Fixtures.t4Node;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Health;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Locality;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Selectors;
import io.qgpu.api.Slice;
import io.qgpu.api.TopologyLevel;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class LedgerTest {

    private final Node a = t4Node("a", 2);
    private final Node b = t4Node("b", 4);
    private final Ledger ledger = Ledger.create(List.of(a, b));

    private static Set<ReasonCode> codes(ReserveResult r) {
        return ((ReserveResult.Refused) r).reasons().stream().map(Reason::code).collect(Collectors.toSet());
    }

    @Test
    void reservesAndReportsState() {
        Placement p = on(claim("t1", 4, 20, 50), a, 0);
        ReserveResult r = ledger.reserve(p);
        assertInstanceOf(ReserveResult.Reserved.class, r);
        var gpu = ledger.node("a").orElseThrow().gpu(0);
        assertEquals(4 * GIB, gpu.memoryUsed());
        assertEquals(12 * GIB, gpu.memoryFree());
        assertEquals(20, gpu.guaranteed(PriorityClass.OFFLINE));
        assertEquals(0, gpu.guaranteed(PriorityClass.ONLINE));
        assertEquals(1, gpu.tenants());
        assertEquals(p, ledger.placement("t1").orElseThrow());
        assertEquals(1, ledger.size());
    }

    @Test
    void refusesMemoryOversubscriptionWithShortfall() {
        assertTrue(ledger.reserve(on(claim("t1", 12, 0, 100), a, 0)).reserved());
        ReserveResult r = ledger.reserve(on(claim("t2", 8, 0, 100), a, 0));
        Reason reason = ((ReserveResult.Refused) r).reasons().get(0);
        assertEquals(ReasonCode.INSUFFICIENT_MEMORY, reason.code());
        assertEquals(8 * GIB, reason.requested());
        assertEquals(4 * GIB, reason.available());
        assertEquals(4 * GIB, reason.shortfall());
        assertEquals(1, ledger.size());
    }

    @Test
    void guaranteedComputeIsCountedPerPriorityClass() {
        Claim off = Claim.builder("off").memoryGiB(1).compute(80, 100).priority(PriorityClass.OFFLINE).build();
        Claim on = Claim.builder("on").memoryGiB(1).compute(80, 100).priority(PriorityClass.ONLINE).build();
        Claim off2 = Claim.builder("off2").memoryGiB(1).compute(25, 100).priority(PriorityClass.OFFLINE).build();
        Claim on2 = Claim.builder("on2").memoryGiB(1).compute(20, 100).priority(PriorityClass.ONLINE).build();
        assertTrue(ledger.reserve(on(off, a, 0)).reserved());
        assertTrue(ledger.reserve(on(on, a, 0)).reserved(), "online has its own 100%");
        assertEquals(Set.of(ReasonCode.INSUFFICIENT_COMPUTE), codes(ledger.reserve(on(off2, a, 0))));
        assertTrue(ledger.reserve(on(on2, a, 0)).reserved(), "online 80 + 20 = 100 fits exactly");
    }

    @Test
    void tenantsPerGpuFollowTheRules() {
        // qGPU: a 16 GiB T4 holds min(16, 16/4) = 4 tenants
        for (int i = 0; i < 4; i++) {
            assertTrue(ledger.reserve(on(claim("t" + i, 1, 0, 100), a, 0)).reserved());
        }
        assertEquals(Set.of(ReasonCode.TOO_MANY_TENANTS), codes(ledger.reserve(on(claim("t4", 1, 0, 100), a, 0))));
        // HAMi rules allow 10
        Ledger hami = Ledger.create(GranularityRules.hami(), List.of(a));
        for (int i = 0; i < 10; i++) {
            assertTrue(hami.reserve(on(claim("t" + i, 1, 0, 100), a, 0)).reserved());
        }
        assertFalse(hami.reserve(on(claim("t10", 1, 0, 100), a, 0)).reserved());
    }

    @Test
    void multiGpuReservationIsAllOrNothing() {
        assertTrue(ledger.reserve(on(claim("big", 14, 0, 100), b, 3)).reserved());
        Claim four = Claim.builder("four").gpus(4).memoryGiB(4).compute(10, 50).build();
        ReserveResult r = ledger.reserve(on(four, b, 0, 1, 2, 3));
        assertFalse(r.reserved());
        for (int i = 0; i < 3; i++) {
            assertEquals(0, ledger.node("b").orElseThrow().gpu(i).tenants(), "nothing reserved on GPU " + i);
        }
        assertTrue(ledger.placement("four").isEmpty());
        // and the id is free again
        assertTrue(ledger.reserve(on(Claim.builder("four").gpus(3).memoryGiB(4).compute(10, 50).build(), b, 0, 1, 2)).reserved());
    }

    @Test
    void releaseIsIdempotentAndRestoresCapacity() {
        var before = ledger.node("a").orElseThrow();
        Placement p = on(claim("t1", 4, 20, 50), a, 0);
        ledger.reserve(p);
        assertEquals(p, ledger.release("t1").orElseThrow());
        assertTrue(ledger.release("t1").isEmpty());
        assertTrue(ledger.release("never").isEmpty());
        assertEquals(before, ledger.node("a").orElseThrow());
        assertEquals(0, ledger.size());
    }

    @Test
    void refusesDuplicateTenantId() {
        assertTrue(ledger.reserve(on(claim("t1", 1, 0, 100), a, 0)).reserved());
        ReserveResult r = ledger.reserve(on(claim("t1", 1, 0, 100), b, 0));
        assertEquals(Set.of(ReasonCode.DUPLICATE_TENANT), codes(r));
        assertEquals(0, ledger.node("b").orElseThrow().gpu(0).tenants());
    }

    @Test
    void refusesUnknownNodeAndGpu() {
        Node ghost = t4Node("ghost", 1);
        assertEquals(Set.of(ReasonCode.UNKNOWN_TARGET), codes(ledger.reserve(on(claim("t", 1, 0, 100), ghost, 0))));
        Placement wrongGpu = new Placement(claim("u", 1, 0, 100), "a", List.of(new Slice("b-g0", GIB, 0, 100)));
        assertEquals(Set.of(ReasonCode.UNKNOWN_TARGET), codes(ledger.reserve(wrongGpu)));
        assertEquals(0, ledger.size());
    }

    @Test
    void refusesSlicesOffTheGranularityGrid() {
        Placement p = new Placement(Claim.builder("odd").memoryBytes(GIB + 1).compute(0, 100).build(), "a",
                List.of(new Slice("a-g0", GIB + 1, 0, 100)));
        assertEquals(Set.of(ReasonCode.GRANULARITY), codes(ledger.reserve(p)));
        Placement c = on(Claim.builder("c").memoryGiB(1).compute(7, 100).build(), a, 0);
        assertEquals(Set.of(ReasonCode.GRANULARITY), codes(ledger.reserve(c)));
        assertTrue(Ledger.create(GranularityRules.hami(), List.of(a)).reserve(c).reserved(), "1% units under HAMi");
    }

    @Test
    void exclusiveClaimTakesAWholeEmptyGpu() {
        Claim ex = Claim.builder("ex").exclusive().build();
        assertTrue(ledger.reserve(on(claim("small", 1, 0, 100), a, 0)).reserved());
        assertEquals(Set.of(ReasonCode.EXCLUSIVE, ReasonCode.INSUFFICIENT_MEMORY), codes(ledger.reserve(on(ex, a, 0))));
        assertTrue(ledger.reserve(on(ex, a, 1)).reserved());
        assertEquals(16 * GIB, ledger.node("a").orElseThrow().gpu(1).memoryUsed());
        assertTrue(codes(ledger.reserve(on(claim("late", 1, 0, 100), a, 1))).contains(ReasonCode.EXCLUSIVE));
        // an exclusive slice smaller than the device is refused
        Placement partial = new Placement(Claim.builder("ex2").exclusive().build(), "b",
                List.of(new Slice("b-g0", 8 * GIB, 100, 100)));
        assertTrue(codes(ledger.reserve(partial)).contains(ReasonCode.EXCLUSIVE));
    }

    @Test
    void gpuKeptForOneClassRefusesTheOther() {
        Node kept = Node.builder("kept").defaultLink(new GpuLink.Pcie(TopologyLevel.SYSTEM))
                .gpu(GpuDevice.builder("k0").index(0).model("Tesla T4").memoryGiB(16).reservedFor(PriorityClass.ONLINE).build())
                .build();
        Ledger l = Ledger.create(List.of(kept));
        Claim off = Claim.builder("off").memoryGiB(1).priority(PriorityClass.OFFLINE).build();
        Claim on = Claim.builder("on").memoryGiB(1).priority(PriorityClass.ONLINE).build();
        assertEquals(Set.of(ReasonCode.RESERVED_FOR_OTHER_CLASS), codes(l.reserve(on(off, kept, 0))));
        assertTrue(l.reserve(on(on, kept, 0)).reserved());
    }

    @Test
    void selectorsAreEnforced() {
        Claim notT4 = Claim.builder("x").memoryGiB(1).selectors(Selectors.builder().excludeModel("Tesla T4").build()).build();
        Claim onlyG1 = Claim.builder("y").memoryGiB(1).selectors(Selectors.builder().includeUuid("a-g1").build()).build();
        Claim pool = Claim.builder("z").memoryGiB(1).selectors(Selectors.builder().nodeLabel("pool", "h100").build()).build();
        assertEquals(Set.of(ReasonCode.MODEL_NOT_SELECTED), codes(ledger.reserve(on(notT4, a, 0))));
        assertEquals(Set.of(ReasonCode.UUID_NOT_SELECTED), codes(ledger.reserve(on(onlyG1, a, 0))));
        assertTrue(ledger.reserve(on(onlyG1, a, 1)).reserved());
        assertEquals(Set.of(ReasonCode.NODE_LABELS_MISMATCH), codes(ledger.reserve(on(pool, a, 0))));
    }

    @Test
    void antiAffinityNeverSharesAGpu() {
        Claim r1 = Claim.builder("r1").memoryGiB(1).locality(Locality.none().withAntiAffinity("replicas")).build();
        Claim r2 = Claim.builder("r2").memoryGiB(1).locality(Locality.none().withAntiAffinity("replicas")).build();
        assertTrue(ledger.reserve(on(r1, a, 0)).reserved());
        assertEquals(Set.of(ReasonCode.ANTI_AFFINITY), codes(ledger.reserve(on(r2, a, 0))));
        assertTrue(ledger.reserve(on(r2, a, 1)).reserved());
    }

    @Test
    void exclusionDedicatesAGpuToOneLabel() {
        Claim teamA = Claim.builder("a1").memoryGiB(1).locality(Locality.none().withExclusion("team-a")).build();
        Claim teamA2 = Claim.builder("a2").memoryGiB(1).locality(Locality.none().withExclusion("team-a")).build();
        Claim teamB = Claim.builder("b1").memoryGiB(1).locality(Locality.none().withExclusion("team-b")).build();
        Claim plain = Claim.builder("p1").memoryGiB(1).build();
        assertTrue(ledger.reserve(on(teamA, a, 0)).reserved());
        assertTrue(ledger.reserve(on(teamA2, a, 0)).reserved());
        assertEquals(Set.of(ReasonCode.EXCLUSION), codes(ledger.reserve(on(teamB, a, 0))));
        assertEquals(Set.of(ReasonCode.EXCLUSION), codes(ledger.reserve(on(plain, a, 0))));
        assertTrue(ledger.reserve(on(plain, a, 1)).reserved());
        assertEquals(Set.of(ReasonCode.EXCLUSION), codes(ledger.reserve(on(teamB, a, 1))));
    }

    @Test
    void affinityKeepsALabelOnOneGpuSet() {
        Claim f1 = Claim.builder("f1").memoryGiB(1).locality(Locality.none().withAffinity("pipe")).build();
        Claim f2 = Claim.builder("f2").memoryGiB(1).locality(Locality.none().withAffinity("pipe")).build();
        assertTrue(ledger.reserve(on(f1, a, 1)).reserved());
        assertEquals(Set.of(ReasonCode.AFFINITY), codes(ledger.reserve(on(f2, a, 0))));
        assertEquals(Set.of(ReasonCode.AFFINITY), codes(ledger.reserve(on(f2, b, 1))));
        assertTrue(ledger.reserve(on(f2, a, 1)).reserved());
        // the group dissolves when its last member leaves
        ledger.release("f1");
        ledger.release("f2");
        assertTrue(ledger.reserve(on(f1, b, 2)).reserved());
    }

    @Test
    void unhealthyGpuTakesNoTenantsAndReportsDisplaced() {
        Placement p = on(claim("t1", 4, 0, 100), a, 0);
        ledger.reserve(p);
        List<Placement> displaced = ledger.setHealth("a-g0", Health.UNHEALTHY);
        assertEquals(List.of(p), displaced);
        assertEquals(List.of(p), ledger.displaced());
        assertEquals(p, ledger.placement("t1").orElseThrow(), "still reserved until the scheduler moves it");
        assertEquals(Set.of(ReasonCode.UNHEALTHY), codes(ledger.reserve(on(claim("t2", 1, 0, 100), a, 0))));
        ledger.release("t1");
        assertTrue(ledger.displaced().isEmpty());
        assertEquals(List.of(), ledger.setHealth("a-g0", Health.HEALTHY));
        assertTrue(ledger.reserve(on(claim("t2", 1, 0, 100), a, 0)).reserved());
        assertThrows(InvalidValueException.class, () -> ledger.setHealth("nope", Health.UNHEALTHY));
    }

    @Test
    void nodesCanBeAddedAndRemoved() {
        Node c = t4Node("c", 1);
        ledger.addNode(c);
        assertTrue(ledger.reserve(on(claim("t1", 1, 0, 100), c, 0)).reserved());
        LedgerStateException dup = assertThrows(LedgerStateException.class, () -> ledger.addNode(c));
        assertTrue(dup.getMessage().contains("node already in the ledger"), dup.getMessage());
        Node stealsGpu = Node.builder("d").defaultLink(new GpuLink.NvLink(1)).gpu(c.gpus().get(0)).build();
        assertThrows(LedgerStateException.class, () -> ledger.addNode(stealsGpu));
        List<Placement> displaced = ledger.removeNode("c");
        assertEquals(List.of("t1"), displaced.stream().map(Placement::tenantId).toList());
        assertTrue(ledger.placement("t1").isEmpty());
        assertTrue(ledger.node("c").isEmpty());
        assertEquals(List.of(), ledger.removeNode("c"));
        assertEquals(Set.of(ReasonCode.UNKNOWN_TARGET), codes(ledger.reserve(on(claim("t2", 1, 0, 100), c, 0))));
        ledger.addNode(c);
        assertTrue(ledger.reserve(on(claim("t2", 1, 0, 100), c, 0)).reserved());
    }

    @Test
    void nullsAreRefusedWithTheirName() {
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> ledger.reserve(null));
        assertEquals("placement", e.field());
        assertEquals("tenantId", assertThrows(InvalidValueException.class, () -> ledger.release(null)).field());
    }
}
