package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.Placement;
import io.qgpu.api.Slice;
import io.qgpu.json.QgpuJson;
import io.qgpu.json.QgpuJsonException;
import io.qgpu.core.ledger.Ledger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Nodes from their qgpu.io/inventory annotation, and the documented example files. */
class NodeInventoryTest {

    private static Node k8s(String name, String inventoryJson) {
        NodeBuilder b = new NodeBuilder().withNewMetadata().withName(name).endMetadata();
        if (inventoryJson != null) {
            b.editMetadata().addToAnnotations(QgpuAnnotations.INVENTORY, inventoryJson).endMetadata();
        }
        return b.build();
    }

    @Test
    void theExampleFilesAreValid() throws Exception {
        io.qgpu.api.Node n = QgpuJson.readNode(Files.readString(Path.of("examples/node-gpu-a.json")));
        assertEquals(2, n.gpus().size());
        assertEquals(3, QgpuJson.readInventory(Files.readString(Path.of("examples/inventory.json"))).nodes().size());
        assertTrue(Files.readString(Path.of("examples/scheduler-config.yaml")).contains("nodeCacheCapable: true"));
    }

    @Test
    void nodesAreAddedRenamedReplacedWhenIdleAndKeptWhenBusy() throws Exception {
        Ledger ledger = Ledger.create(List.of());
        NodeInventory inv = new NodeInventory(ledger);
        String json = Files.readString(Path.of("examples/node-gpu-a.json"));
        assertFalse(inv.sync(k8s("cpu-only", null)));
        assertFalse(inv.sync(k8s("broken", "{\"name\": 5")), "an unreadable annotation is skipped");
        assertTrue(inv.sync(k8s("worker-7", json)), "the Kubernetes name wins over the one in the annotation");
        assertEquals(List.of("worker-7"), ledger.nodes().stream().map(s -> s.name()).toList());
        assertFalse(inv.sync(k8s("worker-7", json)), "unchanged");

        String bigger = json.replace("\"memoryGiB\": 16, \"numaNode\": 0 },", "\"memoryGiB\": 32, \"numaNode\": 0 },");
        assertTrue(inv.sync(k8s("worker-7", bigger)), "an idle node is replaced");
        assertEquals(32 * GpuDevice.GIB, ledger.node("worker-7").orElseThrow().gpu(0).device().memoryBytes());

        Claim c = Claim.builder("ns/p").memoryGiB(4).build();
        assertTrue(ledger.reserve(new Placement(c, "worker-7", List.of(new Slice("GPU-a1", 4 * GpuDevice.GIB, 0, 100)))).reserved());
        assertFalse(inv.sync(k8s("worker-7", json)), "a busy node keeps its inventory");
        assertEquals(32 * GpuDevice.GIB, ledger.node("worker-7").orElseThrow().gpu(0).device().memoryBytes());
        assertTrue(ledger.placement("ns/p").isPresent());

        assertFalse(inv.sync(k8s("worker-8", json)), "the same GPU UUIDs on a second node are refused");
        assertEquals(1, ledger.nodes().size());
    }

    /** The shared reader's checks hold for an annotation as for an inventory file: same typed error, path and value. */
    @Test
    void anAnnotationWithANumberLabelNullGpusOrAnImplausibleGpuIsRefusedAndSkipped() throws Exception {
        String json = Files.readString(Path.of("examples/node-gpu-a.json"));
        Ledger ledger = Ledger.create(List.of());
        NodeInventory inv = new NodeInventory(ledger);
        for (String[] c : List.of(
                new String[] {"\"pool\": \"inference\"", "\"pool\": 7", "labels.pool = 7: must be a string", "3"},
                new String[] {"\"gpus\": [", "\"gpus\": null, \"x\": [", "gpus = null: must be an array of GPUs", "4"},
                new String[] {"\"memoryGiB\": 16, \"numaNode\": 0 },", "\"memoryGiB\": 2000000, \"numaNode\": 0 },",
                        "gpus[0].memoryGiB = 2000000: is more memory than any GPU has: at most 1048576 GiB (1 PiB)", "5"})) {
            assertTrue(json.contains(c[0]), c[0]);
            Node k = k8s("worker-9", json.replaceFirst(java.util.regex.Pattern.quote(c[0]), c[1]));
            QgpuJsonException e = assertThrows(QgpuJsonException.class, () -> NodeInventory.parse(k));
            assertTrue(e.getMessage().startsWith(c[2]) && e.getMessage().matches(".* \\(line " + c[3] + ", column \\d+\\)"), e.getMessage());
            assertFalse(inv.sync(k), "skipped: " + c[2]);
        }
        assertEquals(List.of(), ledger.nodes());
    }
}
