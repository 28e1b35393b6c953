package io.qgpu.testkit.contract;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Locality;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Selectors;
import io.qgpu.api.Slice;
import io.qgpu.json.Inventory;
import io.qgpu.testkit.invariants.CheckedScheduler;
import io.qgpu.testkit.invariants.SchedulerUnderTest;
import io.qgpu.testkit.machines.FakeCluster;
import io.qgpu.testkit.machines.Machines;
import io.qgpu.testkit.property.Describe;
import io.qgpu.testkit.property.QgpuGens;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
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
 *   <li><b>1.x capacity and protocol</b> (always, but 1.19): places what fits (1.01), answers about the claim
 *       asked for (1.02), never oversubscribes memory (1.03), guaranteed compute (1.04) or tenants
 *       per GPU (1.05), follows the granularity rules it is given (1.06), exclusive claims take whole
 *       empty GPUs (1.07), off-grid sizes are refused (1.08), unhealthy GPUs get nothing (1.09),
 *       release restores capacity (1.10) and is idempotent (1.11), a tenant id is placed once (1.12),
 *       a refusal leaves no trace (1.13); seeded properties: release restores capacity (1.14), random
 *       place/release sequences keep every invariant (1.15), the same input gives the same placements
 *       (1.16), a claim that fits an empty cluster is placed (1.17); a MIG instance (UUID
 *       {@code MIG-...}) holds one tenant unless the rules share MIG instances (1.18); with
 *       {@link Capability#HOST_RESOURCES}, a node's CPU and host memory are never oversubscribed and a
 *       host-only claim takes no GPU (1.19).</li>
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
public abstract class SchedulerContractSuite extends CapacityRules {
    /** For the subclass that names the scheduler under test. */
    protected SchedulerContractSuite() {
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

}
