package io.qgpu.core.publicapi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.Gang;
import io.qgpu.api.GangResult;
import io.qgpu.api.GangScope;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.Locality;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PreemptionPlan;
import io.qgpu.api.PreemptionResult;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Slice;
import io.qgpu.api.TopologyLevel;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.GangPlacer;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.core.placement.PreemptionPlanner;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Gangs and preemption plans try their moves on a copy of the ledger; these cases, through the
 * exported API only, need the copy to be faithful to host resources (CPU, host memory), host-only
 * tenants and affinity labels bound on a node other than the one tried.
 *
 * <p>Each test failed on the copy that rebuilt tenants from their GPU holdings only (the removed
 * {@code ScratchCluster}), checked by running this class against it before it was replaced: the
 * gangs answered {@code Unschedulable} with {@code CONFLICT} ("the ledger refused the gang's commit 8
 * times"), and the plans were proposed on the wrong node or without the needed victim and answered
 * {@code Stale} at commit ({@code INSUFFICIENT_CPU}, {@code INSUFFICIENT_HOST_MEMORY}, {@code AFFINITY}).
 */
class ScratchCopyRegressionTest {

    private static Node node(String name, int gpus, long cpuMillis, long hostMemoryGiB, String rack) {
        Node.Builder b = Node.builder(name).label("rack", rack).defaultLink(new GpuLink.Pcie(TopologyLevel.HOSTBRIDGE));
        if (cpuMillis > 0) {
            b.cpuMillis(cpuMillis);
        }
        if (hostMemoryGiB > 0) {
            b.hostMemoryGiB(hostMemoryGiB);
        }
        for (int i = 0; i < gpus; i++) {
            b.gpu(GpuDevice.builder(name + "-g" + i).index(i).model("Tesla T4").memoryGiB(16).build());
        }
        return b.build();
    }

    /** The claim on the GPUs at {@code positions} of {@code node}, one slice each. */
    private static Placement on(Claim c, Node node, int... positions) {
        List<Slice> slices = new ArrayList<>();
        for (int p : positions) {
            GpuDevice g = node.gpus().get(p);
            long mem = c.exclusive() ? g.memoryBytes() : c.memoryPerGpuBytes();
            slices.add(new Slice(g.uuid(), mem, c.computeRequest(), c.computeLimit()));
        }
        return new Placement(c, node.name(), slices);
    }

    private static void reserve(Ledger l, Placement p) {
        assertTrue(l.reserve(p).reserved(), p::toString);
    }

    private static GangResult.Placed placed(GangResult r) {
        return assertInstanceOf(GangResult.Placed.class, r, () -> r instanceof GangResult.Unschedulable u ? u.summary() : "");
    }

    private static Set<String> nodesOf(GangResult.Placed p) {
        return p.placements().stream().map(Placement::nodeName).collect(Collectors.toSet());
    }

    private static PreemptionResult.Committed committed(PreemptionPlanner planner, Claim claim) {
        PreemptionPlan plan = planner.plan(claim);
        PreemptionPlan.Proposed proposed = assertInstanceOf(PreemptionPlan.Proposed.class, plan, plan::toString);
        PreemptionResult r = planner.commit(proposed);
        return assertInstanceOf(PreemptionResult.Committed.class, r, r::toString);
    }

    // ------------------------------------------------------------------ host resources

    /** Node a's CPU (or host memory) is mostly taken by a GPU tenant: only node b takes both members. */
    private static void sameNodeGangAvoidsTheNodeWithoutHostRoom(boolean cpu) {
        Node a = node("a", 2, cpu ? 4_000 : 0, cpu ? 0 : 32, "r1");
        Node b = node("b", 2, cpu ? 4_000 : 0, cpu ? 0 : 32, "r1");
        Ledger l = Ledger.create(List.of(a, b));
        Claim.Builder bg = Claim.builder("bg").memoryGiB(2).compute(10, 100);
        reserve(l, on((cpu ? bg.cpuMillis(3_000) : bg.hostMemoryGiB(24)).build(), a, 0));
        Gang.Builder g = Gang.builder("job").together(GangScope.sameNode());
        for (int i = 0; i < 2; i++) {
            Claim.Builder m = Claim.builder("job-" + i).memoryGiB(2).compute(10, 100);
            g.member((cpu ? m.cpuMillis(1_000) : m.hostMemoryGiB(6)).build());
        }
        GangResult.Placed p = placed(new GangPlacer(PlacementEngine.create(l)).place(g.build()));
        assertEquals(Set.of("b"), nodesOf(p));
    }

    @Test
    void aGangIsNotRefusedWithConflictWhenANodeDeclaresCpu() {
        sameNodeGangAvoidsTheNodeWithoutHostRoom(true);
    }

    @Test
    void aGangIsNotRefusedWithConflictWhenANodeDeclaresHostMemory() {
        sameNodeGangAvoidsTheNodeWithoutHostRoom(false);
    }

    @Test
    void aPlanOnANodeWithHostCpuEvictsWhatTheCpuNeeds() {
        Node a = node("a", 1, 4_000, 0, "r1");
        Ledger l = Ledger.create(List.of(a));
        reserve(l, on(Claim.builder("low").memoryGiB(8).compute(10, 100).cpuMillis(3_000).build(), a, 0));
        PreemptionPlanner planner = new PreemptionPlanner(PlacementEngine.create(l));
        // the GPU has room; the CPU does not until "low" goes
        Claim hi = Claim.builder("hi").memoryGiB(4).compute(10, 100).cpuMillis(2_000).priority(PriorityClass.ONLINE).build();
        PreemptionResult.Committed done = committed(planner, hi);
        assertEquals(List.of("low"), done.evicted().stream().map(Placement::tenantId).toList());
        assertEquals("a", l.placement("hi").orElseThrow().nodeName());
    }

    @Test
    void aPlanOnANodeWithHostMemoryIsNotStaleAtCommit() {
        Node a = node("a", 1, 0, 32, "r1");
        Ledger l = Ledger.create(List.of(a));
        reserve(l, on(Claim.builder("low").memoryGiB(8).compute(10, 100).hostMemoryGiB(28).build(), a, 0));
        PreemptionPlanner planner = new PreemptionPlanner(PlacementEngine.create(l));
        Claim hi = Claim.builder("hi").memoryGiB(4).compute(10, 100).hostMemoryGiB(8).priority(PriorityClass.ONLINE).build();
        PreemptionResult.Committed done = committed(planner, hi);
        assertEquals(List.of("low"), done.evicted().stream().map(Placement::tenantId).toList());
    }

    // ------------------------------------------------------------------ host-only tenants

    @Test
    void aHostOnlyTenantIsAnEvictionCandidate() {
        Node a = node("a", 1, 4_000, 16, "r1");
        Ledger l = Ledger.create(List.of(a));
        reserve(l, new Placement(Claim.builder("cpu-hog").hostOnly().cpuMillis(3_500).build(), "a", List.of()));
        PreemptionPlanner planner = new PreemptionPlanner(PlacementEngine.create(l));
        Claim hi = Claim.builder("hi").memoryGiB(4).compute(10, 100).cpuMillis(2_000).priority(PriorityClass.ONLINE).build();
        PreemptionResult.Committed done = committed(planner, hi);
        assertEquals(List.of("cpu-hog"), done.evicted().stream().map(Placement::tenantId).toList());
        assertTrue(l.placement("cpu-hog").isEmpty());
    }

    @Test
    void aHostOnlyClaimCanEvictAHostOnlyTenant() {
        Node a = node("a", 1, 4_000, 16, "r1");
        Ledger l = Ledger.create(List.of(a));
        reserve(l, new Placement(Claim.builder("cpu-hog").hostOnly().cpuMillis(3_500).build(), "a", List.of()));
        PreemptionPlanner planner = new PreemptionPlanner(PlacementEngine.create(l));
        Claim hi = Claim.builder("hi").hostOnly().cpuMillis(1_000).priority(PriorityClass.ONLINE).build();
        PreemptionResult.Committed done = committed(planner, hi);
        assertEquals(List.of("cpu-hog"), done.evicted().stream().map(Placement::tenantId).toList());
    }

    // ------------------------------------------------------------------ affinity bound on another node

    @Test
    void aPlanFollowsAnAffinityLabelBoundOnAnotherNode() {
        Node a = node("a", 1, 0, 0, "r1");
        Node b = node("b", 1, 0, 0, "r1");
        Ledger l = Ledger.create(List.of(a, b));
        // x1 (online, priority 5 within the class) binds L to b-g0 and may not be evicted by hi
        reserve(l, on(Claim.builder("x1").memoryGiB(4).compute(10, 100).locality(Locality.of("L", null, null))
                .priority(PriorityClass.ONLINE).priorityWithinClass(5).build(), b, 0));
        reserve(l, on(Claim.builder("low").memoryGiB(10).compute(10, 100).build(), b, 0));
        PreemptionPlanner planner = new PreemptionPlanner(PlacementEngine.create(l));
        // node a is empty, but the label L holds b-g0: only evicting "low" there makes room
        Claim hi = Claim.builder("hi").memoryGiB(4).compute(10, 100).locality(Locality.of("L", null, null))
                .priority(PriorityClass.ONLINE).build();
        PreemptionResult.Committed done = committed(planner, hi);
        assertEquals(List.of("low"), done.evicted().stream().map(Placement::tenantId).toList());
        assertEquals(List.of("b-g0"), l.placement("hi").orElseThrow().gpuUuids());
    }

    private static Gang labelledGang(GangScope scope) {
        return Gang.builder("job").together(scope)
                .member(Claim.builder("job-0").memoryGiB(4).compute(10, 100).locality(Locality.of("L", null, null)).build())
                .member(Claim.builder("job-1").memoryGiB(4).compute(10, 100).build())
                .build();
    }

    @Test
    void aSameNodeGangFollowsAnAffinityLabelBoundOnAnotherNode() {
        Node a = node("a", 2, 0, 0, "r1");
        Node b = node("b", 2, 0, 0, "r1");
        Ledger l = Ledger.create(List.of(a, b));
        reserve(l, on(Claim.builder("x1").memoryGiB(4).compute(10, 100).locality(Locality.of("L", null, null)).build(), b, 0));
        GangResult.Placed p = placed(new GangPlacer(PlacementEngine.create(l)).place(labelledGang(GangScope.sameNode())));
        assertEquals(Set.of("b"), nodesOf(p));
        assertEquals(List.of("b-g0"), l.placement("job-0").orElseThrow().gpuUuids());
    }

    @Test
    void aSameLabelGangFollowsAnAffinityLabelBoundInAnotherRack() {
        Node a = node("a", 2, 0, 0, "r1");
        Node b = node("b", 2, 0, 0, "r2");
        Ledger l = Ledger.create(List.of(a, b));
        reserve(l, on(Claim.builder("x1").memoryGiB(4).compute(10, 100).locality(Locality.of("L", null, null)).build(), b, 0));
        GangResult.Placed p = placed(new GangPlacer(PlacementEngine.create(l)).place(labelledGang(GangScope.sameLabel("rack"))));
        assertEquals(Set.of("b"), nodesOf(p));
        assertEquals(List.of("b-g0"), l.placement("job-0").orElseThrow().gpuUuids());
    }
}
