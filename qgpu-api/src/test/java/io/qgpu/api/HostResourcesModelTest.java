package io.qgpu.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Host resources in the model: node capacity, claim requests, host-only claims, their validation. */
class HostResourcesModelTest {

    private static InvalidValueException refused(Executable e) {
        return assertThrows(InvalidValueException.class, e);
    }

    @Test
    void nodeDeclaresHostCapacityOrLeavesItUntracked() {
        Node plain = Node.builder("n").build();
        assertTrue(plain.host().isUntracked());
        assertEquals(List.of(), plain.gpus());
        Node cpu = Node.builder("c").cpuMillis(32_000).build();
        assertEquals(OptionalLong.of(32_000), cpu.host().cpuMillis());
        assertEquals(OptionalLong.empty(), cpu.host().memoryBytes());
        Node both = Node.builder("b").cpuMillis(0).hostMemoryGiB(64).build();
        assertEquals(HostCapacity.of(0, 64L << 30), both.host());
        // the compatibility constructor keeps host resources untracked; a health change keeps the capacity
        assertTrue(new Node("x", Map.of(), List.of(), Topology.builder(0).build()).host().isUntracked());
        Node g = Node.builder("g").gpu(GpuDevice.builder("G0").memoryGiB(16).build()).cpuMillis(8000).build();
        assertEquals(g.host(), g.withGpuHealth("G0", Health.UNHEALTHY).host());
    }

    @Test
    void badNodeCapacityNamesTheFieldAndValue() {
        InvalidValueException e = refused(() -> Node.builder("n").cpuMillis(-1).build());
        assertEquals("node[n].host.cpuMillis", e.field());
        assertEquals(-1L, e.value());
        assertEquals("node[n].host.memoryBytes", refused(() -> Node.builder("n").hostMemoryBytes(-5).build()).field());
        assertEquals("node[n].host.memoryGiB", refused(() -> Node.builder("n").hostMemoryGiB(-5).build()).field());
        assertEquals("node.host.cpuMillis", refused(() -> HostCapacity.of(-1, 0)).field());
        assertEquals("node.host.memoryBytes", refused(() -> HostCapacity.of(0, -1)).field());
        assertEquals("node[n].host", refused(() -> new Node("n", Map.of(), List.of(), Topology.builder(0).build(), null)).field());
    }

    @Test
    void claimAsksForHostResourcesBesideItsSlices() {
        Claim c = Claim.builder("a").memoryGiB(4).compute(20, 50).cpuMillis(1500).hostMemoryGiB(2).build();
        assertEquals(new HostRequest(1500, 2L << 30), c.host());
        assertFalse(c.hostOnly());
        assertEquals(c, c.toBuilder().build());
        assertTrue(Claim.builder("b").memoryGiB(4).build().host().isNone());
        InvalidValueException e = refused(() -> Claim.builder("a").memoryGiB(4).cpuMillis(-1).build());
        assertEquals("claim[a].host.cpuMillis", e.field());
        assertEquals(-1L, e.value());
        assertEquals("claim[a].host.memoryBytes", refused(() -> Claim.builder("a").memoryGiB(4).hostMemoryBytes(-1).build()).field());
        assertEquals("claim[a].hostMemoryGiB", refused(() -> Claim.builder("a").hostMemoryGiB(-1)).field());
    }

    @Test
    void hostOnlyClaimHasNoGpuPart() {
        Claim c = Claim.builder("cpu").hostOnly().cpuMillis(500).build();
        assertTrue(c.hostOnly());
        assertEquals(0, c.gpuCount());
        assertEquals(0, c.memoryPerGpuBytes());
        assertEquals(0, c.computeRequest());
        assertEquals(0, c.computeLimit());
        assertEquals(c, c.toBuilder().build());
        // gpus(0) without compute set defaults the compute to 0/0
        assertEquals(c, Claim.builder("cpu").gpus(0).cpuMillis(500).build());
        Placement p = new Placement(c, "n", List.of());
        assertEquals(Map.of(Placement.ENV_VISIBLE_DEVICES, "void", Placement.ENV_PRIORITY, "offline",
                Placement.ENV_TENANT, "cpu"), p.environment());
        GranularityRules.ofDefaults().validate(c);   // no GPU sizes to check
    }

    @Test
    void hostOnlyClaimRefusesGpuAsks() {
        InvalidValueException none = refused(() -> Claim.builder("h").hostOnly().build());
        assertEquals("claim[h].host", none.field());
        assertTrue(none.rule().contains("must ask for CPU or host memory"), none.rule());
        assertEquals("claim[h].memoryPerGpuBytes",
                refused(() -> Claim.builder("h").gpus(0).memoryGiB(1).cpuMillis(1).build()).field());
        InvalidValueException compute = refused(() -> Claim.builder("h").gpus(0).compute(10, 50).cpuMillis(1).build());
        assertEquals("claim[h].computeRequest", compute.field());
        assertEquals(10, compute.value());
        assertEquals("claim[h].computeLimit", refused(() -> Claim.builder("h").gpus(0).compute(0, 50).cpuMillis(1).build()).field());
        assertEquals("claim[h].exclusive", refused(() -> Claim.builder("h").exclusive().gpus(0).cpuMillis(1).build()).field());
        assertEquals("claim[h].selectors", refused(() -> Claim.builder("h").hostOnly().cpuMillis(1)
                .selectors(Selectors.builder().includeModel("T4").build()).build()).field());
        assertEquals("claim[h].locality", refused(() -> Claim.builder("h").hostOnly().cpuMillis(1)
                .locality(Locality.none().withAntiAffinity("x")).build()).field());
        // node labels do apply to a host-only claim
        Claim labelled = Claim.builder("h").hostOnly().hostMemoryGiB(1)
                .selectors(Selectors.builder().nodeLabel("pool", "cpu").build()).build();
        assertEquals(Map.of("pool", "cpu"), labelled.selectors().nodeLabels());
        assertEquals("claim[h].gpuCount", refused(() -> Claim.builder("h").gpus(-1).memoryGiB(1).build()).field());
    }

    @Test
    void nodeStateTracksFreeHostResourcesPerDeclaredResource() {
        Node n = Node.builder("n").cpuMillis(4000).build();
        NodeState s = NodeState.empty(n);
        HostState h = s.host().with(new HostHolding("a", 1500, 1L << 30)).with(new HostHolding("b", 500, 0));
        NodeState t = new NodeState(n, s.gpus(), h);
        assertEquals(OptionalLong.of(2000), t.cpuMillisFree());
        assertEquals(OptionalLong.empty(), t.hostMemoryFree());   // not tracked, not zero
        assertEquals(1L << 30, t.host().memoryBytesUsed());
        assertEquals(OptionalLong.of(3500), new NodeState(n, s.gpus(), h.without("a")).cpuMillisFree());
        assertEquals(h, h.without("nobody"));
        assertEquals("hostState.holdings.tenantId", refused(() -> HostState.of(List.of(new HostHolding("a", 1, 1),
                new HostHolding("a", 2, 2)))).field());
        assertEquals("hostHolding[a].cpuMillis", refused(() -> new HostHolding("a", -1, 0)).field());
    }

    @Test
    void hostReasonsCarryTheirUnits() {
        assertEquals("n: INSUFFICIENT_CPU requested 1500 millicores, free 500 millicores (short by 1000 millicores)",
                Reason.shortOf(ReasonCode.INSUFFICIENT_CPU, "n", 1500, 500).message());
        assertEquals("n: INSUFFICIENT_HOST_MEMORY requested 4 GiB, free 1 GiB (short by 3 GiB)",
                Reason.shortOf(ReasonCode.INSUFFICIENT_HOST_MEMORY, "n", 4L << 30, 1L << 30).message());
    }
}
