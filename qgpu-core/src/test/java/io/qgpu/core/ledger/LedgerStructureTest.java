package io.qgpu.core.ledger;

import io.qgpu.core.internal.NodeFeed;
import io.qgpu.core.internal.LedgerFeeds;
import static io.qgpu.core.ledger.Fixtures.claim;
import static io.qgpu.core.ledger.Fixtures.on;
import static io.qgpu.core.ledger.Fixtures.t4Node;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
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
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Structure and health edges of the facade: what changes the feed, what a refusal names, what a restore keeps. */
class LedgerStructureTest {

    private final Node a = t4Node("a", 2);
    private final Node b = t4Node("b", 1);

    @Test
    void settingAGpuToTheHealthItHasKeepsTheNodeStateAndStillReportsItsTenants() {
        Ledger ledger = Ledger.create(List.of(a));
        Placement p = on(claim("t", 4, 10, 100), a, 1);
        ledger.reserve(p);
        NodeState before = ledger.node("a").orElseThrow();
        assertEquals(List.of(), ledger.setHealth("a-g0", Health.HEALTHY));
        assertSame(before, ledger.node("a").orElseThrow(), "same health: same state");

        assertEquals(List.of(p), ledger.setHealth("a-g1", Health.UNHEALTHY));
        NodeState unhealthy = ledger.node("a").orElseThrow();
        assertEquals(Health.UNHEALTHY, unhealthy.gpu(1).device().health());
        assertEquals(Health.HEALTHY, unhealthy.gpu(0).device().health());
        assertEquals(List.of(p), ledger.setHealth("a-g1", Health.UNHEALTHY), "asked again: still displaced");
        assertSame(unhealthy, ledger.node("a").orElseThrow());
        assertEquals(List.of(), ledger.setHealth("a-g0", Health.UNHEALTHY), "a GPU without tenants displaces nobody");
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> ledger.setHealth("nope", Health.HEALTHY));
        assertEquals("gpuUuid", e.field());
    }

    @Test
    void removingAnUnknownNodeKeepsTheFeedAndAddingOrRemovingAKnownOneReplacesIt() {
        Ledger ledger = Ledger.create(List.of(a));
        NodeFeed feed = LedgerFeeds.of(ledger);
        assertEquals(List.of(), ledger.removeNode("nope"));
        assertSame(feed, LedgerFeeds.of(ledger));
        ledger.addNode(b);
        NodeFeed added = LedgerFeeds.of(ledger);
        assertNotSame(feed, added);
        assertTrue(added.epoch() > feed.epoch());
        assertEquals(ledger.structureEpoch(), added.epoch());
        assertEquals(2, added.size());
        assertEquals("b", added.nodeAt(1).name());
        ledger.removeNode("a");
        assertTrue(LedgerFeeds.of(ledger).epoch() > added.epoch());
        assertEquals(List.of("b"), ledger.nodes().stream().map(NodeState::name).toList());
        assertEquals("b", LedgerFeeds.of(ledger).nodeAt(0).name());
    }

    @Test
    void addingANodeThatClashesNamesEveryClash() {
        Ledger ledger = Ledger.create(List.of(a));
        Node clash = Node.builder("a").defaultLink(new GpuLink.NvLink(1))
                .gpu(GpuDevice.builder("a-g1").index(0).model("Tesla T4").memoryGiB(16).build()).build();
        LedgerStateException e = assertThrows(LedgerStateException.class, () -> ledger.addNode(clash));
        assertEquals(List.of("a", "a-g1"), e.reasons().stream().map(Reason::target).toList());
        assertTrue(e.getMessage().contains("GPU already in the ledger on a"), e.getMessage());
        assertEquals(1, ledger.nodes().size());
    }

    @Test
    void removingANodeDisplacesItsTenantsInIdOrderAndFreesTheirAffinityLabel() {
        Ledger ledger = Ledger.create(List.of(a, b));
        var pair = Locality.none().withAffinity("pair");
        Placement z = on(Claim.builder("z").memoryGiB(2).compute(5, 10).locality(pair).build(), a, 0);
        Placement y = on(claim("y", 2, 5, 10), a, 1);
        Placement x = on(claim("x", 2, 5, 10), b, 0);
        List.of(z, y, x).forEach(p -> assertTrue(ledger.reserve(p).reserved()));
        assertEquals(List.of(y, z), ledger.removeNode("a"));
        assertEquals(List.of(x), ledger.placements());
        Placement elsewhere = on(Claim.builder("w").memoryGiB(2).compute(5, 10).locality(pair).build(), b, 0);
        assertTrue(ledger.reserve(elsewhere).reserved(), "the label's group left with its last member");
    }

    @Test
    void twoNodesWithOneNameAreRefusedByCreateAndBySnapshot() {
        Node unhealthyTwin = Node.builder("a").defaultLink(new GpuLink.NvLink(1))
                .gpu(GpuDevice.builder("twin-g0").index(0).model("Tesla T4").memoryGiB(16).health(Health.UNHEALTHY).build())
                .build();
        LedgerStateException c = assertThrows(LedgerStateException.class, () -> Ledger.create(List.of(a, unhealthyTwin)));
        assertTrue(c.getMessage().startsWith("cannot create the ledger: "), c.getMessage());
        assertEquals(List.of("a"), c.reasons().stream().map(Reason::target).toList());

        LedgerStateException e = assertThrows(LedgerStateException.class,
                () -> Ledger.of(new LedgerSnapshot(GranularityRules.ofDefaults(), List.of(a, unhealthyTwin), List.of())));
        assertEquals(List.of(ReasonCode.UNKNOWN_TARGET), e.reasons().stream().map(Reason::code).toList());
        assertTrue(e.getMessage().contains("duplicate node"), e.getMessage());
    }

    @Test
    void oneGpuOnTwoNodesIsRefusedNamingBoth() {
        Node thief = Node.builder("c").defaultLink(new GpuLink.NvLink(1)).gpu(a.gpus().get(0)).build();
        LedgerStateException e = assertThrows(LedgerStateException.class,
                () -> Ledger.of(new LedgerSnapshot(GranularityRules.ofDefaults(), List.of(a, thief), List.of())));
        assertTrue(e.getMessage().contains("GPU on both a and c"), e.getMessage());
        assertThrows(LedgerStateException.class, () -> Ledger.create(List.of(a, thief)));
    }

    @Test
    void aRestoredUnhealthyGpuKeepsItsTenantsAsDisplaced() {
        Ledger ledger = Ledger.create(List.of(a));
        Placement p = on(claim("t", 4, 10, 100), a, 0);
        ledger.reserve(p);
        ledger.setHealth("a-g0", Health.UNHEALTHY);
        Ledger restored = Ledger.of(ledger.snapshot());
        assertEquals(List.of(p), restored.displaced());
        assertEquals(Health.UNHEALTHY, restored.node("a").orElseThrow().gpu(0).device().health());
        assertEquals(Health.HEALTHY, restored.node("a").orElseThrow().gpu(1).device().health());
    }

    @Test
    void toStringsNameTheirSize() {
        Ledger ledger = Ledger.create(List.of(a, b));
        ledger.reserve(on(claim("t", 4, 10, 100), a, 0));
        assertEquals("Ledger[2 nodes, 1 reservations, rules " + GranularityRules.ofDefaults().name() + "]", ledger.toString());
        NodeFeed feed = LedgerFeeds.of(ledger);
        assertEquals("NodeFeed[epoch " + feed.epoch() + ", 2 nodes, sequence 1]", feed.toString());
        assertEquals(ledger.rules(), feed.rules());
    }

    @Test
    void reconcileAdmitsNewcomersInTenantIdOrderAndReportsTheRest() {
        Ledger ledger = Ledger.create(List.of(a));
        Placement z = on(claim("z", 12, 10, 100), a, 0);
        Placement m = on(claim("m", 12, 10, 100), a, 0);
        ReconcileReport report = ledger.reconcile(List.of(z, m));
        assertEquals(false, report.inSync());
        assertEquals(List.of(m), ledger.placements(), "m sorts first and takes the GPU; z does not fit");
        assertEquals(List.of("z"), report.of(ReconcileReport.Kind.REFUSED).stream().map(ReconcileReport.Difference::tenant).toList());
        assertEquals(List.of("m"), report.of(ReconcileReport.Kind.ADDED).stream().map(ReconcileReport.Difference::tenant).toList());
        assertTrue(ledger.reconcile(List.of(m)).inSync());
    }

    @Test
    void aSnapshotWithAnUnknownNodeOrASplitAffinityGroupIsRefused() {
        Ledger ledger = Ledger.create(List.of(a));
        LedgerSnapshot ghost = new LedgerSnapshot(ledger.rules(), List.of(a), List.of(on(claim("g", 1, 5, 10), b, 0)));
        LedgerStateException e = assertThrows(LedgerStateException.class, () -> ledger.restore(ghost));
        assertTrue(e.getMessage().contains("no such node"), e.getMessage());
        var pair = Locality.none().withAffinity("pair");
        Placement p0 = on(Claim.builder("p0").memoryGiB(1).compute(5, 10).locality(pair).build(), a, 0);
        Placement p1 = on(Claim.builder("p1").memoryGiB(1).compute(5, 10).locality(pair).build(), a, 1);
        LedgerStateException split = assertThrows(LedgerStateException.class,
                () -> ledger.restore(new LedgerSnapshot(ledger.rules(), List.of(a), List.of(p1, p0))));
        assertEquals(List.of(ReasonCode.AFFINITY), split.reasons().stream().map(Reason::code).toList());
        assertTrue(split.getMessage().contains("label pair is bound to a [a-g0]"), split.getMessage());
    }

    @Test
    void aReservationNamesItsTenantAndAPositionOutOfRangeNamesTheRange() {
        Ledger ledger = Ledger.create(List.of(a, b));
        ReserveResult r = ledger.reserve(on(claim("t", 1, 5, 10), a, 0));
        assertEquals("t", r.tenantId());
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> LedgerFeeds.of(ledger).nodeAt(2));
        assertTrue(e.getMessage().contains("must be in 0..1"), e.getMessage());
    }
}
