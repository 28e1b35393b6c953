package io.qgpu.core.ledger;

import static io.qgpu.core.ledger.Fixtures.GIB;
import static io.qgpu.core.ledger.Fixtures.on;
import static io.qgpu.core.ledger.Fixtures.t4Node;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.Health;
import io.qgpu.api.HostCapacity;
import io.qgpu.api.HostHolding;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** The ledger reserves host resources (CPU, host memory) with the GPU slices, all or nothing. */
class LedgerHostTest {

    /** Two T4s, 4 CPUs, 8 GiB host memory. */
    private final Node a = Node.builder("a").gpus(t4Node("a", 2).gpus()).defaultLink(t4Node("a", 2).topology().link(0, 1))
            .cpuMillis(4000).hostMemoryGiB(8).build();
    /** Two T4s, host resources not tracked. */
    private final Node u = t4Node("u", 2);
    /** No GPUs, 2 CPUs, host memory not tracked. */
    private final Node cpu = Node.builder("cpu").cpuMillis(2000).build();
    private final Ledger ledger = Ledger.create(List.of(a, u, cpu));

    private static Claim gpuClaim(String id, long cpuMillis, long hostGiB) {
        return Claim.builder(id).memoryGiB(2).compute(10, 50).cpuMillis(cpuMillis).hostMemoryGiB(hostGiB).build();
    }

    private static Placement hostOnly(String id, Node node, long cpuMillis, long hostGiB) {
        return new Placement(Claim.builder(id).hostOnly().cpuMillis(cpuMillis).hostMemoryGiB(hostGiB).build(),
                node.name(), List.of());
    }

    private static List<Reason> refused(ReserveResult r) {
        return ((ReserveResult.Refused) r).reasons();
    }

    @Test
    void reservesHostResourcesWithTheSlicesAndReleasesThem() {
        assertTrue(ledger.reserve(on(gpuClaim("t1", 1500, 3), a, 0)).reserved());
        NodeState s = ledger.node("a").orElseThrow();
        assertEquals(OptionalLong.of(2500), s.cpuMillisFree());
        assertEquals(OptionalLong.of(5 * GIB), s.hostMemoryFree());
        assertEquals(List.of(new HostHolding("t1", 1500, 3 * GIB)), s.host().holdings());
        ledger.release("t1");
        assertEquals(OptionalLong.of(4000), ledger.node("a").orElseThrow().cpuMillisFree());
        assertTrue(ledger.node("a").orElseThrow().host().isEmpty());
    }

    @Test
    void refusesCpuAndHostMemoryShortfallsWithTheirOwnCodesAndNothingIsReserved() {
        assertTrue(ledger.reserve(on(gpuClaim("t1", 3000, 6), a, 0)).reserved());
        List<Reason> why = refused(ledger.reserve(on(gpuClaim("t2", 1500, 3), a, 1)));
        assertEquals(List.of(new Reason(ReasonCode.INSUFFICIENT_CPU, "a", 1500, 1000, "CPU on the node"),
                new Reason(ReasonCode.INSUFFICIENT_HOST_MEMORY, "a", 3 * GIB, 2 * GIB, "host memory on the node")), why);
        // all or nothing: the GPU slice that would have fitted is not taken either
        assertTrue(ledger.node("a").orElseThrow().gpu(1).isEmpty());
        assertFalse(ledger.placement("t2").isPresent());
        // exactly the free amount fits
        assertTrue(ledger.reserve(on(gpuClaim("t3", 1000, 2), a, 1)).reserved());
        assertEquals(OptionalLong.of(0), ledger.node("a").orElseThrow().cpuMillisFree());
    }

    @Test
    void aNodeThatDeclaresNoHostCapacityTracksButNeverRefuses() {
        assertTrue(ledger.reserve(on(gpuClaim("big", 1_000_000, 4096), u, 0)).reserved());
        NodeState s = ledger.node("u").orElseThrow();
        assertEquals(OptionalLong.empty(), s.cpuMillisFree());
        assertEquals(1_000_000, s.host().cpuMillisUsed());
        // on "cpu" only CPU is tracked: any host memory fits, CPU does not
        assertTrue(ledger.reserve(hostOnly("m", cpu, 0, 1000)).reserved());
        assertEquals(ReasonCode.INSUFFICIENT_CPU, refused(ledger.reserve(hostOnly("c", cpu, 2001, 0))).get(0).code());
    }

    @Test
    void aDeclaredZeroRefusesAnyRequest() {
        Node zero = Node.builder("z").host(HostCapacity.of(0, 0)).build();
        Ledger l = Ledger.create(List.of(zero));
        assertEquals(ReasonCode.INSUFFICIENT_CPU, refused(l.reserve(hostOnly("c", zero, 1, 0))).get(0).code());
        assertEquals(ReasonCode.INSUFFICIENT_HOST_MEMORY,
                refused(l.reserve(new Placement(Claim.builder("m").hostOnly().hostMemoryBytes(1).build(), "z", List.of())))
                        .get(0).code());
    }

    @Test
    void hostOnlyClaimsLandOnNodesWithAndWithoutGpus() {
        assertTrue(ledger.reserve(hostOnly("h1", cpu, 1500, 1)).reserved());
        assertTrue(ledger.reserve(hostOnly("h2", a, 1000, 1)).reserved());
        assertEquals(ReasonCode.INSUFFICIENT_CPU, refused(ledger.reserve(hostOnly("h3", cpu, 600, 0))).get(0).code());
        assertEquals(OptionalLong.of(3000), ledger.node("a").orElseThrow().cpuMillisFree());
        assertTrue(ledger.node("a").orElseThrow().gpus().stream().allMatch(g -> g.isEmpty()));
        assertEquals(ReasonCode.DUPLICATE_TENANT, refused(ledger.reserve(hostOnly("h1", a, 1, 0))).get(0).code());
        assertEquals(hostOnly("h1", cpu, 1500, 1), ledger.release("h1").orElseThrow());
        assertEquals(OptionalLong.of(2000), ledger.node("cpu").orElseThrow().cpuMillisFree());
    }

    @Test
    void healthChangesKeepHostReservationsAndRemovingANodeDisplacesHostOnlyTenants() {
        assertTrue(ledger.reserve(on(gpuClaim("t1", 1000, 1), a, 0)).reserved());
        assertTrue(ledger.reserve(hostOnly("h", a, 500, 0)).reserved());
        ledger.setHealth("a-g0", Health.UNHEALTHY);
        assertEquals(OptionalLong.of(2500), ledger.node("a").orElseThrow().cpuMillisFree());
        assertEquals(List.of("h", "t1"), ledger.removeNode("a").stream().map(Placement::tenantId).toList());
        assertTrue(ledger.placement("h").isEmpty());
    }

    @Test
    void snapshotsCarryHostResourcesAndAnOversubscribedOneIsRefused() {
        assertTrue(ledger.reserve(on(gpuClaim("t1", 1000, 2), a, 0)).reserved());
        assertTrue(ledger.reserve(hostOnly("h", cpu, 2000, 0)).reserved());
        LedgerSnapshot snap = ledger.snapshot();
        Ledger copy = Ledger.of(snap);
        assertEquals(snap, copy.snapshot());
        assertEquals(ledger.node("a").orElseThrow().host(), copy.node("a").orElseThrow().host());
        // one more CPU-only tenant on the full "cpu" node makes the snapshot oversubscribed
        List<Placement> more = new java.util.ArrayList<>(snap.placements());
        more.add(hostOnly("h2", cpu, 1, 0));
        LedgerStateException e = assertThrows(LedgerStateException.class,
                () -> copy.restore(new LedgerSnapshot(snap.rules(), snap.nodes(), more)));
        assertTrue(e.reasons().stream().anyMatch(r -> r.code() == ReasonCode.INSUFFICIENT_CPU), e.getMessage());
        assertEquals(snap, copy.snapshot());
    }
}
