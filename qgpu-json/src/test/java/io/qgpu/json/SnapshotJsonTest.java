package io.qgpu.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Health;
import io.qgpu.api.Locality;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Slice;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.LedgerSnapshot;
import io.qgpu.core.ledger.ReserveResult;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Ledger snapshots through JSON: a round trip gives an identical ledger; a bad file leaves the ledger as it was. */
class SnapshotJsonTest {

    /** Two T4s and eight H100s; a tenant on an unhealthy T4, two online tenants sharing an H100 in one affinity group,
     *  an exclusive four-GPU training job. */
    private static final String INVENTORY = """
            {"nodes": [
              {"name": "a", "labels": {"pool": "t4"}, "defaultLink": "PHB", "gpus": [
                {"uuid": "a-g0", "index": 0, "model": "Tesla T4", "memoryGiB": 16, "numaNode": 0, "health": "unhealthy",
                 "tenants": [{"tenant": "t1", "memoryGiB": 4, "computeRequest": 20, "computeLimit": 50}]},
                {"uuid": "a-g1", "index": 1, "model": "Tesla T4", "memoryGiB": 16, "numaNode": 0}]},
              {"name": "h", "labels": {"pool": "h100"}, "defaultLink": "NV18", "gpus": [
                {"uuid": "h-g0", "index": 0, "memoryGiB": 80}, {"uuid": "h-g1", "index": 1, "memoryGiB": 80},
                {"uuid": "h-g2", "index": 2, "memoryGiB": 80, "tenants": [
                  {"tenant": "on1", "memoryGiB": 8, "computeRequest": 60, "computeLimit": 100, "priority": "online",
                   "locality": {"affinity": "grp", "antiAffinity": "rep"}},
                  {"tenant": "on2", "memoryGiB": 8, "computeRequest": 10, "computeLimit": 100, "priority": "online",
                   "locality": {"affinity": "grp"}}]},
                {"uuid": "h-g3", "index": 3, "memoryGiB": 80},
                {"uuid": "h-g4", "index": 4, "memoryGiB": 80, "tenants": [{"tenant": "train", "exclusive": true}]},
                {"uuid": "h-g5", "index": 5, "memoryGiB": 80, "tenants": [{"tenant": "train", "exclusive": true}]},
                {"uuid": "h-g6", "index": 6, "memoryGiB": 80, "tenants": [{"tenant": "train", "exclusive": true}]},
                {"uuid": "h-g7", "index": 7, "memoryGiB": 80, "tenants": [{"tenant": "train", "exclusive": true}]}]}]}
            """;

    private static Ledger populated() {
        return QgpuJson.readInventory(INVENTORY).ledger();
    }

    /** What a restore rebuilds from an equal snapshot (nodes, displaced tenants, affinity groups) is qgpu-core's LedgerStateTest. */
    @Test
    void aSnapshotRoundTripsThroughJsonToAnIdenticalLedger() {
        Ledger l = populated();
        LedgerSnapshot snap = l.snapshot();
        String json = QgpuJson.writeSnapshot(snap);
        assertTrue(json.contains("\"schemaVersion\" : 1"), json);
        LedgerSnapshot back = QgpuJson.readSnapshot(json);
        assertEquals(snap, back, "rules, nodes with their health, placements with claims, localities and slices");
        assertEquals(json, QgpuJson.writeSnapshot(back), "writing is stable");
        Ledger restored = Ledger.of(back);
        assertEquals(snap, restored.snapshot());
        assertEquals(4, restored.size());
        assertEquals(Health.UNHEALTHY, restored.node("a").orElseThrow().gpu(0).device().health());
        assertEquals(List.of("t1"), restored.displaced().stream().map(Placement::tenantId).toList(), "on the unhealthy GPU");
        // the affinity group is rebuilt too
        Claim on3 = Claim.builder("on3").memoryGiB(1).priority(PriorityClass.ONLINE).locality(Locality.none().withAffinity("grp"))
                .build();
        Placement wrong = new Placement(on3, "h", List.of(new Slice("h-g3", on3.memoryPerGpuBytes(), 0, 100)));
        assertEquals(ReasonCode.AFFINITY, ((ReserveResult.Refused) restored.reserve(wrong)).reasons().get(0).code());
    }

    @Test
    void badVersionAndMalformedJsonAreRefusedAndTheLedgerIsUntouched() {
        Ledger l = populated();
        LedgerSnapshot before = l.snapshot();
        String json = QgpuJson.writeSnapshot(before);
        QgpuJsonException v = assertThrows(QgpuJsonException.class,
                () -> QgpuJson.readSnapshot(json.replace("\"schemaVersion\" : 1", "\"schemaVersion\" : 7")));
        assertEquals("schemaVersion", v.path());
        assertTrue(v.getMessage().startsWith("schemaVersion = 7: must be 1"), v.getMessage());
        assertThrows(QgpuJsonException.class, () -> QgpuJson.readSnapshot(json.substring(0, json.length() / 2)));
        assertThrows(QgpuJsonException.class, () -> QgpuJson.readSnapshot("{\"schemaVersion\":1, \"surprise\": true}"));
        assertThrows(QgpuJsonException.class, () -> QgpuJson.readSnapshot(""));
        QgpuJsonException typed = assertThrows(QgpuJsonException.class,
                () -> QgpuJson.readSnapshot(json.replaceFirst("\"memoryBytes\" : \\d+", "\"memoryBytes\" : \"lots\"")));
        assertTrue(typed.path().contains("memoryBytes"), typed.path());
        QgpuJsonException neg = assertThrows(QgpuJsonException.class,
                () -> QgpuJson.readSnapshot(json.replaceFirst("\"computeLimit\" : 50", "\"computeLimit\" : 500")));
        assertTrue(neg.path().matches("placements\\[\\d+]\\.(claim|slices\\[\\d+])\\.computeLimit"), neg.path());
        assertEquals(before, l.snapshot());
    }

    @Test
    void aSnapshotKeepsItsRules() {
        Ledger hami = Ledger.create(GranularityRules.hami(), QgpuJson.readInventory(INVENTORY).nodes());
        Claim odd = Claim.builder("odd").memoryGiB(1).compute(7, 13).build();
        assertTrue(hami.reserve(new Placement(odd, "a", List.of(new Slice("a-g1", odd.memoryPerGpuBytes(), 7, 13))))
                instanceof ReserveResult.Reserved);
        Ledger back = Ledger.of(QgpuJson.readSnapshot(QgpuJson.writeSnapshot(hami.snapshot())));
        assertEquals(GranularityRules.hami(), back.rules());
        assertEquals(hami.snapshot(), back.snapshot());
    }
}
