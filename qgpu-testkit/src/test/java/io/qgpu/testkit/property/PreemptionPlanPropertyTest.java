package io.qgpu.testkit.property;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.PreemptionPlan;
import io.qgpu.api.PreemptionResult;
import io.qgpu.api.PriorityClass;
import io.qgpu.json.Inventory;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.core.placement.PreemptionPlanner;
import io.qgpu.testkit.invariants.PlacementInvariants;
import io.qgpu.testkit.machines.Machines;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Preemption plans, as a property over generated clusters (the testkit's seeded, shrinking harness):
 * one to three small nodes, most declaring CPU and host memory, filled by up to 24 claims of both
 * classes and priorities 0..2 within the class (some host-only, some asking for CPU and host memory,
 * some with affinity, anti-affinity and exclusion labels, so that a label is often bound on another
 * node than the one a plan tries), then one more claim planned and, when a plan is proposed,
 * committed. Nothing else runs, so a proposed plan must commit. Checked: every victim ranks
 * strictly below the claim and is reserved exactly as planned; the commit is never stale; after it
 * the claim is reserved, the victims are not, and every ledger invariant holds (the testkit's
 * independent {@link PlacementInvariants} over the ledger's nodes and reservations); and a claim
 * answered {@code Impossible} does not fit without evictions either.
 *
 * <p>Shown to catch the copy that rebuilt tenants from their GPU holdings only (the removed
 * {@code ScratchCluster}, which dropped host resources, host-only tenants and affinity labels bound
 * on other nodes): against it {@link #aPlanEvictsOnlyLowerRanksAndItsCommitKeepsEveryInvariant}
 * failed with a {@code Stale} commit ({@code INSUFFICIENT_CPU}, {@code INSUFFICIENT_HOST_MEMORY} or
 * {@code AFFINITY}: the plan was made on a copy with more room than the ledger).
 *
 * <p>Shown to reject a broken planner: {@link #offByOne} plans as if the claim ranked one higher
 * within its class (a {@code >=} for {@code >} bug), so it also evicts tenants of equal rank; the
 * same property, from a fixed seed, falsifies it and shrinks the case
 * ({@link #theOffByOnePlannerIsRejected}).
 */
class PreemptionPlanPropertyTest {

    /** One generated case: a cluster, the claims that fill it (placed in order), and the claim to plan for. */
    record Case(Inventory inventory, List<Claim> background, Claim incoming) {
    }

    interface Planner {
        PreemptionPlan plan(PreemptionPlanner real, Claim claim);
    }

    static PreemptionPlan real(PreemptionPlanner planner, Claim claim) {
        return planner.plan(claim);
    }

    /** Broken on purpose: treats equal rank as lower. */
    static PreemptionPlan offByOne(PreemptionPlanner planner, Claim claim) {
        return planner.plan(claim.toBuilder().priorityWithinClass(claim.priorityWithinClass() + 1).build());
    }

    static Gen<Case> cases() {
        InventoryOptions inv = InventoryOptions.defaults().withMachines(List.of(Machines.GN7_2XLARGE32, Machines.PCIE_4X_T4))
                .withNodes(1, 3).withLabels(false).withUnhealthy(false).withHost(true);
        ClaimOptions opts = ClaimOptions.defaults().withMaxGpus(2).withLocality(true).withSelectors(false)
                .withMaxMemoryBytes(16 * GpuDevice.GIB).withHost(true);
        Gen<Claim> ranked = Gens.zip(QgpuGens.claims(opts), Gens.ints(0, 2),
                (c, p) -> c.toBuilder().priorityWithinClass(p).build());
        return QgpuGens.inventories(inv).flatMap(i -> Gens.zip(QgpuGens.claimLists(ranked, 0, 24), ranked,
                (bg, in) -> new Case(i, bg, in.toBuilder().tenantId("incoming").build())));
    }

    private final AtomicInteger withVictims = new AtomicInteger();
    private final AtomicInteger hostOnlyVictims = new AtomicInteger();
    private final AtomicInteger affinityPlans = new AtomicInteger();

    void check(Planner planner, Case c) {
        Ledger l = Ledger.create(c.inventory().rules(), c.inventory().nodes());
        PlacementEngine engine = PlacementEngine.create(l);
        c.background().forEach(engine::place);
        PreemptionPlanner real = new PreemptionPlanner(engine);
        PreemptionPlan planned = planner.plan(real, c.incoming());
        if (!(planned instanceof PreemptionPlan.Proposed plan)) {
            PlacementResult now = engine.place(c.incoming());
            assertInstanceOf(PlacementResult.Unschedulable.class, now, () -> "impossible, yet it fits now: " + planned);
            return;
        }
        for (Placement v : plan.victims()) {
            assertTrue(c.incoming().outranks(v.claim()), "victim " + v.claim() + " does not rank below " + c.incoming());
            assertEquals(v, l.placement(v.tenantId()).orElseThrow(), "victim reserved as planned");
        }
        for (Placement v : plan.victims()) {
            if (v.claim().hostOnly()) {
                hostOnlyVictims.incrementAndGet();
            }
        }
        if (c.incoming().locality().affinity().isPresent()) {
            affinityPlans.incrementAndGet();
        }
        PreemptionResult r = real.commit(plan);
        PreemptionResult.Committed done = assertInstanceOf(PreemptionResult.Committed.class, r, r.toString());
        assertEquals(plan.placement(), l.placement(c.incoming().tenantId()).orElseThrow());
        for (Placement v : plan.victims()) {
            assertTrue(l.placement(v.tenantId()).isEmpty(), "victim " + v.tenantId() + " released");
        }
        assertEquals(plan.victims(), done.evicted());
        PlacementInvariants.assertHolds(c.inventory().rules(), l.nodes().stream().map(NodeState::node).toList(),
                l.placements());
        if (!plan.victims().isEmpty()) {
            withVictims.incrementAndGet();
        }
    }

    @Test
    void aPlanEvictsOnlyLowerRanksAndItsCommitKeepsEveryInvariant() {
        Property.forAll(cases()).seed(31).tries(400).verify(c -> check(PreemptionPlanPropertyTest::real, c));
        // not vacuous: from seed 31, 99 plans with victims, 9 host-only victims, 33 plans for a claim
        // with an affinity label
        assertTrue(withVictims.get() >= 30, "cases with victims: " + withVictims.get());
        assertTrue(hostOnlyVictims.get() >= 5, "host-only victims: " + hostOnlyVictims.get());
        assertTrue(affinityPlans.get() >= 10, "plans with an affinity label: " + affinityPlans.get());
    }

    @Test
    void theOffByOnePlannerIsRejected() {
        PropertyResult<Case> r = Property.forAll(cases()).seed(13).tries(300)
                .runVerify(c -> check(PreemptionPlanPropertyTest::offByOne, c));
        PropertyResult.Falsified<Case> f = assertInstanceOf(PropertyResult.Falsified.class, r);
        assertTrue(f.failure().getMessage().contains("does not rank below"), f.message());
        Case shrunk = f.shrunk();
        assertTrue(shrunk.background().size() <= f.original().background().size());
    }

    @Test
    void incomingIsOftenOnline() {
        // the generator gives both classes to the planned claim
        long online = cases().samples(7, 200).stream().filter(c -> c.incoming().priority() == PriorityClass.ONLINE).count();
        assertTrue(online > 40 && online < 160, "online: " + online);
    }
}
