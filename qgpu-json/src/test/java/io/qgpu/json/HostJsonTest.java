package io.qgpu.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.HostCapacity;
import io.qgpu.api.HostRequest;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.Slice;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.LedgerSnapshot;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Host resources in the JSON formats: nodes, claims, inventories with tenants, snapshots; bad values named. */
class HostJsonTest {

    @TempDir
    Path dir;

    private static final String NODE = "{\"name\": \"n\", \"gpus\": [{\"uuid\": \"G0\", \"index\": 0, \"memoryGiB\": 16}],"
            + " \"host\": %s}";

    private static com.fasterxml.jackson.databind.JsonNode tree(String json) {
        try {
            return QgpuJson.mapper().readTree(json);
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void nodeHostCapacityRoundTripsAndALeftOutResourceIsNotTracked() {
        Node n = QgpuJson.readNode(String.format(NODE, "{\"cpuMillis\": 32000, \"memoryGiB\": 128}"));
        assertEquals(HostCapacity.of(32000, 128L * GpuDevice.GIB), n.host());
        assertEquals(n, QgpuJson.readNode(QgpuJson.writeNode(n)));
        assertEquals(tree("{\"cpuMillis\": 32000, \"memoryBytes\": 137438953472}"), tree(QgpuJson.writeNode(n)).get("host"));
        Node cpuOnly = QgpuJson.readNode(String.format(NODE, "{\"cpuMillis\": 0}"));
        assertEquals(OptionalLong.of(0), cpuOnly.host().cpuMillis());
        assertEquals(OptionalLong.empty(), cpuOnly.host().memoryBytes());
        Node none = QgpuJson.readNode("{\"name\": \"c\"}");
        assertTrue(none.host().isUntracked());
        assertFalse(QgpuJson.writeNode(none).contains("host"));
    }

    @Test
    void claimsAskForHostResourcesAndMayBeHostOnly() {
        List<Claim> cs = QgpuJson.readClaims("[{\"tenant\": \"a\", \"memoryGiB\": 2, \"host\": {\"cpuMillis\": 500, \"memoryGiB\": 4}},"
                + " {\"tenant\": \"b\", \"gpus\": 0, \"host\": {\"cpuMillis\": 250}}]");
        assertEquals(new HostRequest(500, 4L * GpuDevice.GIB), cs.get(0).host());
        Claim b = cs.get(1);
        assertTrue(b.hostOnly());
        assertEquals(Claim.builder("b").hostOnly().cpuMillis(250).build(), b);
        assertEquals(cs, QgpuJson.readClaims(QgpuJson.writeClaims(cs)));
        assertEquals(tree("[{\"tenant\": \"b\", \"gpus\": 0, \"priority\": \"offline\", \"host\": {\"cpuMillis\": 250}}]"),
                tree(QgpuJson.writeClaims(List.of(b))));
        Placement p = new Placement(b, "n", List.of());
        assertEquals(p, QgpuJson.readPlacement(QgpuJson.writePlacement(p)));
    }

    @Test
    void badHostValuesNameTheFileThePathTheValueAndTheLine() throws Exception {
        Path inv = dir.resolve("inventory.json");
        Files.writeString(inv, "{\"nodes\": [\n" + String.format(NODE, "{\n  \"cpuMillis\": -500}") + "\n]}");
        QgpuJsonException e = assertThrows(QgpuJsonException.class, () -> QgpuJson.readInventory(inv));
        assertEquals(inv + ": nodes[0].host.cpuMillis = -500: must be at least 0 (line 3, column 3)", e.getMessage());
        Path claims = dir.resolve("claims.json");
        Files.writeString(claims, "[{\"tenant\": \"a\", \"memoryGiB\": 1},\n {\"tenant\": \"b\", \"memoryGiB\": 1,\n"
                + "  \"host\": {\"memoryGiB\": -2}}]");
        QgpuJsonException m = assertThrows(QgpuJsonException.class, () -> QgpuJson.readClaims(claims));
        assertEquals(claims + ": claims[1].host.memoryGiB = -2: must be between 0 and 8589934591 (line 3, column 12)", m.getMessage());
        Files.writeString(claims, "[{\"tenant\": \"h\", \"gpus\": 0, \"memoryGiB\": 3, \"host\": {\"cpuMillis\": 1}}]");
        QgpuJsonException h = assertThrows(QgpuJsonException.class, () -> QgpuJson.readClaims(claims));
        assertTrue(h.getMessage().startsWith(claims + ": claims[0].memoryGiB = 3: a host-only claim (0 GPUs) asks for no GPU memory"),
                h.getMessage());
        Files.writeString(claims, "[{\"tenant\": \"h\", \"gpus\": 0}]");
        QgpuJsonException none = assertThrows(QgpuJsonException.class, () -> QgpuJson.readClaims(claims));
        assertTrue(none.getMessage().contains("claims[0].host"), none.getMessage());
        assertTrue(none.getMessage().contains("must ask for CPU or host memory"), none.getMessage());
        Files.writeString(claims, "[{\"tenant\": \"h\", \"memoryGiB\": 1, \"host\": {\"cpuMillis\": 1.5}}]");
        QgpuJsonException fraction = assertThrows(QgpuJsonException.class, () -> QgpuJson.readClaims(claims));
        assertTrue(fraction.getMessage().contains("claims[0].host.cpuMillis = 1.5"), fraction.getMessage());
        Files.writeString(claims, "[{\"tenant\": \"h\", \"memoryGiB\": 1, \"host\": {\"cpu\": 1}}]");
        QgpuJsonException unknown = assertThrows(QgpuJsonException.class, () -> QgpuJson.readClaims(claims));
        assertTrue(unknown.getMessage().contains("claims[0].host.cpu"), unknown.getMessage());
    }

    @Test
    void inventoriesListHostOnlyTenantsPerNodeAndGpuTenantsWithTheirHostResources() {
        Node gpu = Node.builder("g").gpu(GpuDevice.builder("G0").index(0).memoryGiB(16).build())
                .cpuMillis(4000).hostMemoryGiB(16).build();
        Node cpu = Node.builder("c").cpuMillis(2000).build();
        Claim withGpu = Claim.builder("t").memoryGiB(2).compute(10, 50).cpuMillis(1000).hostMemoryGiB(2).build();
        Claim hostOnly = Claim.builder("h").hostOnly().cpuMillis(1500).build();
        Inventory inv = new Inventory(io.qgpu.api.GranularityRules.ofDefaults(), List.of(gpu, cpu), List.of(
                new Placement(withGpu, "g", List.of(new Slice("G0", 2L * GpuDevice.GIB, 10, 50))),
                new Placement(hostOnly, "c", List.of())));
        String json = QgpuJson.writeInventory(inv);
        assertEquals(tree("[{\"tenant\": \"h\", \"priority\": \"offline\", \"host\": {\"cpuMillis\": 1500}}]"),
                tree(json).get("nodes").get(1).get("hostTenants"));
        assertEquals(tree("{\"cpuMillis\": 1000, \"memoryBytes\": 2147483648}"),
                tree(json).get("nodes").get(0).get("gpus").get(0).get("tenants").get(0).get("host"));
        Inventory back = QgpuJson.readInventory(json);
        assertEquals(inv, back);
        Ledger l = back.ledger();
        assertEquals(OptionalLong.of(500), l.node("c").orElseThrow().cpuMillisFree());
        assertEquals(OptionalLong.of(3000), l.node("g").orElseThrow().cpuMillisFree());
        // a host-only tenant that does not fit is refused by the ledger with its reason
        String over = json.replace("\"cpuMillis\" : 1500", "\"cpuMillis\" : 2500");
        var e = assertThrows(io.qgpu.core.ledger.LedgerStateException.class, () -> QgpuJson.readInventory(over).ledger());
        assertTrue(e.getMessage().contains("INSUFFICIENT_CPU"), e.getMessage());
        // the host of a host-only tenant is required
        QgpuJsonException missing = assertThrows(QgpuJsonException.class,
                () -> QgpuJson.readInventory(json.replaceAll(",\\s*\"host\" : \\{\\s*\"cpuMillis\" : 1500\\s*}", "")));
        assertTrue(missing.getMessage().contains("nodes[1].hostTenants[0].host"), missing.getMessage());
    }

    @Test
    void snapshotsCarryHostCapacityAndRequests() {
        Node cpu = Node.builder("c").cpuMillis(2000).hostMemoryGiB(4).build();
        Ledger l = Ledger.create(List.of(cpu));
        assertTrue(l.reserve(new Placement(Claim.builder("h").hostOnly().cpuMillis(1500).hostMemoryGiB(1).build(), "c",
                List.of())).reserved());
        LedgerSnapshot s = l.snapshot();
        LedgerSnapshot back = QgpuJson.readSnapshot(QgpuJson.writeSnapshot(s));
        assertEquals(s, back);
        assertEquals(l.node("c").orElseThrow(), Ledger.of(back).node("c").orElseThrow());
    }
}
