package io.qgpu.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.InvalidValueException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Item 1 of issue 30: a name from the user's input never makes a file outside the output folder. */
class OutputNamesTest {

    private static final String POISSON = "scenarios/online-offline-poisson.json";

    record Run(int rc, String out, String err) {
    }

    static Run qgpu(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = Main.run(List.of(args), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(rc, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @ParameterizedTest
    @ValueSource(strings = {"..", ".", "../../x", "a/b", "C:\\x", "nul\0byte", "tab\tname", "", "/etc/passwd"})
    void everyNameThatIsNotOneFileNameIsRefusedWithItsKeyAndValue(String name) {
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> OutputNames.component("s.json: name", name));
        assertTrue(e.getMessage().startsWith("s.json: name = \"" + OutputNames.shown(name) + "\""), e.getMessage());
        assertFalse(e.getMessage().contains("\0"), "a NUL byte is shown escaped");
    }

    @Test
    void aNulByteIsShownEscaped() {
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> OutputNames.component("k", "a\0b"));
        assertTrue(e.getMessage().contains("\"a\\u0000b\""), e.getMessage());
        assertTrue(e.getMessage().contains("control character at position 2"), e.getMessage());
    }

    @Test
    void ordinaryNamesPassAndStayInTheFolder(@TempDir Path dir) {
        for (String ok : List.of("online-offline-poisson", "gpu0", "GPU-1a2b", "a.b", "..a", "name with space")) {
            Path p = OutputNames.file(dir, "share-", "k", ok, ".png");
            assertEquals(dir, p.getParent());
            assertEquals("share-" + ok + ".png", p.getFileName().toString());
        }
    }

    @Test
    void aFileNameOverTheFileSystemLimitIsRefused(@TempDir Path dir) {
        String name = "g".repeat(250);
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> OutputNames.file(dir, "share-", "gpus[0].id", name, ".png"));
        assertTrue(e.getMessage().contains("longer than 255 bytes"), e.getMessage());
    }

    @Test
    void aUserPathWithAControlCharacterIsRefusedWithTheFlag() {
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> OutputNames.userPath("--out", "out\0dir"));
        assertEquals("--out = \"out\\u0000dir\": holds a control character at position 4; give a path without one", e.getMessage());
        assertEquals(Path.of("../elsewhere"), OutputNames.userPath("--out", "../elsewhere"), "a path the user typed is theirs");
    }

    private static Path scenario(Path dir, String name, String gpuId) throws IOException {
        String json = Files.readString(Path.of(POISSON))
                .replace("\"name\": \"online-offline-poisson\"", "\"name\": " + quoted(name))
                .replace("\"id\": \"gpu0\"", "\"id\": " + quoted(gpuId));
        Path f = dir.resolve("s.json");
        Files.writeString(f, json);
        return f;
    }

    private static String quoted(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\0", "\\u0000") + "\"";
    }

    @ParameterizedTest
    @ValueSource(strings = {"..", "../../x", "a/b", "C:\\x", "x\0y"})
    void simulateRefusesAScenarioNameThatWouldLeaveTheOutputFolder(String name, @TempDir Path tmp) throws IOException {
        Path f = scenario(tmp, name, "gpu0");
        long before = count(Path.of("qgpu-sim-out"));
        Run r = qgpu("simulate", f.toString(), "--duration", "1s");
        assertEquals(2, r.rc(), r.out() + r.err());
        assertTrue(r.err().contains(f + ": name = \"" + OutputNames.shown(name) + "\""), r.err());
        assertFalse(r.err().contains("Exception"), r.err());
        assertEquals(before, count(Path.of("qgpu-sim-out")), "nothing written");
        assertFalse(Files.exists(Path.of("qgpu-sim-out/../../x")), "no file outside the output folder");
        assertFalse(r.out().contains("Wrote:"), "refused before the run");
    }

    @ParameterizedTest
    @ValueSource(strings = {"..", "../../x", "a/b", "C:\\x", "x\0y"})
    void simulateRefusesAGpuIdThatWouldLeaveTheOutputFolderEvenWithOut(String id, @TempDir Path tmp) throws IOException {
        Path f = scenario(tmp, "ok", id);
        Path out = tmp.resolve("out");
        Run r = qgpu("simulate", f.toString(), "--duration", "1s", "--out", out.toString());
        assertEquals(2, r.rc(), r.out() + r.err());
        assertTrue(r.err().contains(f + ": gpu.id = \"" + OutputNames.shown(id) + "\""), r.err());
        try (Stream<Path> s = Files.list(tmp)) {
            assertEquals(List.of(f), s.toList(), "nothing written beside the scenario");
        }
    }

    @Test
    void placeLedgerAndReplayRefuseAControlCharacterInAnOutputPathByFlag(@TempDir Path tmp) {
        Run place = qgpu("place", "--inventory", "examples/inventory.json", "--claims", "examples/claims-spread.json", "--out", "o\0.json");
        assertEquals(2, place.rc());
        assertTrue(place.err().contains("--out = \"o\\u0000.json\": holds a control character"), place.err());
        Run ledger = qgpu("ledger", "examples/ledger-inventory.json", "examples/ledger-operations.json", "--snapshot", "s\n.json");
        assertEquals(2, ledger.rc());
        assertTrue(ledger.err().contains("--snapshot = \"s\\u000a.json\": holds a control character"), ledger.err());
        assertFalse(ledger.out().contains("#0"), "refused before any operation is applied");
        Run replay = qgpu("replay", "--nodes", "n.csv", "--pods", "p.csv", "--out", "r\0");
        assertEquals(2, replay.rc());
        assertTrue(replay.err().contains("--out = \"r\\u0000\""), replay.err());
    }

    private static long count(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return 0;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            return s.count();
        }
    }
}
