package io.qgpu.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Node;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The values every reader of an inventory, a node or a snapshot refuses although the wire records would take
 * them ({@code "gpus": null}, a label value that is not a string, a GPU of more than 1 PiB): each refused by the
 * shared reader with a {@link QgpuJsonException} naming the source, the JSON path as written, the value, the rule
 * and the line, whichever product reads the file (the CLI, the scheduler extender's node annotations, the
 * testkit).
 */
class InventoryChecksTest {

    @TempDir
    Path dir;

    private static String inventory(String node) {
        return "{\"nodes\": [\n  {\"name\": \"ok\", \"gpus\": [{\"uuid\": \"g0\", \"index\": 0, \"memoryGiB\": 16}]},\n  " + node + "]}";
    }

    private Path file(String name, String text) throws IOException {
        return Files.writeString(dir.resolve(name), text);
    }

    @Test
    void gpusNullOnANodeIsRefusedNamingFilePathAndValue() throws IOException {
        Path f = file("inventory.json", inventory("{\"name\": \"n\", \"gpus\": null}"));
        QgpuJsonException e = assertThrows(QgpuJsonException.class, () -> QgpuJson.readInventory(f));
        assertEquals(f + ": nodes[1].gpus = null: must be an array of GPUs; for a node without GPUs leave \"gpus\" out or"
                + " write [] (line 3, column 17)", e.getMessage());
        assertEquals("nodes[1].gpus", e.path());
        assertEquals(f.toString(), e.source());
        // before the binder: an unknown key beside it does not hide it
        Path both = file("both.json", inventory("{\"name\": \"n\", \"gpus\": null, \"x\": []}"));
        assertEquals("nodes[1].gpus", assertThrows(QgpuJsonException.class, () -> QgpuJson.readInventory(both)).path());
        // what is allowed instead
        assertEquals(List.of(), QgpuJson.readInventory(inventory("{\"name\": \"n\", \"gpus\": []}")).nodes().get(1).gpus());
        assertEquals(List.of(), QgpuJson.readInventory(inventory("{\"name\": \"n\"}")).nodes().get(1).gpus());
    }

    @Test
    void aLabelValueThatIsNotAStringIsRefused() {
        for (String v : List.of("7", "true", "1.5", "null", "[\"a\"]", "{\"b\":\"c\"}")) {
            QgpuJsonException e = assertThrows(QgpuJsonException.class,
                    () -> QgpuJson.readInventory(JsonInput.parse("inv.json", inventory("{\"name\": \"n\", \"labels\": {\"pool\": \"x\","
                            + " \"zone\": " + v + "}}"), "")));
            assertEquals("inv.json: nodes[1].labels.zone = " + v + ": must be a string (Kubernetes label values are strings;"
                    + " write it in double quotes) (line 3, column 41)", e.getMessage());
        }
        // a key that is not a plain word is written as the reader writes such keys
        QgpuJsonException k = assertThrows(QgpuJsonException.class, () -> QgpuJson.readInventory(
                inventory("{\"name\": \"n\", \"labels\": {\"nvidia.com/gpu.product\": 7}}")));
        assertEquals("nodes[1].labels[\"nvidia.com/gpu.product\"]", k.path());
        assertEquals(Map.of("zone", "7"), QgpuJson.readInventory(inventory("{\"name\": \"n\", \"labels\": {\"zone\": \"7\"}}"))
                .nodes().get(1).labels());
    }

    @Test
    void aGpuOfMoreThanOnePebibyteIsRefusedInTheUnitItIsWrittenIn() {
        long gib = QgpuJson.MAX_GPU_MEMORY_BYTES >> 30;
        assertEquals(1_048_576, gib);
        String g = "{\"name\": \"n\", \"gpus\": [{\"uuid\": \"g1\", \"index\": 0, ";
        QgpuJsonException e = assertThrows(QgpuJsonException.class,
                () -> QgpuJson.readInventory(JsonInput.parse("inv.json", inventory(g + "\"memoryGiB\": " + (gib + 1) + "}]}"), "")));
        assertEquals("inv.json: nodes[1].gpus[0].memoryGiB = 1048577: is more memory than any GPU has: at most 1048576 GiB"
                + " (1 PiB) (line 3, column 53)", e.getMessage());
        QgpuJsonException b = assertThrows(QgpuJsonException.class, () -> QgpuJson.readInventory(
                inventory(g + "\"memoryBytes\": " + (QgpuJson.MAX_GPU_MEMORY_BYTES + 1) + "}]}")));
        assertEquals("nodes[1].gpus[0].memoryBytes = 1125899906842625: is more memory than any GPU has: at most"
                + " 1125899906842624 bytes (1 PiB) (line 3, column 53)", b.getMessage());
        // 1 PiB itself is taken, in either unit
        assertEquals(QgpuJson.MAX_GPU_MEMORY_BYTES, QgpuJson.readInventory(inventory(g + "\"memoryGiB\": " + gib + "}]}"))
                .nodes().get(1).gpus().get(0).memoryBytes());
        assertEquals(QgpuJson.MAX_GPU_MEMORY_BYTES, QgpuJson.readInventory(
                inventory(g + "\"memoryBytes\": " + QgpuJson.MAX_GPU_MEMORY_BYTES + "}]}")).nodes().get(1).gpus().get(0).memoryBytes());
    }

    @Test
    void aSnapshotIsCheckedAsAnInventoryIs() throws IOException {
        String snapshot = QgpuJson.writeSnapshot(QgpuJson.readInventory(inventory("{\"name\": \"n\", \"labels\": {\"pool\": \"a\"},"
                + " \"gpus\": [{\"uuid\": \"g1\", \"index\": 0, \"memoryGiB\": 80}]}")).ledger().snapshot());
        assertTrue(snapshot.contains("\"memoryBytes\" : 85899345920"), snapshot);
        Path huge = file("huge.json", snapshot.replace("\"memoryBytes\" : 85899345920", "\"memoryBytes\" : 9223372036854775807"));
        QgpuJsonException e = assertThrows(QgpuJsonException.class, () -> QgpuJson.readSnapshot(huge));
        assertTrue(e.getMessage().startsWith(huge + ": nodes[1].gpus[0].memoryBytes = 9223372036854775807: is more memory than"
                + " any GPU has: at most 1125899906842624 bytes (1 PiB) (line "), e.getMessage());
        Path label = file("label.json", snapshot.replace("\"pool\" : \"a\"", "\"pool\" : 7"));
        assertEquals("nodes[1].labels.pool", assertThrows(QgpuJsonException.class, () -> QgpuJson.readSnapshot(label)).path());
        Path nul = file("nul.json", snapshot.replaceFirst("\"gpus\" : \\[", "\"gpus\" : null, \"was\" : ["));
        assertEquals("nodes[0].gpus", assertThrows(QgpuJsonException.class, () -> QgpuJson.readSnapshot(nul)).path());
    }

    @Test
    void aNodeOfItsOwnIsCheckedAtItsOwnPaths() {
        // the scheduler extender reads each node's inventory annotation this way
        assertEquals("gpus = null: must be an array of GPUs; for a node without GPUs leave \"gpus\" out or write [] (line 1,"
                + " column 15)", assertThrows(QgpuJsonException.class, () -> QgpuJson.readNode("{\"name\": \"n\", \"gpus\": null}"))
                .getMessage());
        assertEquals("labels.pool = 7: must be a string (Kubernetes label values are strings; write it in double quotes)"
                + " (line 1, column 26)", assertThrows(QgpuJsonException.class,
                () -> QgpuJson.readNode("{\"name\": \"n\", \"labels\": {\"pool\": 7}}")).getMessage());
        QgpuJsonException m = assertThrows(QgpuJsonException.class,
                () -> QgpuJson.readNode("{\"name\": \"n\", \"gpus\": [{\"uuid\": \"g\", \"index\": 0, \"memoryGiB\": 2000000}]}"));
        assertEquals("gpus[0].memoryGiB", m.path());
        assertTrue(m.rule().startsWith("is more memory than any GPU has"), m.rule());
        Node ok = QgpuJson.readNode("{\"name\": \"n\", \"labels\": {\"pool\": \"7\"}, \"gpus\": [{\"uuid\": \"g\", \"index\": 0,"
                + " \"memoryGiB\": 80}]}");
        assertEquals("7", ok.labels().get("pool"));
    }
}
