package io.qgpu.testkit.contract;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Locality;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Selectors;
import io.qgpu.api.Slice;
import io.qgpu.api.TopologyLevel;
import io.qgpu.core.json.Inventory;
import io.qgpu.testkit.invariants.CheckedScheduler;
import io.qgpu.testkit.invariants.Replay;
import io.qgpu.testkit.invariants.SchedulerFactory;
import io.qgpu.testkit.invariants.SchedulerUnderTest;
import io.qgpu.testkit.invariants.Violation;
import io.qgpu.testkit.machines.FakeCluster;
import io.qgpu.testkit.machines.Machines;
import io.qgpu.testkit.property.ClaimOptions;
import io.qgpu.testkit.property.Describe;
import io.qgpu.testkit.property.Gen;
import io.qgpu.testkit.property.InventoryOptions;
import io.qgpu.testkit.property.Property;
import io.qgpu.testkit.property.QgpuGens;
import io.qgpu.testkit.property.Scenario;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The scheduler contract suite: extend it in your test sources, say how to make your scheduler,
 * and inherit the whole battery as JUnit 5 tests named by rule ({@code rule_1_03_...}).
 *
 * <pre>{@code
 * class MySchedulerContractTest extends SchedulerContractSuite {
 *     @Override
 *     protected SchedulerUnderTest createScheduler(GranularityRules rules, List<Node> nodes) {
 *         MyScheduler s = new MyScheduler(rules, nodes);
 *         return new SchedulerUnderTest() {
 *             public PlacementResult place(Claim claim) { return s.place(claim); }
 *             public void release(String tenantId) { s.release(tenantId); }
 *         };
 *     }
 *
 *     @Override
 *     protected Set<Capability> capabilities() {      // what your scheduler does not do is skipped
 *         return EnumSet.of(Capability.MULTI_GPU, Capability.PRIORITY_CLASSES);
 *     }
 * }
 * }</pre>
 *
 * <h2>Rules</h2>
 * <ol>
 *   <li><b>1.x capacity and protocol</b> (always): places what fits (1.01), answers about the claim
 *       asked for (1.02), never oversubscribes memory (1.03), guaranteed compute (1.04) or tenants
 *       per GPU (1.05), follows the granularity rules it is given (1.06), exclusive claims take whole
 *       empty GPUs (1.07), off-grid sizes are refused (1.08), unhealthy GPUs get nothing (1.09),
 *       release restores capacity (1.10) and is idempotent (1.11), a tenant id is placed once (1.12),
 *       a refusal leaves no trace (1.13); seeded properties: release restores capacity (1.14), random
 *       place/release sequences keep every invariant (1.15), the same input gives the same placements
 *       (1.16), a claim that fits an empty cluster is placed (1.17); a MIG instance (UUID
 *       {@code MIG-...}) holds one tenant unless the rules share MIG instances (1.18).</li>
 *   <li><b>2.x multi-GPU</b> ({@link Capability#MULTI_GPU}): GPUs of one node (2.01), all or nothing
 *       (2.02), exclusive multi-GPU claims (2.03).</li>
 *   <li><b>3.x selectors</b> (always): GPU models (3.01), GPU UUIDs (3.02), node labels (3.03).</li>
 *   <li><b>4.x priority classes</b> ({@link Capability#PRIORITY_CLASSES}): guaranteed compute per
 *       class (4.01), GPUs kept for a class (4.02).</li>
 *   <li><b>5.x locality labels</b> ({@link Capability#LOCALITY_LABELS}): affinity (5.01),
 *       anti-affinity (5.02), exclusion (5.03).</li>
 *   <li><b>6.x topology</b> ({@link Capability#TOPOLOGY}): a multi-GPU claim on free GPUs gets a set
 *       whose weakest link is as strong as possible (6.01), a 4-GPU claim on a DGX-1V stays in an
 *       NVLink quad (6.02).</li>
 * </ol>
 * Every answer and every placement in every rule is also judged by the independent
 * {@link io.qgpu.testkit.invariants.PlacementInvariants oracle}; a failure lists the violations and
 * the history of calls. The property rules print their seed: re-run a failure with
 * {@code -Dqgpu.seed=<seed>}.
 *
 * <p>Modelled on the reactive-streams TCK's {@code PublisherVerification}: a fresh scheduler per
 * rule, rule-numbered methods, optional rules skipped with the reason.
 *
 * <p>Thread safety: JUnit runs each rule on a fresh instance; rules are single-threaded.
 */
public abstract class SchedulerContractSuite {

    /**
     * A fresh, empty scheduler over these rules and nodes (GPU health as the nodes say). Called at
     * least once per rule and once per property case; each call must return an independent instance.
     */
    protected abstract SchedulerUnderTest createScheduler(GranularityRules rules, List<Node> nodes);

    /** What the scheduler does; the default claims everything. Rules needing anything else are skipped. */
    protected Set<Capability> capabilities() {
        return EnumSet.allOf(Capability.class);
    }

    /** Cases per property rule (default 100). */
    protected int propertyTries() {
        return 100;
    }

    /** Most operations per generated scenario (default 30). */
    protected int maxOperations() {
        return 30;
    }

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
                .rules(GranularityRules.ofDefaults().withAdmitZeroRequestOnBookedGpu(true))
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
        CheckedScheduler shared = start(new Inventory(GranularityRules.ofDefaults().withShareMigInstances(true), List.of(mig)));
        for (int i = 1; i <= 3; i++) {
            shared.placed(gib("t" + i, 4));
        }
    }

    /** A node of {@code n} 40 GiB MIG instances, each a device whose UUID starts with {@code MIG-}, as NVML names them. */
    private static Node migInstances(String name, int n) {
        Node.Builder b = Node.builder(name).defaultLink(new GpuLink.Pcie(TopologyLevel.SYSTEM));
        for (int i = 0; i < n; i++) {
            b.gpu(GpuDevice.builder(String.format(java.util.Locale.ROOT, "MIG-%08x-0000-4000-8000-000000000000", i))
                    .index(i).model("NVIDIA A100-SXM4-80GB MIG 3g.40gb").memoryGiB(40).build());
        }
        return b.build();
    }

    // ====================================================================== 2. multi-GPU

    @Test
    @DisplayName("rule 2.01: a multi-GPU claim gets distinct GPUs of one node")
    public void rule_2_01_multiGpuClaimsUseGpusOfOneNode() {
        requires(Capability.MULTI_GPU, "2.01");
        Inventory inv = FakeCluster.builder().nodes(Machines.GN7_10XLARGE160, 2).build();
        CheckedScheduler s = start(inv);
        Placement p = s.placed(Claim.builder("pair").gpus(2).memoryGiB(4).build());
        check(new HashSet<>(s.gpuIndices(p)).size() == 2, "pair needs two distinct GPUs, got " + s.gpuIndices(p));
        s.release("pair");
        s.placed(pinned("a0", inv, "gn7-2xt4-0", 0));
        s.placed(pinned("b0", inv, "gn7-2xt4-1", 0));
        s.refused(Claim.builder("spread").gpus(2).memoryGiB(1).build(),
                "each node has one free GPU; a claim's GPUs are all on one node");
        s.release("a0");
        Placement q = s.placed(Claim.builder("spread2").gpus(2).memoryGiB(1).build());
        check(q.nodeName().equals("gn7-2xt4-0"), "only gn7-2xt4-0 has two free GPUs, spread2 is on " + q.nodeName());
    }

    @Test
    @DisplayName("rule 2.02: a multi-GPU claim is all or nothing")
    public void rule_2_02_multiGpuClaimsAreAllOrNothing() {
        requires(Capability.MULTI_GPU, "2.02");
        Inventory inv = FakeCluster.of(Machines.PCIE_4X_T4);
        CheckedScheduler s = start(inv);
        s.placed(pinned("x0", inv, "pcie-4xt4-0", 0));
        s.placed(pinned("x1", inv, "pcie-4xt4-0", 1));
        s.refused(Claim.builder("three").gpus(3).memoryGiB(1).build(), "only two GPUs are free");
        s.placed(Claim.builder("two").gpus(2).exclusive().build());   // GPUs 2 and 3 must be wholly free still
    }

    @Test
    @DisplayName("rule 2.03: an exclusive multi-GPU claim takes whole GPUs")
    public void rule_2_03_exclusiveMultiGpuClaimsTakeWholeGpus() {
        requires(Capability.MULTI_GPU, "2.03");
        CheckedScheduler s = start(FakeCluster.of(Machines.DGX_H100));
        Placement p = s.placed(Claim.builder("all").gpus(8).exclusive().build());
        for (Slice slice : p.slices()) {
            check(slice.memoryBytes() == 80 * GpuDevice.GIB, "each slice of an exclusive claim is 80 GiB, one is "
                    + Describe.bytes(slice.memoryBytes()));
        }
        s.refused(gib("t1", 1), "every GPU is held exclusively");
        s.release("all");
        s.placed(gib("t2", 1));
        s.refused(Claim.builder("all-again").gpus(8).exclusive().build(), "one GPU has a tenant");
    }

    // ====================================================================== 3. selectors

    @Test
    @DisplayName("rule 3.01: honours GPU model selectors")
    public void rule_3_01_honoursModelSelectors() {
        CheckedScheduler s = start(FakeCluster.of(Machines.GN7_2XLARGE32, Machines.GN10XP_2XLARGE40));
        s.placed(Claim.builder("v100").memoryGiB(1).selectors(Selectors.builder().includeModel(Machines.V100_SXM2_32GB)
                .build()).build());
        s.placed(Claim.builder("not-t4").memoryGiB(1).selectors(Selectors.builder().excludeModel(Machines.T4).build())
                .build());
        s.refused(Claim.builder("a100").memoryGiB(1).selectors(Selectors.builder().includeModel(QgpuGens.ABSENT_MODEL)
                .build()).build(), "no GPU of that model");
        s.placed(Claim.builder("t4").memoryGiB(1).selectors(Selectors.builder().includeModel(Machines.T4)
                .excludeModel(Machines.V100_SXM2_32GB).build()).build());
    }

    @Test
    @DisplayName("rule 3.02: honours GPU UUID selectors")
    public void rule_3_02_honoursUuidSelectors() {
        Inventory inv = FakeCluster.of(Machines.PCIE_4X_T4);
        CheckedScheduler s = start(inv);
        List<GpuDevice> gpus = inv.nodes().get(0).gpus();
        s.placed(Claim.builder("on-2").memoryGiB(1).selectors(Selectors.builder().includeUuid(gpus.get(2).uuid())
                .build()).build());
        s.placed(Claim.builder("on-3").memoryGiB(1).selectors(Selectors.builder().excludeUuid(gpus.get(0).uuid())
                .excludeUuid(gpus.get(1).uuid()).excludeUuid(gpus.get(2).uuid()).build()).build());
        s.refused(Claim.builder("nowhere").memoryGiB(1).selectors(Selectors.builder().includeUuid("GPU-absent")
                .build()).build(), "no GPU with that UUID");
    }

    @Test
    @DisplayName("rule 3.03: honours node label selectors")
    public void rule_3_03_honoursNodeLabels() {
        Inventory inv = FakeCluster.builder()
                .nodes(Machines.GN7_2XLARGE32, 1, g -> g.prefix("a").label("pool", "a"))
                .nodes(Machines.GN7_2XLARGE32, 1, g -> g.prefix("b").label("pool", "b"))
                .build();
        CheckedScheduler s = start(inv);
        Placement p = s.placed(Claim.builder("in-b").memoryGiB(1).selectors(Selectors.builder().nodeLabel("pool", "b")
                .build()).build());
        check(p.nodeName().equals("b-0"), "in-b asked for pool=b, is on " + p.nodeName());
        s.refused(Claim.builder("in-c").memoryGiB(1).selectors(Selectors.builder().nodeLabel("pool", "c").build())
                .build(), "no node has pool=c");
    }

    // ====================================================================== 4. priority classes

    @Test
    @DisplayName("rule 4.01: guaranteed compute is admitted per priority class")
    public void rule_4_01_guaranteedComputeIsAdmittedPerClass() {
        requires(Capability.PRIORITY_CLASSES, "4.01");
        CheckedScheduler s = start(FakeCluster.of(Machines.GN7_2XLARGE32));
        s.placed(Claim.builder("on1").memoryGiB(1).compute(60, 60).priority(PriorityClass.ONLINE).build());
        s.placed(Claim.builder("off1").memoryGiB(1).compute(60, 60).priority(PriorityClass.OFFLINE).build());
        s.refused(Claim.builder("on2").memoryGiB(1).compute(50, 50).priority(PriorityClass.ONLINE).build(),
                "online 60% + 50% > 100%");
        s.placed(Claim.builder("on3").memoryGiB(1).compute(40, 40).priority(PriorityClass.ONLINE).build());
    }

    @Test
    @DisplayName("rule 4.02: GPUs kept for a priority class hold only that class")
    public void rule_4_02_honoursGpusKeptForAClass() {
        requires(Capability.PRIORITY_CLASSES, "4.02");
        Inventory inv = FakeCluster.builder()
                .nodes(Machines.GN7_2XLARGE32, 1, g -> g.prefix("online").reservedFor(PriorityClass.ONLINE))
                .nodes(Machines.GN7_2XLARGE32, 1, g -> g.prefix("shared"))
                .build();
        CheckedScheduler s = start(inv);
        Placement p = s.placed(Claim.builder("off1").memoryGiB(16).build());
        check(p.nodeName().equals("shared-0"), "offline off1 must avoid the GPU kept for online, is on " + p.nodeName());
        s.refused(gib("off2", 1), "the only GPU with room is kept for online tenants");
        s.placed(Claim.builder("on1").memoryGiB(1).priority(PriorityClass.ONLINE).build());
    }

    // ====================================================================== 5. locality labels

    @Test
    @DisplayName("rule 5.01: tenants with one affinity label share one GPU set")
    public void rule_5_01_affinityCoLocates() {
        requires(Capability.LOCALITY_LABELS, "5.01");
        CheckedScheduler s = start(FakeCluster.of(Machines.PCIE_4X_T4));
        Locality x = Locality.none().withAffinity("x");
        s.placed(Claim.builder("x1").memoryGiB(4).locality(x).build());
        s.placed(Claim.builder("x2").memoryGiB(4).locality(x).build());
        s.placed(Claim.builder("x3").memoryGiB(8).locality(x).build());
        s.refused(Claim.builder("x4").memoryGiB(1).locality(x).build(), "the GPU of affinity group x is full");
        s.placed(gib("free", 1));
    }

    @Test
    @DisplayName("rule 5.02: tenants with one anti-affinity label never share a GPU")
    public void rule_5_02_antiAffinitySeparates() {
        requires(Capability.LOCALITY_LABELS, "5.02");
        CheckedScheduler s = start(FakeCluster.of(Machines.PCIE_4X_T4));
        Locality r = Locality.none().withAntiAffinity("replicas");
        for (int i = 1; i <= 4; i++) {
            s.placed(Claim.builder("r" + i).memoryGiB(1).locality(r).build());
        }
        s.refused(Claim.builder("r5").memoryGiB(1).locality(r).build(), "each of the 4 GPUs has a replica");
        s.placed(gib("other", 1));
    }

    @Test
    @DisplayName("rule 5.03: a GPU holds tenants of one exclusion label only")
    public void rule_5_03_exclusionDedicatesGpus() {
        requires(Capability.LOCALITY_LABELS, "5.03");
        CheckedScheduler s = start(FakeCluster.of(Machines.GN7_10XLARGE160));
        s.placed(Claim.builder("a1").memoryGiB(1).locality(Locality.none().withExclusion("team-a")).build());
        s.placed(gib("plain", 1));
        s.refused(Claim.builder("b1").memoryGiB(1).locality(Locality.none().withExclusion("team-b")).build(),
                "one GPU is team-a's, the other holds an unlabelled tenant");
        s.placed(Claim.builder("a2").memoryGiB(1).locality(Locality.none().withExclusion("team-a")).build());
    }

    // ====================================================================== 6. topology

    @Test
    @DisplayName("rule 6.01: a multi-GPU claim gets the best-linked free GPUs")
    public void rule_6_01_pairsTheBestLinkedGpus() {
        requires(Capability.TOPOLOGY, "6.01");
        requires(Capability.MULTI_GPU, "6.01");
        expectBestLinked(FakeCluster.of(Machines.PCIE_4X_T4), 2);
        expectBestLinked(FakeCluster.of(Machines.DGX_1V), 2);
        expectBestLinked(FakeCluster.builder().nodes(Machines.PCIE_4X_T4, 1, g -> g.unhealthyGpus(1)).build(), 2);
        expectBestLinked(FakeCluster.of(Machines.DGX_1V), 3);
    }

    @Test
    @DisplayName("rule 6.02: a 4-GPU claim on a DGX-1V stays inside an NVLink quad")
    public void rule_6_02_keepsFourGpusInsideAnNvLinkQuad() {
        requires(Capability.TOPOLOGY, "6.02");
        requires(Capability.MULTI_GPU, "6.02");
        Inventory inv = FakeCluster.of(Machines.DGX_1V);
        CheckedScheduler s = start(inv);
        Placement p = s.placed(Claim.builder("quad").gpus(4).memoryGiB(8).build());
        checkAllNvLinked(s, p);
        s.release("quad");
        s.placed(pinned("gpu0", inv, "dgx-1v-0", 0));
        Placement q = s.placed(Claim.builder("quad2").gpus(4).memoryGiB(8).build());
        checkAllNvLinked(s, q);
    }

    // ====================================================================== helpers

    /** {@code Class#method} of the concrete test for a rule method, for failure messages. */
    protected final String ruleName(String method) {
        return getClass().getName() + "#" + method;
    }

    /** The factory the property rules use: {@link #createScheduler}, checked for null. */
    protected final SchedulerFactory factory() {
        return (rules, nodes) -> {
            SchedulerUnderTest s = createScheduler(rules, nodes);
            if (s == null) {
                throw new AssertionError(getClass().getName() + ".createScheduler returned null");
            }
            return s;
        };
    }

    /** Claim options matching {@link #capabilities()}. */
    protected ClaimOptions claimOptions() {
        Set<Capability> caps = capabilities();
        return ClaimOptions.defaults()
                .withMaxGpus(caps.contains(Capability.MULTI_GPU) ? 4 : 1)
                .withPriorities(caps.contains(Capability.PRIORITY_CLASSES)
                        ? List.of(PriorityClass.OFFLINE, PriorityClass.ONLINE) : List.of(PriorityClass.OFFLINE))
                .withLocality(caps.contains(Capability.LOCALITY_LABELS));
    }

    /** Inventory options matching {@link #capabilities()}. */
    protected InventoryOptions inventoryOptions() {
        return InventoryOptions.defaults().withReservedFor(capabilities().contains(Capability.PRIORITY_CLASSES));
    }

    private Gen<Scenario> scenarios() {
        return QgpuGens.scenarios(inventoryOptions(), claimOptions(), maxOperations());
    }

    private CheckedScheduler start(Inventory inv) {
        return CheckedScheduler.create(factory(), inv);
    }

    private void requires(Capability c, String rule) {
        Assumptions.assumeTrue(capabilities().contains(c), () -> "rule " + rule + " skipped: "
                + getClass().getSimpleName() + " does not declare capability " + c
                + " (add it to capabilities() if the scheduler supports it)");
    }

    private static void check(boolean condition, String message) {
        if (!condition) {
            throw new AssertionError(message);
        }
    }

    private static Claim gib(String id, int gib) {
        return Claim.builder(id).memoryGiB(gib).build();
    }

    private static Claim exclusive(String id, int gpus) {
        return Claim.builder(id).gpus(gpus).exclusive().build();
    }

    /** A whole-GPU claim pinned by UUID to GPU {@code index} of {@code node}. */
    private static Claim pinned(String id, Inventory inv, String node, int index) {
        String uuid = inv.nodes().stream().filter(n -> n.name().equals(node)).findFirst().orElseThrow()
                .gpus().get(index).uuid();
        return Claim.builder(id).exclusive().selectors(Selectors.builder().includeUuid(uuid).build()).build();
    }

    /** On a fresh scheduler over the one-node inventory, a k-GPU claim's weakest link is the best possible. */
    private void expectBestLinked(Inventory inv, int k) {
        CheckedScheduler s = start(inv);
        Node node = inv.nodes().get(0);
        Placement p = s.placed(Claim.builder("k" + k).gpus(k).memoryGiB(1).build());
        List<Integer> positions = new ArrayList<>();
        for (String u : p.gpuUuids()) {
            positions.add(node.positionOf(u));
        }
        List<Integer> healthy = new ArrayList<>();
        for (int i = 0; i < node.gpus().size(); i++) {
            if (node.gpus().get(i).healthy()) {
                healthy.add(i);
            }
        }
        int best = bestWeakestLink(node, healthy, k, 0, new ArrayList<>());
        int got = weakestLink(node, positions);
        check(got == best, "on an empty " + Describe.node(node) + " a " + k + "-GPU claim got GPUs " + positions
                + " whose weakest link is " + label(node, positions) + "; a set with a stronger weakest link exists"
                + " (link quality " + got + " < " + best + ")");
    }

    private void checkAllNvLinked(CheckedScheduler s, Placement p) {
        Node node = s.node(p.nodeName());
        List<Integer> positions = p.gpuUuids().stream().map(node::positionOf).toList();
        for (int i = 0; i < positions.size(); i++) {
            for (int j = i + 1; j < positions.size(); j++) {
                if (!(node.topology().link(positions.get(i), positions.get(j)) instanceof io.qgpu.api.GpuLink.NvLink)) {
                    throw new AssertionError(p.tenantId() + " got GPUs " + positions + " of " + node.name()
                            + ", but GPUs " + positions.get(i) + " and " + positions.get(j) + " are linked by "
                            + node.topology().link(positions.get(i), positions.get(j)).label()
                            + "; a 4-GPU claim fits inside an NVLink quad (0-3 or 4-7)");
                }
            }
        }
    }

    private static int bestWeakestLink(Node node, List<Integer> usable, int k, int from, List<Integer> chosen) {
        if (chosen.size() == k) {
            return weakestLink(node, chosen);
        }
        int best = Integer.MIN_VALUE;
        for (int i = from; i < usable.size(); i++) {
            chosen.add(usable.get(i));
            best = Math.max(best, bestWeakestLink(node, usable, k, i + 1, chosen));
            chosen.remove(chosen.size() - 1);
        }
        return best;
    }

    private static int weakestLink(Node node, List<Integer> positions) {
        int min = Integer.MAX_VALUE;
        for (int i = 0; i < positions.size(); i++) {
            for (int j = i + 1; j < positions.size(); j++) {
                min = Math.min(min, node.topology().link(positions.get(i), positions.get(j)).quality());
            }
        }
        return min;
    }

    private static String label(Node node, List<Integer> positions) {
        String worst = "";
        int min = Integer.MAX_VALUE;
        for (int i = 0; i < positions.size(); i++) {
            for (int j = i + 1; j < positions.size(); j++) {
                int q = node.topology().link(positions.get(i), positions.get(j)).quality();
                if (q < min) {
                    min = q;
                    worst = node.topology().link(positions.get(i), positions.get(j)).label();
                }
            }
        }
        return worst;
    }
}
