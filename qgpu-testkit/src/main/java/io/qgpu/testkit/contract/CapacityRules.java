package io.qgpu.testkit.contract;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.Selectors;
import io.qgpu.api.TopologyLevel;
import io.qgpu.json.Inventory;
import io.qgpu.testkit.invariants.CheckedScheduler;
import io.qgpu.testkit.invariants.Replay;
import io.qgpu.testkit.invariants.Violation;
import io.qgpu.testkit.machines.FakeCluster;
import io.qgpu.testkit.machines.Machines;
import io.qgpu.testkit.property.Describe;
import io.qgpu.testkit.property.Gen;
import io.qgpu.testkit.property.Property;
import io.qgpu.testkit.property.QgpuGens;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rules 1.x of the {@link SchedulerContractSuite}: capacity and protocol. Not part of the API on its
 * own: extend {@link SchedulerContractSuite}.
 */
abstract class CapacityRules extends ContractSupport {
    // ====================================================================== 1. capacity and protocol

    @Test
    @DisplayName("rule 1.01: places claims that fit")
    public void rule_1_01_placesClaimsThatFit() {
        CheckedScheduler s = start(FakeCluster.of(Machines.PCIE_4X_T4));
        Placement p = s.placed(Claim.builder("t1").memoryGiB(4).compute(20, 50).build());
        check(p.nodeName().equals("pcie-4xt4-0") && p.slices().size() == 1,
                "t1 should be on pcie-4xt4-0 with one slice, is " + Describe.placement(p));
        for (int i = 2; i <= 8; i++) {
            s.placed(Claim.builder("t" + i).memoryGiB(4).compute(10, 100).build());
        }
    }

    @Test
    @DisplayName("rule 1.02: answers about the claim asked for, unchanged")
    public void rule_1_02_answersAboutTheClaimAskedFor() {
        CheckedScheduler s = start(FakeCluster.of(Machines.PCIE_4X_T4));
        s.placed(Claim.builder("small").memoryGiB(3).compute(10, 40).build());
        s.placed(Claim.builder("best-effort").memoryGiB(2).compute(0, 35).build());
        s.placed(Claim.builder("whole").exclusive().build());
        PlacementResult.Unschedulable u = s.refused(Claim.builder("huge").memoryGiB(64).build(), "no T4 has 64 GiB");
        check(u.tenantId().equals("huge"), "the refusal must name tenant huge, names " + u.tenantId());
    }

    @Test
    @DisplayName("rule 1.03: never oversubscribes memory")
    public void rule_1_03_neverOversubscribesMemory() {
        CheckedScheduler s = start(FakeCluster.of(Machines.GN7_2XLARGE32));
        s.placed(gib("t1", 10));
        s.refused(gib("t2", 8), "10 + 8 GiB > 16 GiB");
        s.placed(gib("t3", 6));
        s.refused(gib("t4", 1), "the T4's 16 GiB are reserved");
    }

    @Test
    @DisplayName("rule 1.04: never oversubscribes guaranteed compute")
    public void rule_1_04_neverOversubscribesGuaranteedCompute() {
        CheckedScheduler s = start(FakeCluster.of(Machines.GN7_2XLARGE32));
        s.placed(Claim.builder("t1").memoryGiB(1).compute(60, 60).build());
        s.refused(Claim.builder("t2").memoryGiB(1).compute(50, 50).build(), "60% + 50% guaranteed > 100%");
        s.placed(Claim.builder("t3").memoryGiB(1).compute(40, 40).build());
        s.refused(Claim.builder("t4").memoryGiB(1).compute(5, 5).build(), "100% is guaranteed already");
        s.refused(Claim.builder("t5").memoryGiB(1).compute(0, 100).build(),
                "100% is guaranteed: a tenant with request 0 would starve");
        CheckedScheduler admits = start(FakeCluster.builder()
                .rules(GranularityRules.ofDefaults().toBuilder().admitZeroRequestOnBookedGpu(true).build())
                .nodes(Machines.GN7_2XLARGE32, 1, g -> { }).build());
        admits.placed(Claim.builder("t1").memoryGiB(1).compute(100, 100).build());
        admits.placed(Claim.builder("t5").memoryGiB(1).compute(0, 100).build());
        // and the other order: a zero-request tenant first, then the class may not be booked full
        CheckedScheduler first = start(FakeCluster.of(Machines.GN7_2XLARGE32));
        first.placed(Claim.builder("t0").memoryGiB(1).compute(0, 100).build());
        first.placed(Claim.builder("t1").memoryGiB(1).compute(60, 60).build());
        first.refused(Claim.builder("t2").memoryGiB(1).compute(40, 40).build(),
                "booking the last 40% would starve t0, whose request is 0");
        first.placed(Claim.builder("t3").memoryGiB(1).compute(35, 35).build());
    }

    @Test
    @DisplayName("rule 1.05: never exceeds the tenants per GPU of the granularity rules")
    public void rule_1_05_respectsMaxTenantsPerGpu() {
        CheckedScheduler s = start(FakeCluster.of(Machines.GN7_2XLARGE32));   // qGPU: 16 GiB / 4 GiB = 4 tenants
        for (int i = 1; i <= 4; i++) {
            s.placed(gib("t" + i, 1));
        }
        s.refused(gib("t5", 1), "a 16 GiB T4 holds at most 4 tenants under the qgpu rules");
    }

    @Test
    @DisplayName("rule 1.06: follows the granularity rules it is given")
    public void rule_1_06_followsTheGivenGranularityRules() {
        Inventory inv = FakeCluster.builder().rules(GranularityRules.hami()).nodes(Machines.GN10XP_2XLARGE40, 1).build();
        CheckedScheduler s = start(inv);
        // on HAMi's grid (MiB, 1%, 10 tenants per GPU) these sizes are valid; on qGPU's they are not
        for (int i = 1; i <= 10; i++) {
            s.placed(Claim.builder("t" + i).memoryBytes(512 * GpuDevice.MIB).compute(3, 7).build());
        }
        s.refused(Claim.builder("t11").memoryBytes(512 * GpuDevice.MIB).compute(3, 7).build(),
                "HAMi allows 10 tenants per GPU");
    }

    @Test
    @DisplayName("rule 1.07: an exclusive claim takes a whole empty GPU and shares it with nobody")
    public void rule_1_07_exclusiveClaimsTakeWholeEmptyGpus() {
        CheckedScheduler s = start(FakeCluster.of(Machines.GN7_2XLARGE32));
        s.placed(gib("t1", 1));
        s.refused(exclusive("t2", 1), "the only GPU has a tenant");
        s.release("t1");
        Placement p = s.placed(exclusive("t3", 1));
        check(p.slices().get(0).memoryBytes() == 16 * GpuDevice.GIB, "an exclusive slice holds the whole 16 GiB, holds "
                + Describe.bytes(p.slices().get(0).memoryBytes()));
        s.refused(gib("t4", 1), "the GPU is held exclusively");
        s.release("t3");
        s.placed(gib("t5", 16));
    }

    @Test
    @DisplayName("rule 1.08: refuses sizes off the granularity grid")
    public void rule_1_08_refusesSizesOffTheGrid() {
        CheckedScheduler s = start(FakeCluster.of(Machines.PCIE_4X_T4));   // qGPU: 1 GiB units, 5% units
        s.notPlaced(Claim.builder("t1").memoryBytes(1536 * GpuDevice.MIB).build(), "1.5 GiB is not a whole GiB");
        s.notPlaced(Claim.builder("t2").memoryBytes(512 * GpuDevice.MIB).build(), "below the 1 GiB minimum");
        s.notPlaced(Claim.builder("t3").memoryGiB(1).compute(33, 33).build(), "33% is not a multiple of 5%");
        s.notPlaced(Claim.builder("t4").memoryGiB(1).compute(10, 12).build(), "a 12% limit is not a multiple of 5%");
        s.placed(Claim.builder("t5").memoryGiB(1).compute(35, 40).build());
    }

    @Test
    @DisplayName("rule 1.09: never places on unhealthy GPUs")
    public void rule_1_09_neverPlacesOnUnhealthyGpus() {
        Inventory inv = FakeCluster.builder()
                .nodes(Machines.PCIE_4X_T4, 1, g -> g.unhealthyGpus(0, 1, 2))
                .nodes(Machines.GN7_2XLARGE32, 1, g -> g.prefix("broken").label("pool", "broken").unhealthyGpus(0))
                .build();
        CheckedScheduler s = start(inv);
        for (int i = 1; i <= 4; i++) {
            s.placed(gib("t" + i, 1));                    // all on GPU 3 of pcie-4xt4-0: the only healthy one
        }
        s.refused(gib("t5", 1), "the only healthy GPU holds 4 tenants");
        s.refused(Claim.builder("t6").memoryGiB(1).selectors(Selectors.builder().nodeLabel("pool", "broken").build())
                .build(), "node broken-0 has no healthy GPU");
    }

    @Test
    @DisplayName("rule 1.10: release restores capacity")
    public void rule_1_10_releaseRestoresCapacity() {
        CheckedScheduler s = start(FakeCluster.of(Machines.GN7_2XLARGE32));
        s.placed(Claim.builder("t1").memoryGiB(8).compute(60, 60).build());
        s.placed(Claim.builder("t2").memoryGiB(8).compute(40, 40).build());
        s.refused(Claim.builder("t3").memoryGiB(1).compute(5, 5).build(), "memory and compute are used up");
        s.release("t1");
        s.release("t2");
        s.placed(exclusive("t4", 1));                     // needs the GPU entirely free again
        s.release("t4");
        for (int i = 5; i <= 8; i++) {
            s.placed(Claim.builder("t" + i).memoryGiB(4).compute(25, 25).build());
        }
    }

    @Test
    @DisplayName("rule 1.11: release is idempotent")
    public void rule_1_11_releaseIsIdempotent() {
        CheckedScheduler s = start(FakeCluster.of(Machines.GN7_2XLARGE32));
        s.release("nobody");
        s.placed(gib("t1", 16));
        s.release("t1");
        s.release("t1");
        s.placed(gib("t2", 16));
        s.refused(gib("t3", 1), "a double release must not free the GPU twice");
    }

    @Test
    @DisplayName("rule 1.12: a tenant id is placed at most once")
    public void rule_1_12_refusesADuplicateTenant() {
        CheckedScheduler s = start(FakeCluster.of(Machines.GN7_2XLARGE32));
        s.placed(gib("t1", 4));
        s.notPlaced(gib("t1", 4), "t1 is placed already");
        s.release("t1");
        s.placed(gib("t2", 16));
    }

    @Test
    @DisplayName("rule 1.13: a refused claim leaves no trace")
    public void rule_1_13_refusalLeavesNoTrace() {
        CheckedScheduler s = start(FakeCluster.of(Machines.PCIE_4X_T4));
        s.refused(gib("big", 20), "no T4 has 20 GiB");
        s.refused(Claim.builder("picky").memoryGiB(1).selectors(Selectors.builder().includeModel(QgpuGens.ABSENT_MODEL)
                .build()).build(), "no GPU of the selected model");
        for (int i = 1; i <= 4; i++) {
            s.placed(gib("t" + i, 16));
        }
        s.refused(gib("t5", 1), "every T4 is full");
    }

    @Test
    @DisplayName("rule 1.14: release restores capacity (seeded property)")
    public void rule_1_14_releaseRestoresCapacityForRandomSequences() {
        Property.forAll(scenarios()).named(ruleName("rule_1_14_releaseRestoresCapacityForRandomSequences"))
                .tries(propertyTries())
                .verify(sc -> Violation.assertNone("after releasing every tenant",
                        Replay.releaseRestoresCapacity(factory(), sc)));
    }

    @Test
    @DisplayName("rule 1.15: random place/release sequences keep every invariant (seeded property)")
    public void rule_1_15_randomSequencesKeepEveryInvariant() {
        Property.forAll(scenarios()).named(ruleName("rule_1_15_randomSequencesKeepEveryInvariant"))
                .tries(propertyTries())
                .verify(sc -> Replay.run(factory(), sc).assertNoViolations());
    }

    @Test
    @DisplayName("rule 1.16: the same input gives the same placements (seeded property)")
    public void rule_1_16_sameInputGivesSamePlacements() {
        Property.forAll(scenarios()).named(ruleName("rule_1_16_sameInputGivesSamePlacements"))
                .tries(propertyTries())
                .verify(sc -> Violation.assertNone("two fresh schedulers, same operations",
                        Replay.determinism(factory(), sc)));
    }

    /** One inventory and one claim, for rule 1.17. */
    public record SingleClaim(Inventory inventory, Claim claim) {
        @Override
        public String toString() {
            return Describe.claim(claim) + " on " + Describe.inventory(inventory);
        }
    }

    @Test
    @DisplayName("rule 1.17: a claim that fits an empty cluster is placed (seeded property)")
    public void rule_1_17_placesAClaimThatFitsAnEmptyCluster() {
        Gen<SingleClaim> cases = QgpuGens.inventories(inventoryOptions()).flatMap(inv ->
                QgpuGens.claims(claimOptions().withRules(inv.rules()), inv).map(c -> new SingleClaim(inv, c)));
        Property.forAll(cases).named(ruleName("rule_1_17_placesAClaimThatFitsAnEmptyCluster"))
                .tries(propertyTries())
                .verify(c -> Violation.assertNone("one claim on an empty cluster",
                        Replay.completeness(factory(), c.inventory(), c.claim())));
    }

    @Test
    @DisplayName("rule 1.18: a MIG instance is a whole device that holds one tenant, unless the rules share MIG instances")
    public void rule_1_18_keepsAMigInstanceForOneTenant() {
        Node mig = migInstances("mig-0", 2);   // two 40 GiB instances: room for 10 tenants each by memory alone
        CheckedScheduler s = start(new Inventory(GranularityRules.ofDefaults(), List.of(mig)));
        s.placed(gib("t1", 4));
        s.placed(gib("t2", 4));
        s.refused(gib("t3", 4), "each of the two MIG instances holds one tenant under the qgpu rules");
        CheckedScheduler shared = start(new Inventory(GranularityRules.ofDefaults().toBuilder().shareMigInstances(true).build(), List.of(mig)));
        for (int i = 1; i <= 3; i++) {
            shared.placed(gib("t" + i, 4));
        }
    }

    @Test
    @DisplayName("rule 1.19: never oversubscribes a node's CPU or host memory; host-only claims take no GPU")
    public void rule_1_19_neverOversubscribesHostResources() {
        requires(Capability.HOST_RESOURCES, "1.19");
        Node t4 = Machines.GN7_2XLARGE32.node("host-0");
        Node node = new Node(t4.name(), t4.labels(), t4.gpus(), t4.topology(), io.qgpu.api.HostCapacity.of(4000, 8 * GpuDevice.GIB));
        CheckedScheduler s = start(new Inventory(GranularityRules.ofDefaults(), List.of(node)));
        s.placed(Claim.builder("g1").memoryGiB(1).cpuMillis(2500).hostMemoryGiB(2).build());
        s.refused(Claim.builder("g2").memoryGiB(1).cpuMillis(2000).build(), "2500m + 2000m CPU > 4000m, though the GPU has room");
        Placement h = s.placed(Claim.builder("h1").hostOnly().cpuMillis(1500).hostMemoryGiB(4).build());
        check(h.slices().isEmpty(), "a host-only claim takes no GPU, got " + Describe.placement(h));
        s.refused(Claim.builder("h2").hostOnly().hostMemoryGiB(3).build(), "2 + 4 + 3 GiB host memory > 8 GiB");
        s.refused(Claim.builder("h3").hostOnly().cpuMillis(1).build(), "the 4000m CPU are all reserved");
        s.release("g1");
        s.placed(Claim.builder("g3").memoryGiB(1).cpuMillis(2500).hostMemoryGiB(4).build());
    }

    /** A node of {@code n} 40 GiB MIG instances, each a device whose UUID starts with {@code MIG-}, as NVML names them. */
    static Node migInstances(String name, int n) {
        Node.Builder b = Node.builder(name).defaultLink(new GpuLink.Pcie(TopologyLevel.SYSTEM));
        for (int i = 0; i < n; i++) {
            b.gpu(GpuDevice.builder(String.format(java.util.Locale.ROOT, "MIG-%08x-0000-4000-8000-000000000000", i))
                    .index(i).model("NVIDIA A100-SXM4-80GB MIG 3g.40gb").memoryGiB(40).build());
        }
        return b.build();
    }

}
