package io.qgpu.core.placement;

import io.qgpu.core.internal.LedgerFeeds;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.CauseCount;
import io.qgpu.api.Claim;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Locality;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Slice;
import io.qgpu.core.ledger.Ledger;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Refusals from the per-node summaries: causes counted over every node, the full detail of a bounded
 * number of nodes, every node's detail on request identical to explain's, and {@code check}'s one
 * reason per node agreeing with the counts.
 */
class FastRefusalTest {

    private static final long GIB = Nodes.GIB;

    /**
     * n0..n5: 2 x T4 whose GPUs each hold a 14 GiB tenant (2 GiB free); n6..n9: one H100 each. A
     * 2-GPU claim of 8 GiB fits nowhere: six nodes for memory, four for too few GPUs.
     */
    private static Ledger cluster() {
        List<Node> nodes = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            nodes.add(Nodes.t4("n" + i, 2));
        }
        for (int i = 6; i < 10; i++) {
            nodes.add(Nodes.nvswitch("n" + i, 1));
        }
        Ledger ledger = Ledger.create(GranularityRules.ofDefaults(), nodes);
        for (int i = 0; i < 6; i++) {
            for (int g = 0; g < 2; g++) {
                hold(ledger, "fill-" + i + "-" + g, "n" + i, "n" + i + "-g" + g, 14, 10);
            }
        }
        return ledger;
    }

    private static void hold(Ledger ledger, String tenant, String node, String gpu, long gib, int request) {
        Claim c = Claim.builder(tenant).memoryGiB(gib).compute(request, 100).build();
        assertInstanceOf(io.qgpu.core.ledger.ReserveResult.Reserved.class,
                ledger.reserve(new Placement(c, node, List.of(new Slice(gpu, gib * GIB, request, 100)))));
    }

    private static Claim twoGpus() {
        return Claim.builder("big").gpus(2).memoryGiB(8).compute(10, 100).priority(PriorityClass.ONLINE).build();
    }

    @Test
    void causesAreCountedOverEveryNodeAndTheDetailIsBounded() {
        PlacementEngine e = PlacementEngine.builder(cluster()).refusalDetail(3).build();
        PlacementResult.Unschedulable u = assertInstanceOf(PlacementResult.Unschedulable.class, e.place(twoGpus()));
        assertEquals(List.of(new CauseCount(ReasonCode.INSUFFICIENT_MEMORY, 6), new CauseCount(ReasonCode.NOT_ENOUGH_GPUS, 4)),
                u.causes());
        assertEquals(10, u.nodeCount());
        assertTrue(u.summary().startsWith("big unschedulable: 0/10 nodes are available: 6 insufficient GPU memory, "
                + "4 too few usable GPUs"), u.summary());
        // the first node of each cause, then the first refused nodes in cluster order
        assertEquals(Set.of("n0", "n6", "n1"), u.nodes().keySet());
        assertFalse(u.complete());
        // each detailed node's reasons are the full ones explain gives
        PlacementExplanation ex = e.explain(twoGpus());
        u.nodes().forEach((name, r) -> assertEquals(ex.rejected().get(name), r));

        PlacementResult.Unschedulable none = assertInstanceOf(PlacementResult.Unschedulable.class,
                PlacementEngine.builder(e.ledger()).refusalDetail(0).build().place(twoGpus()));
        assertTrue(none.nodes().isEmpty());
        assertEquals(u.causes(), none.causes());
    }

    @Test
    void everyNodesDetailOnRequestIsExplainsAndTheCountsAreTheSame() {
        Ledger ledger = cluster();
        PlacementEngine all = PlacementEngine.builder(ledger).refusalDetail(PlacementEngine.ALL_NODES).build();
        PlacementResult.Unschedulable u = assertInstanceOf(PlacementResult.Unschedulable.class, all.place(twoGpus()));
        assertTrue(u.complete());
        assertEquals(all.explain(twoGpus()).rejected(), u.nodes());
        PlacementResult.Unschedulable bounded = assertInstanceOf(PlacementResult.Unschedulable.class,
                PlacementEngine.create(ledger).place(twoGpus()));
        assertEquals(u.causes(), bounded.causes());
        assertEquals(PlacementEngine.DEFAULT_REFUSAL_DETAIL, bounded.nodes().size());
    }

    @Test
    void checkGivesOneReasonPerNodeFromTheSameSummaries() {
        PlacementEngine e = PlacementEngine.create(cluster());
        List<NodeFit> fits = e.check(twoGpus(), List.of("n0", "n7", "nowhere"));
        assertEquals(ReasonCode.INSUFFICIENT_MEMORY, ((NodeFit.Refused) fits.get(0)).reason().code());
        assertEquals("n0: INSUFFICIENT_MEMORY requested 8 GiB, free 2 GiB (short by 6 GiB) largest free on one GPU with a free tenant slot",
                ((NodeFit.Refused) fits.get(0)).reason().message());
        assertEquals("n7: NOT_ENOUGH_GPUS requested 2 GPUs, available 1 GPU (short by 1 GPU) healthy GPUs open to online claims",
                ((NodeFit.Refused) fits.get(1)).reason().message());
        assertEquals(ReasonCode.UNKNOWN_TARGET, ((NodeFit.Refused) fits.get(2)).reason().code());

        // a claim that fits: the set and total are explain's for the node
        Claim small = Claim.builder("small").memoryGiB(1).compute(5, 100).build();
        PlacementExplanation ex = e.explain(small);
        for (PlacementExplanation.Candidate cd : ex.candidates()) {
            NodeFit.Fits f = assertInstanceOf(NodeFit.Fits.class, e.check(small, List.of(cd.node())).get(0));
            assertEquals(cd.gpus(), f.gpus(), cd.node());
            assertEquals(cd.total(), f.total(), 1e-9, cd.node());
        }
    }

    @Test
    void theScanOverEveryNodesSummaryCountsWhatThePassCounts() {
        // the engine counts from its own pass when no key can lag; RefusalScan (used when one can)
        // must give the same counts and the same first node of each cause
        Ledger ledger = cluster();
        PlacementResult.Unschedulable u = assertInstanceOf(PlacementResult.Unschedulable.class,
                PlacementEngine.builder(ledger).refusalDetail(2).build().place(twoGpus()));
        NodeIndex idx = new NodeIndex(LedgerFeeds.of(ledger));
        NodePass pass = new NodePass(ledger, PlacementConfig.defaults(), new io.qgpu.api.placement.NodeFilter[0],
                new io.qgpu.api.placement.GpuFilter[0], new io.qgpu.api.placement.NodeScorer[0], new double[0],
                new io.qgpu.api.placement.GpuSetScorer[0], new double[0]);
        ClaimShape c = new ClaimShape(twoGpus(), PlacementConfig.defaults(), ledger.rules());
        RefusalScan.Tally t = RefusalScan.scan(c, idx, pass, 2, false);
        assertEquals(null, t.feasible);
        assertEquals(u.causes(), t.causes());
        assertEquals("n0", t.firstOf[ReasonCode.INSUFFICIENT_MEMORY.ordinal()].name());
        assertEquals("n6", t.firstOf[ReasonCode.NOT_ENOUGH_GPUS.ordinal()].name());
        assertEquals(Set.of("n0", "n6"), u.nodes().keySet());
        // a claim that fits: the scan stops at the first node that can take it
        ClaimShape small = new ClaimShape(Claim.builder("s").memoryGiB(1).compute(5, 100).build(), PlacementConfig.defaults(),
                ledger.rules());
        assertEquals("n0", RefusalScan.scan(small, idx, pass, 2, false).feasible.name());
    }

    @Test
    void keysAreTrustedOnlyWhileSettled() {
        // the refusal counts from the keys only while no key can lag behind its node; this pins the
        // predicate: a settled() that ignored undelivered changes or refreshes under way fails here
        // (shown: settled() without its drained-versus-sequence check fails at the first -1 below)
        Ledger ledger = cluster();
        NodeIndex idx = new NodeIndex(LedgerFeeds.of(ledger));
        long token = idx.settled();
        assertTrue(token >= 0, "a fresh index reflects every change");
        assertTrue(idx.stillSettled(token));
        // a change the index has not drained yet: not settled until sync
        hold(ledger, "late", "n7", "n7-g0", 70, 10);
        assertEquals(-1, idx.settled(), "a numbered change not delivered yet");
        idx.sync();
        long after = idx.settled();
        assertTrue(after >= 0);
        // a refresh after the token was given (here: a summary asked for a newer state) ends it
        ledger.release("late");
        idx.summary(7, LedgerFeeds.of(ledger).nodeAt(7));
        assertFalse(idx.stillSettled(after), "a key was written after the token");
    }

    @Test
    void placeOnPlacesOnTheNamedNodeOnlyWithCheckSet() {
        PlacementEngine e = PlacementEngine.create(cluster());
        Claim small = Claim.builder("small").memoryGiB(1).compute(5, 100).build();
        NodeFit.Fits f = assertInstanceOf(NodeFit.Fits.class, e.check(small, List.of("n7")).get(0));
        Placement p = assertInstanceOf(PlacementResult.Placed.class, e.placeOn(small, "n7")).placement();
        assertEquals("n7", p.nodeName());
        assertEquals(List.of("n7-g" + f.gpus().positions()[0]), p.gpuUuids());
        assertEquals(ReasonCode.DUPLICATE_TENANT, assertInstanceOf(PlacementResult.Unschedulable.class,
                e.placeOn(small, "n8")).general().get(0).code());

        PlacementExplanation ex = e.explain(twoGpus());
        PlacementResult.Unschedulable u = assertInstanceOf(PlacementResult.Unschedulable.class, e.placeOn(twoGpus(), "n0"));
        assertEquals(java.util.Map.of("n0", ex.rejected().get("n0")), u.nodes());
        assertEquals(List.of(new CauseCount(ReasonCode.INSUFFICIENT_MEMORY, 1)), u.causes());
        assertEquals(ReasonCode.UNKNOWN_TARGET, assertInstanceOf(PlacementResult.Unschedulable.class,
                e.placeOn(twoGpus(), "nowhere")).general().get(0).code());
    }

    @Test
    void aNodeWhoseAggregatesPassIsRefusedForItsGpusMostCommonFailure() {
        // g0: 2 GiB free, 90% compute free; g1: 14 GiB free, 55% compute free: each aggregate passes, and
        // so does the level of a 60% claim (50%: g1 has 14 GiB there); the GPU walk decides
        Ledger ledger = Ledger.create(GranularityRules.ofDefaults(), List.of(Nodes.t4("a", 2)));
        hold(ledger, "m", "a", "a-g0", 14, 10);
        hold(ledger, "c", "a", "a-g1", 2, 45);
        PlacementEngine e = PlacementEngine.create(ledger);
        Claim claim = Claim.builder("x").memoryGiB(8).compute(60, 100).build();
        NodeFit.Refused r = assertInstanceOf(NodeFit.Refused.class, e.check(claim, List.of("a")).get(0));
        assertEquals("a: INSUFFICIENT_MEMORY 1 GPU(s) needed, 0 usable; refused: 1 insufficient memory, 1 insufficient compute",
                r.reason().message());
        PlacementResult.Unschedulable u = assertInstanceOf(PlacementResult.Unschedulable.class, e.place(claim));
        assertEquals(List.of(new CauseCount(ReasonCode.INSUFFICIENT_MEMORY, 1)), u.causes());
    }

    @Test
    void aNodeWithTheMemoryOnOneGpuAndTheComputeOnAnotherIsRefusedByItsLevel() {
        // g0: 2 GiB free, 90% compute free; g1: 14 GiB free, 10% compute free: each aggregate passes; the
        // 50% level (GPUs with at least 50% free) has 2 GiB at most, so the level refuses without a GPU walk
        Ledger ledger = Ledger.create(GranularityRules.ofDefaults(), List.of(Nodes.t4("a", 2)));
        hold(ledger, "m", "a", "a-g0", 14, 10);
        hold(ledger, "c", "a", "a-g1", 2, 90);
        PlacementEngine e = PlacementEngine.create(ledger);
        Claim claim = Claim.builder("x").memoryGiB(8).compute(50, 100).build();
        NodeFit.Refused r = assertInstanceOf(NodeFit.Refused.class, e.check(claim, List.of("a")).get(0));
        assertEquals("a: INSUFFICIENT_MEMORY requested 8 GiB, free 2 GiB (short by 6 GiB) 1st largest free on the GPUs "
                + "with a free tenant slot and at least 50% free offline guaranteed compute (1 GPU(s) needed)", r.reason().message());
        PlacementResult.Unschedulable u = assertInstanceOf(PlacementResult.Unschedulable.class, e.place(claim));
        assertEquals(List.of(new CauseCount(ReasonCode.INSUFFICIENT_MEMORY, 1)), u.causes());
        // 2 GPUs at 5%: both have 5% free, the 2nd largest memory among them is 2 GiB
        Claim two = Claim.builder("y").gpus(2).memoryGiB(4).compute(5, 100).build();
        NodeFit.Refused r2 = assertInstanceOf(NodeFit.Refused.class, e.check(two, List.of("a")).get(0));
        assertEquals("a: INSUFFICIENT_MEMORY requested 4 GiB, free 2 GiB (short by 2 GiB) 2nd largest free on the GPUs "
                + "with a free tenant slot and at least 5% free offline guaranteed compute (2 GPU(s) needed)", r2.reason().message());
        // at 20%, only g0 reaches the level: fewer than 2 GPUs, short of compute; the 2nd largest compute is 10%
        Claim twoBusy = Claim.builder("z").gpus(2).memoryGiB(1).compute(20, 100).build();
        NodeFit.Refused r3 = assertInstanceOf(NodeFit.Refused.class, e.check(twoBusy, List.of("a")).get(0));
        assertEquals(ReasonCode.INSUFFICIENT_COMPUTE, r3.reason().code(), r3.reason().message());
    }

    @Test
    void anAffinityGroupBoundElsewhereCountsTheOtherNodesAsAffinity() {
        Ledger ledger = cluster();
        PlacementEngine e = PlacementEngine.create(ledger);
        Locality pipe = Locality.none().withAffinity("pipe");
        assertInstanceOf(PlacementResult.Placed.class, e.place(Claim.builder("p1").memoryGiB(60).compute(10, 100)
                .locality(pipe).build()));
        // a second member asking for more memory than the group's GPU has left
        PlacementResult.Unschedulable u = assertInstanceOf(PlacementResult.Unschedulable.class,
                e.place(Claim.builder("p2").memoryGiB(30).compute(10, 100).locality(pipe).build()));
        assertEquals(10, u.nodeCount());
        assertEquals(List.of(new CauseCount(ReasonCode.AFFINITY, 9), new CauseCount(ReasonCode.INSUFFICIENT_MEMORY, 1)),
                u.causes());
    }
}
