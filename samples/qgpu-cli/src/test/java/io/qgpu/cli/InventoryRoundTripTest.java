package io.qgpu.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.Node;
import io.qgpu.json.Inventory;
import io.qgpu.json.QgpuJson;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.discovery.NvmlDiscovery;
import io.qgpu.nvml.discovery.NvmlInventory;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 30 item 5: {@code qgpu inventory --as-inventory} on a (fake) machine writes the inventory format
 * that {@code place}, {@code ledger} and the extender read: read back, it is the node discovery found
 * (GPUs, memory, NUMA nodes, every pair's link), and {@code place} runs on it with no Java in between.
 */
class InventoryRoundTripTest {

    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(strings = {"dgx-h100", "t4x4", "a100-bridged", "a100-mig", "x86-numa", "h100-vm"})
    void discoveryToInventoryJsonAndBackIsTheSameNode(String machine) throws Exception {
        InventoryCommandTest.Result r = InventoryCommandTest.run("inventory", "--as-inventory", "--nvml-lib",
                InventoryCommandTest.fake().toString(), "--machine", machine, "--node", "box-1");
        assertEquals(0, r.code(), r.err());
        Inventory read = QgpuJson.readInventory(r.out());
        assertEquals("qgpu", read.rules().name());
        assertEquals(1, read.nodes().size());
        Node back = read.nodes().get(0);

        Node found;
        try (Nvml nvml = Nvml.builder().libraryPath(InventoryCommandTest.fake()).open()) {
            InventoryCommand.selectFakeMachine(nvml.library(), machine);
            NvmlInventory inv = NvmlDiscovery.builder().session(nvml).build().inventory("box-1");
            found = inv.node();
        }
        assertEquals(found.name(), back.name());
        assertEquals(found.gpus().size(), back.gpus().size());
        assertTrue(found.gpus().size() > 0, machine);
        for (int i = 0; i < found.gpus().size(); i++) {
            GpuDevice f = found.gpus().get(i);
            GpuDevice b = back.gpus().get(i);
            assertEquals(f.uuid(), b.uuid());
            assertEquals(f.index(), b.index());
            assertEquals(f.model(), b.model());
            assertEquals(f.memoryBytes(), b.memoryBytes(), f.uuid());
            assertEquals(f.numaNode(), b.numaNode(), f.uuid());
            assertEquals(f.health(), b.health(), f.uuid());
        }
        for (int a = 0; a < found.gpus().size(); a++) {
            for (int c = 0; c < found.gpus().size(); c++) {
                if (a != c) {
                    assertEquals(found.topology().link(a, c), back.topology().link(a, c), machine + " link " + a + "-" + c);
                }
            }
        }
        assertEquals(found, back, "the whole node, labels and host included");

        // the chain without Java: the file feeds place
        Path inv = Files.writeString(dir.resolve("inventory.json"), r.out());
        Path claims = Files.writeString(dir.resolve("claims.json"), "[{\"tenant\": \"infer\", \"memoryGiB\": 1, \"computeRequest\": 10}]");
        InventoryCommandTest.Result place = InventoryCommandTest.run("place", "--inventory", inv.toString(), "--claims", claims.toString());
        assertEquals(0, place.code(), place.out() + place.err());
        assertTrue(place.out().contains("\"node\" : \"box-1\""), place.out());
    }

    @ParameterizedTest
    @ValueSource(strings = {"hami", "gpu-manager"})
    void theRulesFlagNamesThePreset(String rules) {
        InventoryCommandTest.Result r = InventoryCommandTest.run("inventory", "--as-inventory", "--rules", rules, "--nvml-lib",
                InventoryCommandTest.fake().toString(), "--machine", "t4x4");
        assertEquals(0, r.code(), r.err());
        assertEquals(rules, QgpuJson.readInventory(r.out()).rules().name());
        InventoryCommandTest.Result bad = InventoryCommandTest.run("inventory", "--as-inventory", "--rules", "fast");
        assertEquals(2, bad.code());
        assertTrue(bad.err().startsWith("qgpu inventory: --rules fast: must be qgpu, hami or gpu-manager"), bad.err());
    }
}
