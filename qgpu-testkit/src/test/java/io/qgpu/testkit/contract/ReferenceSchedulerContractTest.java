package io.qgpu.testkit.contract;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.testkit.invariants.SchedulerUnderTest;
import java.util.List;

/** The whole contract suite against the ledger-based reference scheduler: every rule must pass. */
class ReferenceSchedulerContractTest extends SchedulerContractSuite {

    @Override
    protected SchedulerUnderTest createScheduler(GranularityRules rules, List<Node> nodes) {
        return new LedgerReferenceScheduler(rules, nodes);
    }
}
