package io.qgpu.testkit.contract;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.PlacementResult;
import io.qgpu.testkit.invariants.Replay;
import io.qgpu.testkit.property.ClaimOptions;
import io.qgpu.testkit.property.InventoryOptions;
import io.qgpu.testkit.property.Op;
import io.qgpu.testkit.property.QgpuGens;
import io.qgpu.testkit.property.PropertyScenario;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The property rules are only as good as the scenarios they run: against the reference scheduler,
 * generated scenarios must reach full GPUs and refusals as well as successful placements of every
 * kind, or a broken scheduler could pass by luck.
 */
class GeneratorCoverageTest {

    @Test
    void scenariosExerciseEveryKindOfPlacementAndRefusal() {
        List<PropertyScenario> scenarios = QgpuGens.scenarios(InventoryOptions.defaults().withReservedFor(true),
                ClaimOptions.defaults(), 30).samples(2024, 300);
        int placed = 0;
        int refused = 0;
        int multi = 0;
        int exclusive = 0;
        int labelled = 0;
        int selected = 0;
        int releasesOfLive = 0;
        for (PropertyScenario s : scenarios) {
            Replay.Report r = Replay.run((rules, nodes) -> new LedgerReferenceScheduler(rules, nodes), s);
            r.assertNoViolations();
            java.util.Set<String> live = new java.util.HashSet<>();
            for (Replay.Step step : r.steps()) {
                if (step.op() instanceof Op.Release rel) {
                    releasesOfLive += live.remove(rel.tenantId()) ? 1 : 0;
                    continue;
                }
                Claim c = ((Op.Place) step.op()).claim();
                if (step.result().orElseThrow() instanceof PlacementResult.Placed) {
                    placed++;
                    live.add(c.tenantId());
                    multi += c.gpuCount() > 1 ? 1 : 0;
                    exclusive += c.exclusive() ? 1 : 0;
                    labelled += c.locality().isNone() ? 0 : 1;
                    selected += c.selectors().isNone() ? 0 : 1;
                } else {
                    refused++;
                }
            }
        }
        int total = placed + refused;
        String stats = "placed " + placed + ", refused " + refused + ", multi-GPU " + multi + ", exclusive " + exclusive
                + ", labelled " + labelled + ", with selectors " + selected + ", releases of live tenants " + releasesOfLive;
        assertTrue(placed > total / 3 && refused > total / 10, stats);
        assertTrue(multi > 100 && exclusive > 50 && labelled > 300 && selected > 200 && releasesOfLive > 300, stats);
    }
}
