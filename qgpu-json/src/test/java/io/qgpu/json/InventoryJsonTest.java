package io.qgpu.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.NumaPolicy;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.TopologyLevel;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.LedgerStateException;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The inventory's topology levels, NUMA nodes and existing holdings, and the claim fields that go with them. */
class InventoryJsonTest {

    private static final String INVENTORY = """
            {"schemaVersion": 1,
             "rules": {"name": "qgpu", "admitZeroRequestOnBookedGpu": true},
             "nodes": [{"name": "a100", "defaultLink": "NV12/SYS/NVSWITCH",
                        "links": [{"a": 0, "b": 1, "link": "NV12/PXB/NVSWITCH"}, {"a": 2, "b": 3, "link": "nv12/pxb/nvswitch"}],
                        "gpus": [
                          {"uuid": "GPU-0", "index": 0, "memoryGiB": 80, "numaNode": 3,
                           "tenants": [{"tenant": "train", "exclusive": true, "priority": "offline"}]},
                          {"uuid": "GPU-1", "index": 1, "memoryGiB": 80, "numaNode": 3,
                           "tenants": [{"tenant": "train", "exclusive": true, "priority": "offline"}]},
                          {"uuid": "GPU-2", "index": 2, "memoryGiB": 80, "numaNode": 1,
                           "tenants": [{"tenant": "infer", "memoryGiB": 8, "computeRequest": 30, "computeLimit": 60, "priority": "online"},
                                       {"tenant": "notebook", "memoryGiB": 4}]},
                          {"uuid": "GPU-3", "index": 3, "memoryGiB": 80, "numaNode": 1}]}]}
            """;

    @Test
    void topologyLevelsNumaAndHoldingsAreRead() {
        Inventory inv = QgpuJson.readInventory(INVENTORY);
        Node n = inv.nodes().get(0);
        assertEquals(new GpuLink.NvLink(12, TopologyLevel.MULTIPLE, true), n.topology().link(0, 1));
        assertEquals(new GpuLink.NvLink(12, TopologyLevel.SYSTEM, true), n.topology().link(1, 2));
        assertEquals(3, n.gpus().get(0).numaNode());
        assertTrue(inv.rules().admitZeroRequestOnBookedGpu());
        assertEquals(3, inv.holdings().size());
        Placement train = inv.holdings().stream().filter(p -> p.tenantId().equals("train")).findFirst().orElseThrow();
        assertEquals(List.of("GPU-0", "GPU-1"), train.gpuUuids());
        assertEquals(2, train.claim().gpuCount());
        Ledger l = inv.ledger();
        assertEquals(3, l.placements().size());
        assertEquals(PriorityClass.ONLINE, l.placement("infer").orElseThrow().claim().priority());
        assertTrue(l.node("a100").orElseThrow().gpu(3).isEmpty());
    }

    @Test
    void anInventoryWithHoldingsRoundTrips() {
        Inventory inv = QgpuJson.readInventory(INVENTORY);
        Inventory again = QgpuJson.readInventory(QgpuJson.writeInventory(inv));
        assertEquals(inv.rules(), again.rules());
        assertEquals(inv.nodes(), again.nodes());
        assertEquals(inv.ledger().snapshot().placements(), again.ledger().snapshot().placements());
    }

    @Test
    void shareMigInstancesIsReadNextToAPresetAndInCustomRulesAndRoundTrips() {
        assertFalse(QgpuJson.readInventory(INVENTORY).rules().shareMigInstances(), "default false");
        Inventory preset = QgpuJson.readInventory(INVENTORY.replace("\"admitZeroRequestOnBookedGpu\": true",
                "\"admitZeroRequestOnBookedGpu\": true, \"shareMigInstances\": true"));
        assertEquals(GranularityRules.ofDefaults().toBuilder().admitZeroRequestOnBookedGpu(true).shareMigInstances(true).build(),
                preset.rules());
        String custom = """
                {"schemaVersion": 1, "rules": {"name": "mine", "memoryUnitBytes": 1048576, "minMemoryBytes": 1048576,
                 "computeUnit": 1, "maxTenantsPerGpu": 8, "memoryPerTenantSlotBytes": 0, "shareMigInstances": true}}
                """;
        GranularityRules mine = QgpuJson.readInventory(custom).rules();
        assertTrue(mine.shareMigInstances());
        assertFalse(mine.admitZeroRequestOnBookedGpu());
        for (Inventory inv : List.of(preset, QgpuJson.readInventory(custom))) {
            String written = QgpuJson.writeInventory(inv);
            assertTrue(written.contains("\"shareMigInstances\" : true") || written.contains("\"shareMigInstances\":true"), written);
            assertEquals(inv.rules(), QgpuJson.readInventory(written).rules());
        }
        assertFalse(QgpuJson.writeInventory(QgpuJson.readInventory(INVENTORY)).contains("shareMigInstances"),
                "written only when true, like admitZeroRequestOnBookedGpu");
    }

    @Test
    void badListingsAreRefusedNamingWhere() {
        QgpuJsonException differs = assertThrows(QgpuJsonException.class, () -> QgpuJson.readInventory(
                INVENTORY.replace("{\"uuid\": \"GPU-3\", \"index\": 3, \"memoryGiB\": 80, \"numaNode\": 1}",
                        "{\"uuid\": \"GPU-3\", \"index\": 3, \"memoryGiB\": 80, \"numaNode\": 1,"
                                + " \"tenants\": [{\"tenant\": \"infer\", \"memoryGiB\": 9, \"computeRequest\": 30, \"computeLimit\": 60, \"priority\": \"online\"}]}")));
        assertTrue(differs.getMessage().contains("nodes[0].gpus[3].tenants[0]"), differs.getMessage());
        assertTrue(differs.getMessage().contains("differs from its listing at nodes[0].gpus[2].tenants[0]"), differs.getMessage());
        QgpuJsonException level = assertThrows(QgpuJsonException.class,
                () -> QgpuJson.readInventory(INVENTORY.replace("NV12/PXB/NVSWITCH", "NV12/XYZ")));
        assertTrue(level.getMessage().contains("the link between GPUs 0 and 1 of node a100"), level.getMessage());
        assertTrue(level.getMessage().contains("NV12/XYZ"), level.getMessage());
        // memory the GPU does not have: refused by the ledger, naming the GPU and the shortfall
        Inventory tooBig = QgpuJson.readInventory(INVENTORY.replace("\"memoryGiB\": 4}", "\"memoryGiB\": 80}"));
        LedgerStateException full = assertThrows(LedgerStateException.class, tooBig::ledger);
        assertTrue(full.getMessage().contains("GPU-2: INSUFFICIENT_MEMORY"), full.getMessage());
    }

    @Test
    void claimsCarryNumaAndMustInclude() {
        Claim c = QgpuJson.readClaim("""
                {"tenant": "t", "gpus": 2, "exclusive": true, "numa": "required",
                 "selectors": {"mustIncludeUuids": ["GPU-3"], "mustIncludeIndices": [2]}}""");
        assertEquals(NumaPolicy.REQUIRED, c.numa());
        assertEquals(java.util.Set.of("GPU-3"), c.selectors().mustIncludeUuids());
        assertEquals(java.util.Set.of(2), c.selectors().mustIncludeIndices());
        assertEquals(c, QgpuJson.readClaims(QgpuJson.writeClaims(List.of(c))).get(0));
        QgpuJsonException numa = assertThrows(QgpuJsonException.class,
                () -> QgpuJson.readClaim("{\"tenant\": \"t\", \"memoryGiB\": 1, \"numa\": \"sometimes\"}"));
        assertEquals("numa", numa.path(), numa.getMessage());
        assertTrue(numa.getMessage().contains("must be one of preferred, required"), numa.getMessage());
        QgpuJsonException tooMany = assertThrows(QgpuJsonException.class, () -> QgpuJson.readClaim(
                "{\"tenant\": \"t\", \"memoryGiB\": 1, \"selectors\": {\"mustIncludeIndices\": [0, 1]}}"));
        assertTrue(tooMany.getMessage().contains("names more GPUs than"), tooMany.getMessage());
        assertFalse(tooMany.getMessage().contains("gpuCount"), tooMany.getMessage());
        assertFalse(QgpuJson.writeClaims(List.of(Claim.builder("p").memoryGiB(1).build())).contains("numa"));
    }
}
