package io.qgpu.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

class ModelValidationTest {

    private static InvalidValueException refused(Executable e) {
        return assertThrows(InvalidValueException.class, e);
    }

    private static GpuDevice gpu(String uuid, int index) {
        return GpuDevice.builder(uuid).index(index).model("Tesla T4").memoryGiB(16).build();
    }

    @Test
    void gpuDeviceNamesTheBadField() {
        InvalidValueException e = refused(() -> GpuDevice.builder("GPU-1").index(-1).model("T4").memoryGiB(16).build());
        assertEquals("gpu[GPU-1].index", e.field());
        assertEquals(-1, e.value());
        assertTrue(e.getMessage().contains("gpu[GPU-1].index = -1"), e.getMessage());
        assertEquals("gpu[GPU-1].memoryBytes", refused(() -> GpuDevice.builder("GPU-1").model("T4").build()).field());
        assertEquals("gpu.uuid", refused(() -> GpuDevice.builder(" ").memoryGiB(1).build()).field());
        assertEquals("gpu[GPU-1].numaNode", refused(() -> GpuDevice.builder("GPU-1").memoryGiB(1).numaNode(-2).build()).field());
        assertEquals("gpu[GPU-1].health", refused(() -> GpuDevice.builder("GPU-1").memoryGiB(1).health(null).build()).field());
    }

    @Test
    void nodeRefusesDuplicatesAndMissingLinks() {
        assertEquals("node[n].gpus.uuid", refused(() -> Node.builder("n").gpu(gpu("g", 0)).gpu(gpu("g", 1))
                .defaultLink(new GpuLink.NvLink(1)).build()).field());
        assertEquals("node[n].gpus[h].index", refused(() -> Node.builder("n").gpu(gpu("g", 0)).gpu(gpu("h", 0))
                .defaultLink(new GpuLink.NvLink(1)).build()).field());
        InvalidValueException missing = refused(() -> Node.builder("n").gpu(gpu("g", 0)).gpu(gpu("h", 1)).build());
        assertEquals("topology.link[0,1]", missing.field());
        Node ok = Node.builder("n").gpu(gpu("g", 0)).gpu(gpu("h", 1)).link(1, 0, new GpuLink.NvLink(2)).build();
        assertEquals(new GpuLink.NvLink(2), ok.topology().link(0, 1));
        assertEquals("topology.position", refused(() -> ok.topology().link(0, 0)).field());
        assertEquals("topology.position", refused(() -> ok.topology().link(0, 2)).field());
        assertEquals("node[n].labels key", refused(() -> Node.builder("n").label("", "x").build()).field());
    }

    @Test
    void topologyIndexesEveryPairOnce() {
        int n = 7;
        Topology.Builder b = Topology.builder(n);
        for (int a = 0; a < n; a++) {
            for (int c = a + 1; c < n; c++) {
                b.link(a, c, new GpuLink.NvLink(1 + a * n + c));
            }
        }
        Topology t = b.build();
        for (int a = 0; a < n; a++) {
            for (int c = a + 1; c < n; c++) {
                assertEquals(new GpuLink.NvLink(1 + a * n + c), t.link(a, c));
                assertEquals(t.link(a, c), t.link(c, a));
            }
        }
    }

    @Test
    void linkQualityOrdersNvlinkAbovePcie() {
        assertTrue(new GpuLink.NvLink(1).quality() > new GpuLink.Pcie(TopologyLevel.INTERNAL).quality());
        assertTrue(new GpuLink.NvLink(2).quality() > new GpuLink.NvLink(1).quality());
        assertTrue(new GpuLink.Pcie(TopologyLevel.SINGLE).quality() > new GpuLink.Pcie(TopologyLevel.SYSTEM).quality());
        assertEquals("NV18", new GpuLink.NvLink(18).label());
        assertEquals("SYS", new GpuLink.Pcie(TopologyLevel.SYSTEM).label());
        assertEquals(TopologyLevel.NODE, TopologyLevel.fromNvml(40));
        assertEquals("topologyLevel", refused(() -> TopologyLevel.fromNvml(15)).field());
        assertEquals("link.lanes", refused(() -> new GpuLink.NvLink(0)).field());
    }

    @Test
    void claimValidatesSizes() {
        assertEquals("claim[j].computeLimit", refused(() -> Claim.builder("j").memoryGiB(1).compute(40, 30).build()).field());
        assertEquals("claim[j].computeLimit", refused(() -> Claim.builder("j").memoryGiB(1).compute(40, 120).build()).field());
        assertEquals("claim[j].computeRequest", refused(() -> Claim.builder("j").memoryGiB(1).compute(-5, 30).build()).field());
        assertEquals("claim[j].memoryPerGpuBytes", refused(() -> Claim.builder("j").build()).field());
        assertEquals("claim[j].memoryGiB", refused(() -> Claim.builder("j").memoryGiB(-1)).field());
        assertEquals("claim[j].gpuCount", refused(() -> Claim.builder("j").gpus(-1).memoryGiB(1).build()).field());
        assertEquals("claim[j].gpuCount", refused(() -> Claim.builder("j").gpus(1025).memoryGiB(1).build()).field());
        // gpus(0) is a host-only claim: GPU memory is refused by that rule
        assertEquals("claim[j].memoryPerGpuBytes", refused(() -> Claim.builder("j").gpus(0).memoryGiB(1).build()).field());
        assertEquals("claim.tenantId", refused(() -> Claim.builder("").memoryGiB(1).build()).field());
        assertEquals("claim[j].priority", refused(() -> Claim.builder("j").memoryGiB(1).priority(null).build()).field());
        Claim ex = Claim.builder("e").gpus(2).exclusive().build();
        assertEquals(100, ex.computeRequest());
        assertEquals(0, ex.memoryPerGpuBytes());
        assertEquals(ex, ex.toBuilder().build());
        Claim c = Claim.builder("c").memoryGiB(2).compute(40, 70).priority(PriorityClass.ONLINE)
                .nodePolicy(PlacementPolicy.SPREAD).locality(Locality.none().withAffinity("x")).build();
        assertEquals(c, c.toBuilder().build());
    }

    @Test
    void granularityRulesAreConfigurableAndChecked() {
        GranularityRules q = GranularityRules.ofDefaults();
        assertEquals(4, q.maxTenants(gpu("t4", 0)));
        assertEquals(16, q.maxTenants(GpuDevice.builder("h").memoryGiB(80).build()));
        assertEquals(1, q.maxTenants(GpuDevice.builder("tiny").memoryGiB(2).build()));
        assertEquals(10, GranularityRules.hami().maxTenants(gpu("t4", 0)));
        assertEquals("claim[x].computeRequest", refused(() -> q.validate(Claim.builder("x").memoryGiB(1).compute(7, 100).build())).field());
        assertEquals("claim[x].memoryPerGpuBytes", refused(() -> q.validate(Claim.builder("x").memoryBytes(GpuDevice.MIB * 1536).build())).field());
        GranularityRules.hami().validate(Claim.builder("x").memoryBytes(GpuDevice.MIB * 1536).compute(7, 13).build());
        assertEquals("rules.computeUnit", refused(() -> GranularityRules.custom().computeUnit(7).build()).field());
        assertEquals("rules.preset", refused(() -> GranularityRules.preset("nope")).field());
        assertEquals(GranularityRules.gpuManager(), GranularityRules.preset("gpu-manager"));
    }

    @Test
    void aMigInstanceHoldsOneTenantUnlessTheRulesShareInstances() {
        GpuDevice mig = GpuDevice.builder("MIG-0b5c1d5e-0000-0000-0000-000000000000").model("A100 MIG 3g.40gb").memoryGiB(40).build();
        GpuDevice gpu = GpuDevice.builder("GPU-0b5c1d5e-0000-0000-0000-000000000000").memoryGiB(40).build();
        assertTrue(mig.migInstance());
        assertFalse(gpu.migInstance());
        for (GranularityRules preset : List.of(GranularityRules.ofDefaults(), GranularityRules.hami(), GranularityRules.gpuManager())) {
            assertFalse(preset.shareMigInstances(), preset.name());
            assertTrue(preset.keepsWhole(mig), preset.name());
            assertEquals(1, preset.maxTenants(mig), preset.name());
            assertFalse(preset.keepsWhole(gpu), preset.name());
        }
        GranularityRules share = GranularityRules.ofDefaults().toBuilder().shareMigInstances(true).build();
        assertFalse(share.keepsWhole(mig));
        assertEquals(10, share.maxTenants(mig), "then the slot rule: 40 GiB / 4 GiB");
        assertEquals(10, GranularityRules.ofDefaults().maxTenants(gpu));
        assertEquals(share, share.toBuilder().build(), "the builder keeps the rule and the name");
        assertEquals(share, GranularityRules.custom().name("qgpu").shareMigInstances(true).build());
        assertNotEquals(share, GranularityRules.ofDefaults(), "equals covers the rule");
        assertTrue(share.toBuilder().admitZeroRequestOnBookedGpu(true).build().shareMigInstances(), "the other rule is kept");
    }

    @Test
    void oneBuilderMakesRulesFromTheDefaultsOrFromAnyRules() {
        GranularityRules mine = GranularityRules.custom().memoryUnitBytes(512 * GpuDevice.MIB).computeUnit(1).build();
        assertEquals("custom", mine.name(), "custom() starts from qGPU's defaults, named custom");
        assertEquals(GranularityRules.ofDefaults().maxTenantsPerGpu(), mine.maxTenantsPerGpu());
        assertEquals(GranularityRules.hami(), GranularityRules.hami().toBuilder().build(), "toBuilder() keeps every rule and the name");
        assertEquals(GranularityRules.ofDefaults(), GranularityRules.custom().name("qgpu").build());
        assertEquals("rules.computeUnit", refused(() -> GranularityRules.hami().toBuilder().computeUnit(3).build()).field());
    }

    @Test
    @SuppressWarnings("deprecation")   // the deprecated ways still make the same rules
    void theDeprecatedConstructorsFromAndWithersStillWork() {
        GranularityRules share = GranularityRules.ofDefaults().toBuilder().shareMigInstances(true).build();
        assertEquals(share, GranularityRules.ofDefaults().withShareMigInstances(true));
        assertEquals(share, GranularityRules.from(share).name("qgpu").build(), "from() keeps the rule");
        assertEquals("custom", GranularityRules.from(GranularityRules.hami()).build().name(), "from() names its rules custom");
        assertEquals(GranularityRules.hami().toBuilder().name("custom").build(), GranularityRules.from(GranularityRules.hami()).build());
        assertTrue(share.withAdmitZeroRequestOnBookedGpu(true).shareMigInstances(), "the other copy keeps it");
        assertTrue(GranularityRules.ofDefaults().withAdmitZeroRequestOnBookedGpu(true).admitZeroRequestOnBookedGpu());
        assertEquals(GranularityRules.ofDefaults(), new GranularityRules("qgpu", GpuDevice.GIB, GpuDevice.GIB, 5, 16,
                4 * GpuDevice.GIB, false), "the 7-argument constructor keeps instances whole");
        assertEquals(GranularityRules.ofDefaults(), new GranularityRules("qgpu", GpuDevice.GIB, GpuDevice.GIB, 5, 16,
                4 * GpuDevice.GIB), "the 6-argument constructor too, and refuses zero-request claims on booked GPUs");
    }

    @Test
    void placementIsConsistentWithItsClaimAndDerivesTheEnvironment() {
        Claim c = Claim.builder("inf").gpus(2).memoryGiB(4).compute(30, 60).priority(PriorityClass.ONLINE).build();
        long m = 4 * GpuDevice.GIB;
        Placement p = new Placement(c, "n", List.of(new Slice("g0", m, 30, 60), new Slice("g1", m, 30, 60)));
        Map<String, String> env = p.environment();
        assertEquals("g0,g1", env.get("NVIDIA_VISIBLE_DEVICES"));
        assertEquals(m + "," + m, env.get("QGPU_MEMORY_LIMIT_BYTES"));
        assertEquals("30", env.get("QGPU_COMPUTE_REQUEST"));
        assertEquals("60", env.get("QGPU_COMPUTE_LIMIT"));
        assertEquals("online", env.get("QGPU_PRIORITY"));
        assertEquals("inf", env.get("QGPU_TENANT"));
        assertEquals("placement[inf].slices.size", refused(() -> new Placement(c, "n", List.of(new Slice("g0", m, 30, 60)))).field());
        assertEquals("placement[inf].slices.gpuUuid", refused(() -> new Placement(c, "n",
                List.of(new Slice("g0", m, 30, 60), new Slice("g0", m, 30, 60)))).field());
        assertEquals("placement[inf].slices[g1].memoryBytes", refused(() -> new Placement(c, "n",
                List.of(new Slice("g0", m, 30, 60), new Slice("g1", m / 2, 30, 60)))).field());
        assertEquals("placement[inf].slices[g1].compute", refused(() -> new Placement(c, "n",
                List.of(new Slice("g0", m, 30, 60), new Slice("g1", m, 30, 70)))).field());
    }

    @Test
    void selectorsAndLocality() {
        Selectors s = Selectors.builder().includeModel("Tesla T4").excludeUuid("bad").nodeLabel("pool", "a").build();
        assertTrue(s.allowsModel(gpu("x", 0)));
        assertFalse(s.allowsUuid(gpu("bad", 0)));
        assertTrue(Selectors.none().isNone());
        assertFalse(s.matchesNode(Node.builder("n").label("pool", "b").build()));
        assertTrue(s.matchesNode(Node.builder("n").label("pool", "a").build()));
        assertEquals("locality.affinity", refused(() -> Locality.of(" ", null, null)).field());
        assertEquals("selectors.includeModels[]", refused(() -> Selectors.builder().includeModel("").build()).field());
    }

    @Test
    void enumsParseWireNames() {
        assertEquals(IsolationPolicy.BURST_SHARE, IsolationPolicy.fromName("p", "burst-share"));
        assertEquals(IsolationPolicy.ELASTIC, IsolationPolicy.fromName("p", "ELASTIC"));
        assertEquals("p", refused(() -> IsolationPolicy.fromName("p", "greedy")).field());
        assertEquals(PriorityClass.ONLINE, PriorityClass.fromName("p", "Online"));
        assertEquals(PlacementPolicy.SPREAD, PlacementPolicy.fromName("p", "spread"));
        assertEquals("p", refused(() -> PlacementPolicy.fromName("p", null)).field());
    }

    @Test
    void gpuStateTotals() {
        GpuDevice d = gpu("g", 0);
        Holding on = new Holding("a", PriorityClass.ONLINE, GpuDevice.GIB, 30, 50, false, Locality.none().withExclusion("x"));
        Holding off = new Holding("b", PriorityClass.OFFLINE, 2 * GpuDevice.GIB, 60, 100, false, Locality.none().withExclusion("x"));
        GpuState s = GpuState.empty(d).with(on).with(off);
        assertEquals(3 * GpuDevice.GIB, s.memoryUsed());
        assertEquals(30, s.guaranteed(PriorityClass.ONLINE));
        assertEquals(40, s.computeFree(PriorityClass.OFFLINE));
        assertEquals("x", s.exclusionLabel().orElseThrow());
        assertEquals(GpuState.empty(d).with(off), s.without("a"));
        assertTrue(s.without("zzz") == s);
    }
}
