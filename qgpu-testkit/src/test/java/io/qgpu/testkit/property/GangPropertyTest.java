package io.qgpu.testkit.property;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.Gang;
import io.qgpu.api.GangResult;
import io.qgpu.api.GangScope;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.ReasonCode;
import io.qgpu.json.Inventory;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.LedgerSnapshot;
import io.qgpu.core.placement.GangPlacer;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.testkit.invariants.PlacementInvariants;
import io.qgpu.testkit.machines.Machines;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Gangs, as a property over generated clusters (the testkit's seeded, shrinking harness): one to
 * three small nodes, most declaring CPU and host memory, filled by up to 16 claims of both classes
 * (some host-only, some asking for CPU and host memory, some with affinity, anti-affinity and
 * exclusion labels), then a gang of two or three such members placed anywhere, on one node, or
 * within one {@code pool} label value. Nothing else runs, so the placer has no race to lose:
 * checked that it never answers {@code CONFLICT}; that a placed gang is committed exactly as
 * answered, inside its scope, with every ledger invariant holding; and that a refused gang changes
 * nothing.
 *
 * <p>Shown to catch the copy that rebuilt tenants from their GPU holdings only (the removed
 * {@code ScratchCluster}, which dropped host resources, host-only tenants and the affinity labels
 * bound on nodes outside the domain tried): against it this property, from its fixed seed, failed
 * with a {@code CONFLICT} answer ("the ledger refused the gang's commit 8 times"), e.g.
 * {@code INSUFFICIENT_CPU} on a node whose CPU a background tenant held.
 */
class GangPropertyTest {

    /** One generated case: a cluster, the claims that fill it (placed in order), and the gang. */
    record Case(Inventory inventory, List<Claim> background, Gang gang) {
    }

    static final List<GangScope> SCOPES = List.of(GangScope.anywhere(), GangScope.sameNode(),
            GangScope.sameLabel(QgpuGens.POOL_LABEL));

    static Gen<Case> cases() {
        InventoryOptions inv = InventoryOptions.defaults().withMachines(List.of(Machines.GN7_2XLARGE32, Machines.PCIE_4X_T4))
                .withNodes(1, 3).withLabels(true).withUnhealthy(false).withHost(true);
        ClaimOptions opts = ClaimOptions.defaults().withMaxGpus(2).withLocality(true).withSelectors(false)
                .withMaxMemoryBytes(16 * GpuDevice.GIB).withHost(true);
        Gen<Claim> claims = QgpuGens.claims(opts);
        Gen<Gang> gangs = Gens.zip(Gens.lists(claims, 2, 3), Gens.elements(SCOPES), (ms, scope) -> {
            Gang.Builder b = Gang.builder("gang").together(scope);
            for (int i = 0; i < ms.size(); i++) {
                b.member(ms.get(i).toBuilder().tenantId("m" + i).build());
            }
            return b.build();
        });
        return QgpuGens.inventories(inv).flatMap(i -> Gens.zip(QgpuGens.claimLists(claims, 0, 16), gangs,
                (bg, g) -> new Case(i, bg, g)));
    }

    private final AtomicInteger placedGangs = new AtomicInteger();

    void check(Case c) {
        Ledger l = Ledger.create(c.inventory().rules(), c.inventory().nodes());
        PlacementEngine engine = PlacementEngine.create(l);
        c.background().forEach(engine::place);
        LedgerSnapshot before = l.snapshot();
        GangResult r = new GangPlacer(engine).place(c.gang());
        if (r instanceof GangResult.Unschedulable u) {
            assertTrue(u.general().stream().noneMatch(x -> x.code() == ReasonCode.CONFLICT),
                    "nothing else runs, yet: " + u.summary());
            assertEquals(before, l.snapshot(), "a refused gang changes nothing");
            return;
        }
        GangResult.Placed p = (GangResult.Placed) r;
        placedGangs.incrementAndGet();
        assertEquals(c.gang().tenantIds(), p.placements().stream().map(Placement::tenantId).toList());
        for (Placement x : p.placements()) {
            assertEquals(x, l.placement(x.tenantId()).orElseThrow(), "member committed as answered");
        }
        Set<String> nodes = p.placements().stream().map(Placement::nodeName).collect(Collectors.toSet());
        if (c.gang().scope() instanceof GangScope.SameNode) {
            assertEquals(1, nodes.size(), "same node: " + nodes);
        } else if (c.gang().scope() instanceof GangScope.SameLabel s) {
            Map<String, String> value = l.nodes().stream().collect(Collectors.toMap(NodeState::name,
                    n -> n.node().labels().getOrDefault(s.labelKey(), "")));
            Set<String> values = nodes.stream().map(value::get).collect(Collectors.toSet());
            assertEquals(1, values.size(), "same label: " + values);
            assertNotEquals(Set.of(""), values);
        }
        List<Placement> all = new ArrayList<>(l.placements());
        PlacementInvariants.assertHolds(c.inventory().rules(), l.nodes().stream().map(NodeState::node).toList(), all);
    }

    @Test
    void aGangIsNeverRefusedWithConflictWithoutARaceAndCommitsWithinItsScope() {
        Property.forAll(cases()).seed(31).tries(400).verify(this::check);
        // not vacuous: from seed 31, 74 of the 400 gangs are placed (the others refused without CONFLICT)
        assertTrue(placedGangs.get() >= 50, "gangs placed: " + placedGangs.get());
    }
}
