package com.example.toyscheduler;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.testkit.contract.Capability;
import io.qgpu.testkit.contract.SchedulerContractSuite;
import io.qgpu.testkit.invariants.SchedulerUnderTest;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * The qgpu scheduler contract, inherited whole: 31 rule-numbered tests. The toy scheduler honestly
 * declares what it lacks (priority classes, locality labels, topology), so those rules are skipped
 * with the reason and the property rules stop generating what they would need.
 */
class ToyFirstFitContractTest extends SchedulerContractSuite {

    @Override
    protected SchedulerUnderTest createScheduler(GranularityRules rules, List<Node> nodes) {
        return ToyAdapter.FACTORY.create(rules, nodes);
    }

    @Override
    protected Set<Capability> capabilities() {
        return EnumSet.of(Capability.MULTI_GPU);
    }
}
