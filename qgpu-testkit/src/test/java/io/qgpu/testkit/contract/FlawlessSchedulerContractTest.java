package io.qgpu.testkit.contract;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.testkit.invariants.SchedulerUnderTest;
import java.util.List;
import java.util.Set;

/**
 * The positive control of the negative self-tests: the configurable scheduler without flaws passes
 * every rule, so a rule failing on it with one flaw fails because of that flaw.
 */
class FlawlessSchedulerContractTest extends SchedulerContractSuite {

    @Override
    protected SchedulerUnderTest createScheduler(GranularityRules rules, List<Node> nodes) {
        return new ConfigurableScheduler(rules, nodes, Set.of());
    }
}
