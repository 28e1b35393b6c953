package io.qgpu.core.placement;

import static io.qgpu.core.placement.Nodes.GIB;
import static io.qgpu.core.placement.Nodes.on;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuState;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.NodeRejection;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Selectors;
import io.qgpu.api.placement.GpuSet;
import io.qgpu.core.ledger.Ledger;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** Placement with host resources: feasibility, host-only claims, refusal reasons, explain; full GPUs score 1. */
class PlacementHostTest {

    private static Node t4(String name, long cpuMillis, long hostGiB) {
        Node base = Nodes.t4(name, 2);
        return Node.builder(name).labels(base.labels()).gpus(base.gpus()).link(0, 1, base.topology().link(0, 1))
                .cpuMillis(cpuMillis).hostMemoryGiB(hostGiB).build();
    }

    private static Claim gpuClaim(String id, long cpuMillis, long hostGiB) {
        return Claim.builder(id).memoryGiB(2).compute(10, 100).cpuMillis(cpuMillis).hostMemoryGiB(hostGiB).build();
    }

    private static Placement placed(PlacementResult r) {
        return assertInstanceOf(PlacementResult.Placed.class, r, () -> r instanceof PlacementResult.Unschedulable u
                ? u.summary() : "").placement();
    }

    @Test
    void aNodeWithoutEnoughCpuOrHostMemoryIsNotACandidate() {
        // binpack would prefer the busier "a"; its CPU is nearly gone
        Node a = t4("a", 2000, 64);
        Node b = t4("b", 8000, 64);
        Ledger l = Ledger.create(List.of(a, b));
        assertTrue(l.reserve(on(gpuClaim("busy", 1500, 1), a, 0)).reserved());
        PlacementEngine e = PlacementEngine.builder(l).policies(PlacementPolicy.BINPACK, PlacementPolicy.BINPACK).build();
        assertEquals("a", placed(e.place(gpuClaim("small", 500, 1))).nodeName(), "fits exactly");
        assertEquals("b", placed(e.place(gpuClaim("next", 500, 1))).nodeName());
        assertEquals(OptionalLong.of(0), l.node("a").orElseThrow().cpuMillisFree());
        // host memory the same way
        assertEquals("b", placed(e.place(gpuClaim("mem", 1, 63))).nodeName());
    }

    @Test
    void refusalReasonsNameTheHostShortfallWithQuantities() {
        Node a = t4("a", 1000, 4);
        Ledger l = Ledger.create(List.of(a));
        PlacementResult r = PlacementEngine.create(l).place(gpuClaim("big", 1500, 6));
        PlacementResult.Unschedulable u = assertInstanceOf(PlacementResult.Unschedulable.class, r);
        NodeRejection why = u.nodes().get("a");
        assertEquals(List.of(new Reason(ReasonCode.INSUFFICIENT_CPU, "a", 1500, 1000, "CPU on the node"),
                new Reason(ReasonCode.INSUFFICIENT_HOST_MEMORY, "a", 6 * GIB, 4 * GIB, "host memory on the node")),
                why.nodeReasons());
        assertTrue(why.gpuReasons().isEmpty(), "the GPUs themselves could take it");
        assertTrue(u.summary().contains("a: INSUFFICIENT_CPU requested 1500 millicores, free 1000 millicores (short by 500 millicores)"),
                u.summary());
    }

    @Test
    void hostOnlyClaimsGoToNodesWithOrWithoutGpus() {
        Node gpu = t4("gpu", 4000, 16);
        Node cpu = Node.builder("cpu").label("pool", "cpu").cpuMillis(2000).hostMemoryGiB(8).build();
        Ledger l = Ledger.create(List.of(gpu, cpu));
        PlacementEngine e = PlacementEngine.create(l);
        Claim onCpu = Claim.builder("etl").hostOnly().cpuMillis(1500).hostMemoryGiB(2)
                .selectors(Selectors.builder().nodeLabel("pool", "cpu").build()).build();
        Placement p = placed(e.place(onCpu));
        assertEquals("cpu", p.nodeName());
        assertEquals(List.of(), p.slices());
        assertEquals(OptionalLong.of(500), l.node("cpu").orElseThrow().cpuMillisFree());
        // too big for "cpu" now: goes to the GPU node, whose GPUs stay empty
        Placement q = placed(e.place(Claim.builder("etl2").hostOnly().cpuMillis(1000).build()));
        assertEquals("gpu", q.nodeName());
        assertTrue(l.node("gpu").orElseThrow().gpus().stream().allMatch(GpuState::isEmpty));
        // nowhere: node reasons only, no GPU count shortfall for a claim without GPUs
        PlacementResult.Unschedulable u = assertInstanceOf(PlacementResult.Unschedulable.class,
                e.place(Claim.builder("huge").hostOnly().cpuMillis(5000).build()));
        for (NodeRejection r : u.nodes().values()) {
            assertEquals(List.of(ReasonCode.INSUFFICIENT_CPU), r.all().stream().map(Reason::code).toList(), r.summary());
        }
        e.release("etl");
        assertEquals(OptionalLong.of(2000), l.node("cpu").orElseThrow().cpuMillisFree());
    }

    @Test
    void explainShowsHostResourcesOfCandidatesAndRefusals() {
        Node a = t4("a", 1000, 16);
        Node b = t4("b", 4000, 16);
        Node u = Nodes.t4("u", 2);   // host resources not tracked
        Ledger l = Ledger.create(List.of(a, b, u));
        PlacementExplanation x = PlacementEngine.create(l).explain(gpuClaim("c", 2000, 4));
        assertEquals(List.of("b", "u"), x.candidates().stream().map(PlacementExplanation.Candidate::node).sorted().toList());
        PlacementExplanation.Term host = x.candidates().stream().filter(c -> c.node().equals("b")).findFirst().orElseThrow()
                .terms().stream().filter(t -> t.scorer().equals("host-resources")).findFirst().orElseThrow();
        assertEquals(0.0, host.weight());
        assertEquals("fits (not scored): CPU requested 2000 millicores, free 4000 of 4000 millicores; host memory requested "
                + "4.00 GiB, free 16.00 GiB of 16.00 GiB", host.why());
        String untracked = x.candidates().stream().filter(c -> c.node().equals("u")).findFirst().orElseThrow()
                .terms().stream().filter(t -> t.scorer().equals("host-resources")).findFirst().orElseThrow().why();
        assertTrue(untracked.contains("not tracked on this node"), untracked);
        assertEquals(ReasonCode.INSUFFICIENT_CPU, x.rejected().get("a").nodeReasons().get(0).code());
        // a host-only claim's candidate has no GPUs and no set terms
        PlacementExplanation h = PlacementEngine.create(l).explain(Claim.builder("h").hostOnly().cpuMillis(100).build());
        PlacementExplanation.Candidate chosen = h.chosen().orElseThrow();
        assertEquals(GpuSet.empty(), chosen.gpus());
        assertEquals(0.0, chosen.setScore());
        assertTrue(h.table().contains("host-resources"), h.table());
    }

    @Test
    void aGpuFullOfSmallSharesCountsAsFullInEveryLoadScore() {
        GranularityRules rules = GranularityRules.custom().name("many").maxTenantsPerGpu(32).memoryPerTenantSlotBytes(0).build();
        Node n = Nodes.t4("a", 2);
        Ledger l = Ledger.create(rules, List.of(n));
        for (int i = 0; i < 10; i++) {   // 10 x (1 GiB, 10% offline): compute full, memory 10/16, slots 10/32
            assertTrue(l.reserve(on(Nodes.claim("s" + i, 1, 10, 100), n, 0)).reserved());
        }
        GpuState full = l.node("a").orElseThrow().gpu(0);
        assertEquals(1.0, PlacementScores.gpuLoad(full, rules), "was 0.9 + 0.1 x mean(0.625, 1, 0.31) = 0.98 before");
        assertEquals(0.5, PlacementScores.nodeLoad(l.node("a").orElseThrow(), rules));
        // binpack of an online claim (its own class has room there) takes the full GPU: its GPU term is 1
        PlacementEngine e = PlacementEngine.builder(l).policies(PlacementPolicy.BINPACK, PlacementPolicy.BINPACK).build();
        Claim online = Claim.builder("on").memoryGiB(1).compute(10, 100).priority(PriorityClass.ONLINE).build();
        PlacementExplanation x = e.explain(online);
        PlacementExplanation.Term gpuTerm = x.chosen().orElseThrow().terms().stream()
                .filter(t -> t.scorer().equals("gpu-binpack")).findFirst().orElseThrow();
        assertEquals(1.0, gpuTerm.value());
        assertTrue(gpuTerm.why().contains("0:1.000"), gpuTerm.why());
        PlacementExplanation.Term nodeTerm = x.chosen().orElseThrow().terms().stream()
                .filter(t -> t.scorer().equals("node-binpack")).findFirst().orElseThrow();
        assertEquals(0.5, nodeTerm.value());
        // the index key carries the same node load
        NodeSummary s = NodeSummary.of(l.node("a").orElseThrow(), null, rules);
        assertEquals(0.5, NodeIndex.load(s.key(false)), 1.0 / 65535);
        assertEquals(List.of("a-g0"), placed(e.place(online)).gpuUuids());
        assertFalse(l.node("a").orElseThrow().gpu(1).holdings().stream().anyMatch(h -> h.tenantId().equals("on")));
    }
}
