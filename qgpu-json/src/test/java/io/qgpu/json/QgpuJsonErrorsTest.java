package io.qgpu.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.Node;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.LedgerStateException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.function.Executable;

/** Bad input is refused with the file, the user's JSON path and key, the value written and the line. */
class QgpuJsonErrorsTest {

    @TempDir
    Path dir;

    private static final String GPU = "{\"uuid\": \"%s\", \"index\": %d, \"memoryGiB\": 16}";

    private static String node(String name, String... uuids) {
        StringBuilder sb = new StringBuilder("{\"name\": \"" + name + "\", \"gpus\": [");
        for (int i = 0; i < uuids.length; i++) {
            sb.append(i == 0 ? "" : ", ").append(String.format(GPU, uuids[i], i));
        }
        return sb.append("], \"defaultLink\": \"SYS\"}").toString();
    }

    private static String inventory(String... nodes) {
        return "{\"nodes\": [\n" + String.join(",\n", nodes) + "\n]}";
    }

    private QgpuJsonException refused(String file, String content, Executable read) throws Exception {
        Files.writeString(dir.resolve(file), content);
        QgpuJsonException e = assertThrows(QgpuJsonException.class, read);
        clean(e.getMessage());
        return e;
    }

    private static void clean(String message) {
        for (String internal : List.of("Dto", "Source", "REDACTED", "io.qgpu", "com.fasterxml", "`", "gpuCount",
                "memoryPerGpuBytes", "topology.position", "tenantId")) {
            assertFalse(message.contains(internal), () -> "'" + internal + "' in: " + message);
        }
    }

    @Test
    void aClaimErrorNamesTheFileTheUsersPathKeyValueAndLine() throws Exception {
        String claims = "[\n {\"tenant\": \"a\", \"memoryGiB\": 1},\n {\"tenant\": \"b\", \"memoryGiB\": 1},\n"
                + " {\"tenant\": \"c\", \"memoryGiB\": 1,\n  \"gpus\": -1}\n]";
        Path f = dir.resolve("claims.json");
        QgpuJsonException e = refused("claims.json", claims, () -> QgpuJson.readClaims(f));
        assertEquals(f + ": claims[2].gpus = -1: must be between 0 and 1024 (line 5, column 3)", e.getMessage());
        assertEquals("claims[2].gpus", e.path());
        assertEquals(5, e.line());
    }

    @Test
    void memoryIsNamedAsTheUserWroteIt() throws Exception {
        Path f = dir.resolve("claims.json");
        QgpuJsonException gib = refused("claims.json", "[{\"tenant\": \"a\", \"memoryGiB\": 0}]", () -> QgpuJson.readClaims(f));
        assertTrue(gib.getMessage().contains("claims[0].memoryGiB = 0: must be at least 1"), gib.getMessage());
        QgpuJsonException bytes = refused("claims.json", "[{\"tenant\": \"a\", \"memoryBytes\": 0}]", () -> QgpuJson.readClaims(f));
        assertTrue(bytes.getMessage().contains("claims[0].memoryBytes = 0"), bytes.getMessage());
        Path inv = dir.resolve("inventory.json");
        QgpuJsonException gpu = refused("inventory.json", inventory(node("n", "GPU-a", "GPU-b").replace(
                "\"memoryGiB\": 16}]", "\"memoryGiB\": 0}]")), () -> QgpuJson.readInventory(inv));
        assertTrue(gpu.getMessage().contains("nodes[0].gpus[1].memoryGiB = 0"), gpu.getMessage());
    }

    @Test
    void fractionsAndStringsWhereWholeNumbersAreMeantAreRefused() throws Exception {
        Path f = dir.resolve("claims.json");
        QgpuJsonException gib = refused("claims.json", "[{\"tenant\": \"a\", \"memoryGiB\": 1.5}]", () -> QgpuJson.readClaims(f));
        assertEquals("claims[0].memoryGiB", gib.path());
        assertTrue(gib.getMessage().contains("= 1.5: must be a whole number (a fraction is not accepted)"), gib.getMessage());
        // issue 41: a whole value in exponent form is not called a fraction
        for (String v : List.of("1.6e1", "1e30", "16.0")) {
            QgpuJsonException exp = refused("claims.json", "[{\"tenant\": \"a\", \"memoryGiB\": " + v + "}]",
                    () -> QgpuJson.readClaims(f));
            assertEquals("claims[0].memoryGiB", exp.path());
            assertTrue(exp.getMessage().contains("= " + v + ": must be a whole number written as digits alone (no decimal point,"
                    + " no exponent)"), exp.getMessage());
        }
        QgpuJsonException cpu = refused("claims.json", "[{\"tenant\": \"a\", \"memoryGiB\": 1, \"computeRequest\": 30.9}]",
                () -> QgpuJson.readClaims(f));
        assertEquals("claims[0].computeRequest", cpu.path());
        QgpuJsonException text = refused("claims.json", "[{\"tenant\": \"a\", \"memoryGiB\": \"4\"}]", () -> QgpuJson.readClaims(f));
        assertTrue(text.getMessage().contains("claims[0].memoryGiB = \"4\": must be a whole number"), text.getMessage());
        Path inv = dir.resolve("inventory.json");
        refused("inventory.json", inventory(node("n", "GPU-a")).replace("16}", "15.5}"), () -> QgpuJson.readInventory(inv));
    }

    @Test
    void unknownKeysAreRefusedWithTheKeysAllowed() throws Exception {
        Path f = dir.resolve("claims.json");
        QgpuJsonException e = refused("claims.json", "[{\"tenant\": \"a\", \"memoryGiB\": 1, \"count\": 2}]",
                () -> QgpuJson.readClaims(f));
        assertEquals("claims[0].count", e.path());
        assertTrue(e.rule().startsWith("unknown key; the keys allowed here are computeLimit, computeRequest"), e.rule());
        Path inv = dir.resolve("inventory.json");
        QgpuJsonException n = refused("inventory.json", inventory(node("n", "GPU-a").replace("\"index\": 0", "\"idx\": 0")),
                () -> QgpuJson.readInventory(inv));
        assertEquals("nodes[0].gpus[0].idx", n.path());
    }

    @Test
    void twoNodesOfOneNameOrOneUuidOnTwoNodesAreRefusedAtLoad() throws Exception {
        Path inv = dir.resolve("inventory.json");
        QgpuJsonException name = refused("inventory.json", inventory(node("n", "GPU-a"), node("m", "GPU-b"), node("n", "GPU-c")),
                () -> QgpuJson.readInventory(inv));
        assertEquals("nodes[2].name", name.path());
        assertTrue(name.getMessage().contains("nodes[2].name = \"n\": duplicate node name: nodes[0] has it too (line 4"),
                name.getMessage());
        QgpuJsonException uuid = refused("inventory.json", inventory(node("n", "GPU-a", "GPU-b"), node("m", "GPU-c", "GPU-a")),
                () -> QgpuJson.readInventory(inv));
        assertEquals("nodes[1].gpus[1].uuid", uuid.path(), uuid.getMessage());
        assertTrue(uuid.getMessage().contains("a GPU of nodes[0] has it too"), uuid.getMessage());
    }

    @Test
    void ledgerCreateRefusesDuplicatesAsAddNodeDoes() {
        Node a = Node.builder("n").gpu(GpuDevice.builder("GPU-a").index(0).memoryGiB(16).build()).build();
        Node b = Node.builder("n").gpu(GpuDevice.builder("GPU-b").index(0).memoryGiB(16).build()).build();
        Node c = Node.builder("m").gpu(GpuDevice.builder("GPU-a").index(0).memoryGiB(16).build()).build();
        assertThrows(LedgerStateException.class, () -> Ledger.create(List.of(a, b)));
        LedgerStateException e = assertThrows(LedgerStateException.class, () -> Ledger.create(List.of(a, c)));
        assertTrue(e.getMessage().contains("GPU-a"), e.getMessage());
        assertEquals(1, Ledger.create(List.of(a)).nodes().size());
    }

    @Test
    void linksAreNamedByTheirPlaceInTheFile() throws Exception {
        Path inv = dir.resolve("inventory.json");
        String withLinks = node("n", "GPU-a", "GPU-b").replace("\"defaultLink\": \"SYS\"}",
                "\"links\": [{\"a\": 0, \"b\": 1, \"link\": \"NV2\"},\n {\"a\": 0, \"b\": 7, \"link\": \"PIX\"}]}");
        String bad = inventory(withLinks);
        QgpuJsonException e = refused("inventory.json", bad, () -> QgpuJson.readInventory(inv));
        assertEquals("nodes[0].links[1].b", e.path());
        assertTrue(e.getMessage().contains("= 7: must be between 0 and 1 (the link between GPUs 0 and 7 of node n)"), e.getMessage());
        QgpuJsonException label = refused("inventory.json", bad.replace("\"b\": 7, \"link\": \"PIX\"", "\"b\": 1, \"link\": \"XX\""),
                () -> QgpuJson.readInventory(inv));
        assertEquals("nodes[0].links[1].link", label.path());
    }

    @Test
    void emptyMissingDirectoryAndMalformedFilesEachGetTheirOwnMessage() throws Exception {
        Path empty = dir.resolve("empty.json");
        assertEquals(empty + ": is empty", refused("empty.json", "  \n", () -> QgpuJson.readClaims(empty)).getMessage());
        Path missing = dir.resolve("missing.json");
        assertEquals(missing + ": no such file",
                assertThrows(QgpuJsonException.class, () -> QgpuJson.readInventory(missing)).getMessage());
        assertEquals(dir + ": is a directory, not a JSON file",
                assertThrows(QgpuJsonException.class, () -> QgpuJson.readInventory(dir)).getMessage());
        Path broken = dir.resolve("broken.json");
        QgpuJsonException b = refused("broken.json", "{\"nodes\": [\n  {\"name\": \"n\",}\n]}", () -> QgpuJson.readInventory(broken));
        assertTrue(b.getMessage().startsWith(broken + ": is not valid JSON: "), b.getMessage());
        assertEquals(2, b.line());
        QgpuJsonException dup = refused("broken.json", "{\"nodes\": [], \"nodes\": []}", () -> QgpuJson.readInventory(broken));
        assertTrue(dup.getMessage().contains("the same key appears twice"), dup.getMessage());
        QgpuJsonException trailing = refused("broken.json", "{\"nodes\": []} []", () -> QgpuJson.readInventory(broken));
        assertTrue(trailing.getMessage().contains("unexpected content after the end"), trailing.getMessage());
        QgpuJsonException wrongShape = refused("broken.json", "{\"nodes\": {}}", () -> QgpuJson.readInventory(broken));
        assertEquals(broken + ": nodes = {}: must be an array (line 1, column 2)", wrongShape.getMessage());
        QgpuJsonException notObject = refused("claims.json", "[\"a\"]", () -> QgpuJson.readClaims(dir.resolve("claims.json")));
        assertEquals("claims[0]", notObject.path());
        assertTrue(notObject.getMessage().contains("must be an object"), notObject.getMessage());
    }

    @Test
    void everyShippedExampleStillReads() {
        Inventory inv = QgpuJson.readInventory("{\"rules\": {\"name\": \"hami\"}, \"nodes\": [" + node("n", "GPU-a") + "]}");
        assertEquals("hami", inv.rules().name());
        assertEquals(1, QgpuJson.readClaims("[{\"tenant\": \"x\", \"gpus\": 1, \"exclusive\": true}]").size());
    }
}
