package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PreemptionPlan;
import io.qgpu.api.PreemptionResult;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.ReasonCode;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.LedgerSnapshot;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PreemptionPlannerTest {

    static Claim c(String id, long gib, PriorityClass p, int within) {
        return Claim.builder(id).memoryGiB(gib).compute(0, 100).priority(p).priorityWithinClass(within).build();
    }

    static PreemptionPlan.Proposed proposed(PreemptionPlan p) {
        return assertInstanceOf(PreemptionPlan.Proposed.class, p, () -> p instanceof PreemptionPlan.Impossible i ? i.summary() : "");
    }

    static Placement reserve(Ledger l, Claim claim, Node n, int gpu) {
        Placement p = Nodes.on(claim, n, gpu);
        assertTrue(l.reserve(p).reserved());
        return p;
    }

    @Test
    void ranksClassFirstThenPriorityWithinClass() {
        Claim online0 = c("a", 1, PriorityClass.ONLINE, 0);
        Claim offline99 = c("b", 1, PriorityClass.OFFLINE, 99);
        Claim offline5 = c("c", 1, PriorityClass.OFFLINE, 5);
        assertTrue(online0.outranks(offline99));
        assertTrue(offline99.outranks(offline5));
        assertTrue(!offline5.outranks(c("d", 1, PriorityClass.OFFLINE, 5)), "equal rank is not above");
        assertTrue(!offline99.outranks(online0));
        assertEquals(0, Claim.builder("x").memoryGiB(1).build().priorityWithinClass());
    }

    @Test
    void evictsTheFewestLowerRankedTenantsThenTheLeastMemory() {
        Node a = Nodes.t4("a", 1);   // 16 GiB
        Node b = Nodes.t4("b", 1);
        Ledger l = Ledger.create(List.of(a, b));
        // a: two small offline tenants (6 + 6); b: one big offline tenant (12)
        reserve(l, c("a1", 6, PriorityClass.OFFLINE, 0), a, 0);
        reserve(l, c("a2", 6, PriorityClass.OFFLINE, 0), a, 0);
        Placement big = reserve(l, c("b1", 12, PriorityClass.OFFLINE, 0), b, 0);
        PreemptionPlanner planner = new PreemptionPlanner(PlacementEngine.create(l));
        // 10 GiB: on a one eviction (6) leaves 10 free; on b one eviction (12) frees 16. Same count: least memory wins
        PreemptionPlan.Proposed p = proposed(planner.plan(c("x", 10, PriorityClass.ONLINE, 0)));
        assertEquals("a", p.placement().nodeName());
        assertEquals(1, p.victims().size());
        assertEquals(ReasonCode.PREEMPTION, p.nodes().get("b").get(0).code());
        assertTrue(p.nodes().get("b").get(0).message().contains("b1"), p.nodes().toString());
        // 14 GiB: a needs both of its tenants, b only one: the fewest victims win over less memory
        PreemptionPlan.Proposed q = proposed(planner.plan(c("y", 14, PriorityClass.ONLINE, 0)));
        assertEquals(List.of(big), q.victims());
    }

    @Test
    void neverEvictsEqualOrHigherRank() {
        Node a = Nodes.t4("a", 1);
        Ledger l = Ledger.create(List.of(a));
        reserve(l, c("peer", 10, PriorityClass.OFFLINE, 3), a, 0);
        reserve(l, c("boss", 4, PriorityClass.ONLINE, 0), a, 0);
        PreemptionPlanner planner = new PreemptionPlanner(PlacementEngine.create(l));
        PreemptionPlan.Impossible i = assertInstanceOf(PreemptionPlan.Impossible.class,
                planner.plan(c("x", 8, PriorityClass.OFFLINE, 3)));
        assertEquals(ReasonCode.PREEMPTION, i.nodes().get("a").get(0).code());
        // one rank higher within the class: the peer may go
        PreemptionPlan.Proposed p = proposed(planner.plan(c("x", 8, PriorityClass.OFFLINE, 4)));
        assertEquals(List.of("peer"), p.victimIds());
    }

    @Test
    void explainsWhatIsMissingWhenEvictingEveryLowerTenantIsNotEnough() {
        Node a = Nodes.t4("a", 1);
        Ledger l = Ledger.create(List.of(a));
        reserve(l, c("low", 4, PriorityClass.OFFLINE, 0), a, 0);
        reserve(l, c("high", 10, PriorityClass.ONLINE, 0), a, 0);
        PreemptionPlan.Impossible i = assertInstanceOf(PreemptionPlan.Impossible.class,
                new PreemptionPlanner(PlacementEngine.create(l)).plan(c("x", 8, PriorityClass.OFFLINE, 9)));
        assertTrue(i.nodes().get("a").stream().anyMatch(r -> r.code() == ReasonCode.INSUFFICIENT_MEMORY), i.summary());
    }

    @Test
    void aClaimThatFitsNeedsNoVictims() {
        Ledger l = Ledger.create(List.of(Nodes.t4("a", 1)));
        PreemptionPlan.Proposed p = proposed(new PreemptionPlanner(PlacementEngine.create(l)).plan(c("x", 8, PriorityClass.OFFLINE, 0)));
        assertEquals(List.of(), p.victims());
        assertEquals(0, l.size(), "planning commits nothing");
    }

    @Test
    void commitReleasesTheVictimsAndReservesTheClaim() {
        Node a = Nodes.t4("a", 1);
        Ledger l = Ledger.create(List.of(a));
        Placement v = reserve(l, c("v", 12, PriorityClass.OFFLINE, 0), a, 0);
        PreemptionPlanner planner = new PreemptionPlanner(PlacementEngine.create(l));
        PreemptionPlan.Proposed p = proposed(planner.plan(c("x", 8, PriorityClass.ONLINE, 0)));
        PreemptionResult.Committed done = assertInstanceOf(PreemptionResult.Committed.class, planner.commit(p));
        assertEquals(List.of(v), done.evicted());
        assertTrue(l.placement("v").isEmpty());
        assertEquals(p.placement(), l.placement("x").orElseThrow());
    }

    @Test
    void aStalePlanChangesNothing() {
        Node a = Nodes.t4("a", 1);
        Ledger l = Ledger.create(List.of(a));
        reserve(l, c("v", 12, PriorityClass.OFFLINE, 0), a, 0);
        PreemptionPlanner planner = new PreemptionPlanner(PlacementEngine.create(l));
        PreemptionPlan.Proposed p = proposed(planner.plan(c("x", 8, PriorityClass.ONLINE, 0)));
        // the victim moved (released and reserved again, now with a higher rank): it must not be evicted
        l.release("v");
        reserve(l, c("v", 12, PriorityClass.ONLINE, 7), a, 0);
        LedgerSnapshot before = l.snapshot();
        PreemptionResult.Stale s = assertInstanceOf(PreemptionResult.Stale.class, planner.commit(p));
        assertTrue(s.reasons().stream().anyMatch(r -> r.code() == ReasonCode.CONFLICT), s.summary());
        assertEquals(before, l.snapshot());
    }

    @Test
    void aRestrictedPlanUsesOnlyTheNodesAndVictimsAllowed() {
        Node a = Nodes.t4("a", 1);
        Node b = Nodes.t4("b", 1);
        Ledger l = Ledger.create(List.of(a, b));
        reserve(l, c("a1", 12, PriorityClass.OFFLINE, 0), a, 0);
        reserve(l, c("b1", 7, PriorityClass.OFFLINE, 0), b, 0);
        reserve(l, c("b2", 7, PriorityClass.OFFLINE, 0), b, 0);
        PreemptionPlanner planner = new PreemptionPlanner(PlacementEngine.create(l));
        Claim x = c("x", 10, PriorityClass.ONLINE, 0);
        assertEquals("a", proposed(planner.plan(x)).placement().nodeName(), "unrestricted: one victim on a");
        PreemptionPlan.Proposed onB = proposed(planner.plan(x, Set.of("b"), p -> true));
        assertEquals(Set.of("b1", "b2"), Set.copyOf(onB.victimIds()));
        PreemptionPlan.Impossible notB2 = assertInstanceOf(PreemptionPlan.Impossible.class,
                planner.plan(x, Set.of("b"), p -> !p.tenantId().equals("b2")));
        assertEquals(Set.of("b"), notB2.nodes().keySet());
        assertEquals(ReasonCode.UNKNOWN_TARGET, ((PreemptionPlan.Impossible) planner.plan(x, Set.of("z"), p -> true))
                .general().get(0).code());
    }

    @Test
    void maxVictimsBoundsAPlan() {
        Node b = Nodes.t4("b", 1);
        Ledger l = Ledger.create(List.of(b));
        reserve(l, c("b1", 7, PriorityClass.OFFLINE, 0), b, 0);
        reserve(l, c("b2", 7, PriorityClass.OFFLINE, 0), b, 0);
        Claim x = c("x", 10, PriorityClass.ONLINE, 0);
        PreemptionPlan.Impossible i = assertInstanceOf(PreemptionPlan.Impossible.class,
                new PreemptionPlanner(PlacementEngine.create(l), 1, 100).plan(x));
        assertTrue(i.summary().contains("at most 1 of the 2"), i.summary());
        assertEquals(2, proposed(new PreemptionPlanner(PlacementEngine.create(l), 2, 100).plan(x)).victims().size());
    }

    @Test
    void generalReasonsAndLimits() {
        Node a = Nodes.t4("a", 1);
        Ledger l = Ledger.create(List.of(a));
        reserve(l, c("v", 12, PriorityClass.OFFLINE, 0), a, 0);
        PreemptionPlanner planner = new PreemptionPlanner(PlacementEngine.create(l));
        PreemptionPlan.Impossible dup = assertInstanceOf(PreemptionPlan.Impossible.class,
                planner.plan(c("v", 1, PriorityClass.ONLINE, 0)));
        assertEquals(ReasonCode.DUPLICATE_TENANT, dup.general().get(0).code());
        assertThrows(InvalidValueException.class, () -> new PreemptionPlanner(PlacementEngine.create(l), 0, 10));
        assertThrows(InvalidValueException.class, () -> new PreemptionPlanner(PlacementEngine.create(l), 1, 0));
        assertEquals(Set.of(List.of(1, 2), List.of(1, 3), List.of(2, 3)),
                Set.copyOf(PreemptionPlanner.subsets(List.of(1, 2, 3), 2, 100)));
        assertEquals(2, PreemptionPlanner.subsets(List.of(1, 2, 3), 2, 2).size());
    }
}
