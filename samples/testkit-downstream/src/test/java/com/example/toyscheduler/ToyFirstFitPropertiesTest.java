package com.example.toyscheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.PriorityClass;
import io.qgpu.json.Inventory;
import io.qgpu.testkit.invariants.CheckedScheduler;
import io.qgpu.testkit.invariants.Replay;
import io.qgpu.testkit.invariants.SchedulerFactory;
import io.qgpu.testkit.machines.FakeCluster;
import io.qgpu.testkit.machines.Machines;
import io.qgpu.testkit.property.ClaimOptions;
import io.qgpu.testkit.property.Gen;
import io.qgpu.testkit.property.Gens;
import io.qgpu.testkit.property.InventoryOptions;
import io.qgpu.testkit.property.Property;
import io.qgpu.testkit.property.QgpuGens;
import io.qgpu.testkit.property.PropertyScenario;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The testkit's pieces used directly: fake machines, generators, the oracle and the property runner. */
class ToyFirstFitPropertiesTest {

    private static final SchedulerFactory TOY = ToyAdapter.FACTORY;

    @Test
    void firstFitFillsGpusInIndexOrder() {
        CheckedScheduler s = CheckedScheduler.create(TOY, FakeCluster.of(Machines.GN7_20XLARGE320));
        assertEquals(List.of(0), s.gpuIndices(s.placed(Claim.builder("a").memoryGiB(16).build())));
        assertEquals(List.of(1, 2), s.gpuIndices(s.placed(Claim.builder("b").gpus(2).memoryGiB(8).build())));
        assertEquals(List.of(1), s.gpuIndices(s.placed(Claim.builder("c").memoryGiB(8).build())));
    }

    @Test
    void randomSequencesOnLargeT4ClustersKeepEveryInvariant() {
        // a cluster shape of our own: 2 to 6 GN7 nodes, small single-GPU offline claims
        InventoryOptions inventories = InventoryOptions.defaults()
                .withMachines(List.of(Machines.GN7_2XLARGE32, Machines.GN7_20XLARGE320)).withNodes(2, 6);
        ClaimOptions claims = ClaimOptions.defaults().withMaxGpus(1).withLocality(false)
                .withPriorities(List.of(PriorityClass.OFFLINE)).withMaxMemoryBytes(16 * GpuDevice.GIB);
        Property.forAll(QgpuGens.scenarios(inventories, claims, 60))
                .tries(200)
                .verify(scenario -> Replay.run(TOY, scenario).assertNoViolations());
    }

    @Test
    void generatorsWorkWithoutTheRunnerToo() {
        Gen<PropertyScenario> scenarios = QgpuGens.scenarios(InventoryOptions.defaults(), ClaimOptions.defaults().withMaxGpus(1)
                .withLocality(false).withPriorities(List.of(PriorityClass.OFFLINE)), 30);
        SplittableRandom random = new SplittableRandom(42);   // any framework's seed
        for (int i = 0; i < 50; i++) {
            PropertyScenario s = scenarios.generate(random);
            assertTrue(Replay.run(TOY, s).ok(), s::toString);
        }
        Gen<Inventory> one = Gens.constant(FakeCluster.of(Machines.DGX_1V));
        assertEquals(8, one.generate(random).nodes().get(0).gpus().size());
    }
}
