package io.qgpu.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.qgpu.api.GranularityRules;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementEngine;
import org.junit.jupiter.api.Test;

/**
 * Placements are pinned: the scheduling pass's seeded mix (6,000 claims, seed 13) on 100 nodes of the
 * pass's cluster (half DGX-1V, half DGX H100), every answer's node and GPU UUIDs hashed in order.
 * The expected hash and count were taken from the engine before the per-node summaries became
 * slot-aware and refusals were counted from them (main 432f016), so the faster refusals and the
 * stronger summaries change no placement on this stream (1,635 of the claims are refused, so
 * refusals and placements interleave). A change that moves any claim fails here.
 *
 * <p>Re-pinned once, on purpose: merging host resources changed the load score of a GPU whose
 * compute or tenant slots are fully booked to 1 (it used to be its memory share), which moves some
 * binpack choices on this stream; the count placed (4,365) is unchanged. The new hash was taken from
 * the merged engine, whose refusal path the fast-refusal agreement property checks against explain.
 *
 * <p>Re-pinned a second time, on purpose (issue 29, items 1 and 2): within a node NVLink bandwidth
 * now always comes before one NUMA node and PCIe closeness (they became tie-breaks), and a single GPU
 * on a node whose GPUs are all busy at equal load goes to the worst-connected GPU. Both move GPU
 * choices on this stream; 4,398 claims are placed instead of 4,365. The faster refusals of item 4 were
 * made after this pin and change none of it.
 *
 * <p>Re-pinned a third time, on purpose: those tie-breaks had leaked into the node totals (the
 * connectivity tie-break, and rounding of the NUMA and PCIe terms taken out and put back), so they
 * also decided between nodes; now they decide within a node only and the node total is the score
 * without them, to the last bit (PlacementQualityTest.tieBreaksWithinANodeNeverDecideBetweenNodes).
 * That moves node choices on this stream: 4,374 placed (4,398 with the leak, 4,365 before the
 * tie-breaks). The leak had cost the fragmentation policy 3.9 points on the openb trace (seed 1).
 */
class PlacementsUnchangedTest {

    @Test
    void theSchedulingPassPlacesEveryClaimWhereTheEngineDidBefore() {
        PlacementEngine e = PlacementEngine.create(Ledger.create(GranularityRules.ofDefaults(),
                SchedulingPassBenchmark.cluster(100)));
        SchedulingPassBenchmark.Hashed h = SchedulingPassBenchmark.hashed(e, SchedulingPassBenchmark.claims(6_000, 13));
        assertEquals("4374 placed, hash de50344fe775c2e1", h.placed() + " placed, hash " + Long.toHexString(h.hash()));
    }
}
