package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.PlacementResult;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementConfig;
import io.qgpu.core.placement.PlacementEngine;
import org.junit.jupiter.api.Test;

/** A refused bind answers the whole reason; its WARN line stays short. */
class BindErrorsTest {

    @Test
    void theAnswerHasEveryGpusReasonAndTheWarnLineOnlyTheFirst() {
        Ledger ledger = FitCacheTest.ledger(1);
        PlacementEngine engine = PlacementEngine.builder(ledger).config(PlacementConfig.defaults()).build();
        for (int i = 0; i < 8; i++) {
            assertTrue(engine.placeOn(Claim.builder("full-" + i).gpus(1).exclusive().build(), "n0") instanceof PlacementResult.Placed);
        }
        PlacementResult r = engine.placeOn(Claim.builder("late").gpus(1).memoryGiB(8).compute(10, 100).build(), "n0");
        PlacementResult.Unschedulable u = (PlacementResult.Unschedulable) r;
        String answer = BindErrors.refusal("load/late", "n0", u);
        String warn = BindErrors.warnLine("load/late", "n0", u);
        for (int g = 0; g < 8; g++) {
            assertTrue(answer.contains("n0-g" + g), "the answer names every GPU: " + answer);
        }
        int reasons = u.nodes().get("n0").all().size();
        assertTrue(reasons > 1, "several reasons: " + reasons);
        assertTrue(warn.startsWith("node n0 cannot take pod load/late: "), warn);
        assertTrue(warn.endsWith(" (and " + (reasons - 1) + " more reason(s), at DEBUG)"), warn);
        assertTrue(warn.length() < answer.length() && warn.length() <= 40 + BindErrors.WARN_CHARS + 60, warn);
        assertEquals(answer, BindErrors.refused("load/late", "n0", u).error());
    }

    @Test
    void longTextIsCutAtTheBoundAndSaysHowMuchWasLeftOut() {
        String s = "x".repeat(BindErrors.WARN_CHARS + 17);
        assertEquals("x".repeat(BindErrors.WARN_CHARS) + "... (17 more characters)", BindErrors.bounded(s));
        assertEquals("short", BindErrors.bounded("short"));
        assertEquals(s, BindErrors.error(s).error());
    }
}
