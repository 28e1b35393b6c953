package com.example.toyscheduler;

import io.qgpu.api.Claim;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.PlacementResult;
import io.qgpu.testkit.invariants.SchedulerFactory;
import io.qgpu.testkit.invariants.SchedulerUnderTest;
import java.util.List;

/** The one adapter between the toy scheduler and the testkit; every test here uses it. */
final class ToyAdapter implements SchedulerUnderTest {

    /** A fresh, empty toy scheduler per call. */
    static final SchedulerFactory FACTORY = ToyAdapter::new;

    private final ToyFirstFitScheduler toy;

    private ToyAdapter(GranularityRules rules, List<Node> nodes) {
        this.toy = new ToyFirstFitScheduler(rules, nodes);
    }

    @Override
    public PlacementResult place(Claim claim) {
        return toy.place(claim);
    }

    @Override
    public void release(String tenantId) {
        toy.release(tenantId);
    }
}
