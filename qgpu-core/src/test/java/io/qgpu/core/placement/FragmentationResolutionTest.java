package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.NodeState;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.core.ledger.Ledger;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.opentest4j.AssertionFailedError;

/**
 * The scorer's resolution ({@link FragmentationScorer#withResolution}) and host-only request shapes: the
 * two differences to the paper's reference scorer that the fragmentation policy takes over.
 */
class FragmentationResolutionTest {

    /** What is checked: the score of a delta at a number of steps. */
    interface AtResolution {
        double applyAsDouble(double delta, int steps);
    }

    /**
     * What a score at {@code steps} steps must do, checked on any implementation {@code (delta, steps) -> score}:
     * the worked values of {@code floor(steps x sigmoid(-delta / 100)) / steps}, deltas within one step tie,
     * and over a sweep of deltas the score stays in [0, 1], never rises with the delta, and moves only in
     * whole steps.
     */
    static void checkResolution(AtResolution score) {
        // at 100 steps: no change scores 50; a reduction of 3% of a GPU is still 50 (sigmoid(0.03) = 0.5075);
        // 5% is 51; any growth, however small, falls to 49; a whole GPU less is 73 (sigmoid(1) = 0.731)
        assertEquals(0.50, score.applyAsDouble(0, 100), 1e-12);
        assertEquals(0.50, score.applyAsDouble(-3, 100), 1e-12);
        assertEquals(0.51, score.applyAsDouble(-5, 100), 1e-12);
        assertEquals(0.49, score.applyAsDouble(0.5, 100), 1e-12);
        assertEquals(0.73, score.applyAsDouble(-100, 100), 1e-12);
        assertEquals(0.26, score.applyAsDouble(100, 100), 1e-12);
        assertEquals(score.applyAsDouble(-1, 100), score.applyAsDouble(-3.9, 100), "deltas within one step tie");
        for (int steps : new int[] {1, 7, 100, 1000}) {
            double last = 1.0;
            for (double d = -1000; d <= 1000; d += 0.25) {
                double v = score.applyAsDouble(d, steps);
                assertTrue(v >= 0 && v <= 1, "in [0, 1]: " + v + " at " + d);
                assertTrue(v <= last, "never rises with the delta: " + v + " at " + d + " after " + last);
                assertEquals(Math.rint(v * steps), v * steps, 1e-9, "whole steps only at " + d);
                last = v;
            }
        }
    }

    @Test
    void theScoreAtAResolutionIsTheSigmoidOfTheDeltaInWholeSteps() {
        checkResolution(FragmentationScorer::toScore);
        assertEquals(FragmentationScorer.toScore(-37.5), FragmentationScorer.toScore(-37.5, FragmentationScorer.EXACT), 0);
    }

    /** The check rejects deliberately broken resolutions: rounding instead of flooring, and ignoring the resolution. */
    @Test
    void brokenResolutionsAreCaughtByTheCheck() {
        AtResolution rounding = (d, steps) -> Math.rint(steps / (1.0 + Math.exp(d / 100.0))) / steps;
        AtResolution exact = (d, steps) -> FragmentationScorer.toScore(d);
        assertThrows(AssertionFailedError.class, () -> checkResolution(rounding));
        assertThrows(AssertionFailedError.class, () -> checkResolution(exact));
    }

    @Test
    void aResolutionOutsideItsRangeIsRefusedByName() {
        FragmentationScorer s = FragmentationScorer.of(RequestMix.empty());
        assertEquals(FragmentationScorer.EXACT, s.resolution());
        assertEquals(100, s.withResolution(FragmentationScorer.PAPER_RESOLUTION).resolution());
        assertEquals(100, s.withResolution(100).frozen().resolution(), "a frozen copy scores alike");
        assertEquals(100, s.withResolution(100).withHostCpu(n -> 0, c -> 0).resolution());
        for (int bad : new int[] {-1, FragmentationScorer.MAX_RESOLUTION + 1, Integer.MIN_VALUE}) {
            InvalidValueException e = assertThrows(InvalidValueException.class, () -> s.withResolution(bad));
            assertEquals("fragmentationScorer.resolution", e.field());
            assertEquals(bad, e.value());
        }
    }

    /**
     * Two single-T4 nodes: a empty, b with 40% booked; a 30% share arrives; the expected requests are CPU-only
     * pods (10%), 50% shares (4.5%) and 10% shares (85.5%). On a the share leaves 70 (a 50% still fits): delta
     * -3 (only the CPU-only pods' term: 30 less free capacity). On b it leaves 10 (the 50% no longer fits):
     * delta -3 + 30 x 0.045 = -1.65. The exact score takes a (1.35 points better, more than b's binpack load is
     * worth); at the paper's resolution both are in step 50 and binpack load takes the fuller b.
     */
    @Test
    void atThePapersResolutionSmallDifferencesTieAndBinpackLoadDecides() {
        RequestMix mix = FragmentationTest.mix(RequestShape.hostOnly(2000), 0.1, FragmentationTest.share(50), 0.045,
                FragmentationTest.share(10), 0.855);
        assertEquals("a", placeShare(FragmentationScorer.of(mix)));
        assertEquals("b", placeShare(FragmentationScorer.of(mix).withResolution(FragmentationScorer.PAPER_RESOLUTION)));
        // a fine resolution ranks as the exact score does
        assertEquals("a", placeShare(FragmentationScorer.of(mix).withResolution(100_000)));
    }

    private static String placeShare(FragmentationScorer scorer) {
        Ledger l = Ledger.create(List.of(FragmentationTest.node("a", "T4"), FragmentationTest.node("b", "T4")));
        assertTrue(l.reserve(Nodes.on(Nodes.claim("b40", 1, 40, 100), l.nodes().get(1).node(), 0)).reserved());
        PlacementEngine e = PlacementEngine.builder(l).fragmentation(scorer)
                .policies(PlacementPolicy.FRAGMENTATION, PlacementPolicy.FRAGMENTATION).build();
        PlacementResult r = e.place(Claim.builder("x").memoryGiB(1).compute(30, 100).build());
        return ((PlacementResult.Placed) r).placement().nodeName();
    }

    @Test
    void forAHostOnlyShapeAllFreeGpuCapacityIsFragmentation() {
        NodeState n = FragmentationTest.booked(FragmentationTest.node("n", "T4", "T4"), 30, 0);   // free 70 + 100
        RequestMix cpuOnly = FragmentationTest.mix(RequestShape.hostOnly(4000), 1);
        assertEquals(170.0, Fragmentation.of(n, Long.MAX_VALUE, cpuOnly), 1e-9);
        assertEquals(170.0, Fragmentation.of(n, 1000, cpuOnly), 1e-9, "whether or not its CPU fits");
        Fragmentation.Profile p = Fragmentation.profile(n, Long.MAX_VALUE, cpuOnly, true);
        assertEquals(-40.0, p.delta(new int[] {1}, 40, 0), 1e-9, "every GPU share taken is fragmentation less");
        assertEquals(0.0, p.delta(new int[0], 0, 2000), 1e-9, "CPU taken changes nothing for it");
        // a quarter of the mix host-only: its term adds a quarter of the free capacity
        RequestMix both = FragmentationTest.mix(RequestShape.hostOnly(4000), 1, FragmentationTest.share(80), 3);
        assertEquals(0.25 * 170 + 0.75 * 70, Fragmentation.of(n, Long.MAX_VALUE, both), 1e-9);
    }

    /** The sample takes host-only claims only at a resolution, where their shift can move deltas across steps. */
    @Test
    void theSampleRecordsHostOnlyClaimsOnlyWhenTheScoreHasAResolution() {
        Claim etl = Claim.builder("etl").hostOnly().cpuMillis(1500).build();
        Claim share = Claim.builder("s").memoryGiB(1).compute(30, 100).build();
        for (int steps : new int[] {FragmentationScorer.EXACT, FragmentationScorer.PAPER_RESOLUTION}) {
            FragmentationScorer f = FragmentationScorer.sampling(8).withResolution(steps);
            f.record(etl);
            f.record(share);
            RequestSample sample = f.sample().orElseThrow();
            assertEquals(steps == FragmentationScorer.EXACT ? 1 : 2, sample.size(), "steps " + steps);
            assertEquals(steps != FragmentationScorer.EXACT,
                    java.util.stream.IntStream.range(0, f.mix().size()).anyMatch(i -> f.mix().shape(i).equals(RequestShape.hostOnly(1500))));
        }
    }

    @Test
    void aHostOnlyShapeHasNoGpuNoShareAndNoModel() {
        RequestShape s = RequestShape.hostOnly(1500);
        assertTrue(s.isHostOnly());
        assertEquals(new RequestShape(0, 0, 1500, Set.of()), s);
        assertEquals(s, RequestShape.of(Claim.builder("etl").hostOnly().cpuMillis(1500).build()));
        assertEquals("requestShape.computePercent",
                assertThrows(InvalidValueException.class, () -> new RequestShape(0, 50, 0, Set.of())).field());
        assertEquals("requestShape.computePercent",
                assertThrows(InvalidValueException.class, () -> new RequestShape(1, 0, 0, Set.of())).field());
        assertEquals("requestShape.models",
                assertThrows(InvalidValueException.class, () -> new RequestShape(0, 0, 0, Set.of("T4"))).field());
        assertEquals("requestShape.gpus",
                assertThrows(InvalidValueException.class, () -> new RequestShape(-1, 0, 0, Set.of())).field());
    }
}
