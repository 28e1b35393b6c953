package io.qgpu.testkit.contract;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.testkit.invariants.SchedulerUnderTest;
import java.util.List;

/** The whole contract suite against qgpu's own placement engine with its default configuration. */
class PlacementEngineContractTest extends SchedulerContractSuite {

    @Override
    protected SchedulerUnderTest createScheduler(GranularityRules rules, List<Node> nodes) {
        return SchedulerUnderTest.of(PlacementEngine.create(Ledger.create(rules, nodes)));
    }
}
