package io.qgpu.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 41 item 1: no command writes over a file it reads in the same run, whatever the spelling of the
 * output (relative, {@code ..}, a symbolic link, a hard link). Each refusal: exit 2 before any work, one
 * line naming the output's flag, the input's flag and the file, and the input untouched.
 */
class InputsNeverOverwrittenTest {

    /** The spellings of one file, as an output flag would name it. */
    enum Spelling { RELATIVE, DOT_DOT, SYMLINK, HARD_LINK }

    /** A folder under target/, so that a relative spelling works from the module folder tests run in. */
    private Path base;

    @BeforeEach
    void setUp() throws IOException {
        Files.createDirectories(Path.of("target"));
        base = Path.of("target").resolve(Files.createTempDirectory(Path.of("target").toAbsolutePath(), "clash").getFileName());
        Files.createDirectories(base.resolve("sub"));
    }

    @AfterEach
    void tearDown() throws IOException {
        try (Stream<Path> s = Files.walk(base)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    record Run(int code, String out, String err) {
    }

    static Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(List.of(args), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    /** A copy of {@code example} at {@code base/name}; absolute, as the input flag takes it. */
    private Path copy(String example, String name) throws IOException {
        Path p = base.resolve(name);
        Files.copy(Path.of(example), p);
        Files.setLastModifiedTime(p, FileTime.fromMillis(1_000_000_000_000L));
        return p.toAbsolutePath();
    }

    /** {@code input} spelled another way (in {@code base}); a link is made next to it. */
    private String spell(Path input, Spelling s, String linkName) throws IOException {
        Path rel = base.resolve(input.getFileName());
        return switch (s) {
            case RELATIVE -> rel.toString();
            case DOT_DOT -> base.resolve("sub").resolve("..").resolve(input.getFileName()).toString();
            case SYMLINK -> Files.createSymbolicLink(base.resolve(linkName), input).toString();
            case HARD_LINK -> Files.createLink(base.resolve(linkName), input).toString();
        };
    }

    /** Exit 2, one line naming both flags and the file, the input's bytes and time unchanged, and nothing else written. */
    private static void refused(Run r, String outFlag, String inFlag, String file, Path input, byte[] before) throws IOException {
        assertEquals(2, r.code(), r.err() + r.out());
        String err = r.err().strip();
        assertFalse(err.contains("\n"), "one line: " + err);
        assertTrue(err.contains(outFlag + " = ") && err.contains("is the file " + inFlag + " reads"), err);
        assertTrue(err.contains(file), err);
        assertTrue(err.contains("never writes over a file it reads"), err);
        assertArrayEquals(before, Files.readAllBytes(input), "the input is untouched");
        assertEquals(1_000_000_000_000L, Files.getLastModifiedTime(input).toMillis(), "the input is not even rewritten");
        assertEquals("", r.out(), "refused before any work");
    }

    @Test
    void placeOutNeverNamesTheInventoryOrTheClaims() throws Exception {
        for (Spelling s : Spelling.values()) {
            for (String inFlag : List.of("--inventory", "--claims")) {
                Path inv = copy("examples/inventory.json", "inv-" + s + inFlag + ".json");
                Path claims = copy("examples/claims-spread.json", "claims-" + s + inFlag + ".json");
                Path target = inFlag.equals("--inventory") ? inv : claims;
                byte[] before = Files.readAllBytes(target);
                String out = spell(target, s, "link-" + s + inFlag + ".json");
                Run r = run("place", "--inventory", inv.toString(), "--claims", claims.toString(), "--out", out);
                refused(r, "--out", inFlag, out, target, before);
            }
        }
    }

    @Test
    void placeOutElsewhereStillWorks() throws Exception {
        Path inv = copy("examples/inventory.json", "inv.json");
        Path claims = copy("examples/claims-spread.json", "claims.json");
        Run r = run("place", "--inventory", inv.toString(), "--claims", claims.toString(), "--out", base.resolve("out.json").toString());
        assertEquals(0, r.code(), r.err());
        assertTrue(Files.readString(base.resolve("out.json")).contains("placements"));
    }

    @Test
    void ledgerSnapshotNeverNamesTheInventoryTheOperationsOrTheRestoredSnapshot() throws Exception {
        for (Spelling s : Spelling.values()) {
            for (String inFlag : List.of("INVENTORY.json", "OPERATIONS.json")) {
                Path inv = copy("examples/ledger-inventory.json", "inv-" + s + inFlag);
                Path ops = copy("examples/ledger-operations.json", "ops-" + s + inFlag);
                Path target = inFlag.equals("INVENTORY.json") ? inv : ops;
                byte[] before = Files.readAllBytes(target);
                String out = spell(target, s, "link-" + s + inFlag);
                Run r = run("ledger", inv.toString(), ops.toString(), "--snapshot", out);
                refused(r, "--snapshot", inFlag, out, target, before);
            }
            for (String inFlag : List.of("--restore", "OPERATIONS.json")) {
                Path snap = copy("examples/ledger-snapshot.json", "snap-" + s + inFlag);
                Path ops = copy("examples/ledger-operations.json", "rops-" + s + inFlag);
                Path target = inFlag.equals("--restore") ? snap : ops;
                byte[] before = Files.readAllBytes(target);
                String out = spell(target, s, "rlink-" + s + inFlag);
                Run r = run("ledger", "--restore", snap.toString(), ops.toString(), "--snapshot", out);
                refused(r, "--snapshot", inFlag, out, target, before);
            }
        }
    }

    /** The simulator's outputs; the scenario lies in --out under each name and is never written over. */
    @Test
    void simulateOutNeverWritesOverTheScenario() throws Exception {
        String scenario = "scenarios/online-offline-fixed-share.json";
        List<String> names = new ArrayList<>(List.of("shares.csv", "metrics.csv", "trace.csv"));
        String gpu = io.qgpu.testkit.sim.scenario.ScenarioFile.read(Path.of(scenario)).gpus().get(0).id();
        names.add("share-" + gpu + ".png");
        for (String name : names) {
            for (Spelling s : Spelling.values()) {
                Path dir = Files.createDirectories(base.resolve("sim-" + s + "-" + name.replace('.', '_')));
                Files.createDirectories(dir.resolve("sub"));
                Path input;
                String outDir;
                switch (s) {
                    case RELATIVE -> {
                        input = copyTo(scenario, dir.resolve(name));
                        outDir = dir.toString();
                    }
                    case DOT_DOT -> {
                        input = copyTo(scenario, dir.resolve(name));
                        outDir = dir.resolve("sub").resolve("..").toString();
                    }
                    case SYMLINK -> {
                        input = copyTo(scenario, base.resolve("scn-" + s + name));
                        Files.createSymbolicLink(dir.resolve(name), input.toAbsolutePath());
                        outDir = dir.toString();
                    }
                    default -> {
                        input = copyTo(scenario, base.resolve("scn-" + s + name));
                        Files.createLink(dir.resolve(name), input);
                        outDir = dir.toString();
                    }
                }
                byte[] before = Files.readAllBytes(input);
                Run r = run("simulate", input.toString(), "--duration", "1s", "--out", outDir);
                refused(r, "--out", "SCENARIO.json", outDir, input, before);
                assertTrue(r.err().contains("its " + name + " is the file"), r.err());
            }
        }
        Path dir = Files.createDirectories(base.resolve("cmp"));
        Path input = copyTo(scenario, dir.resolve("compare.csv"));
        byte[] before = Files.readAllBytes(input);
        Run r = run("simulate", input.toString(), "--duration", "1s", "--compare", "--out", dir.toString());
        refused(r, "--out", "SCENARIO.json", dir.toString(), input, before);
    }

    /** The replay's outputs; the node or pod list lies in --out under each name and is never written over. */
    @Test
    void replayOutNeverWritesOverTheTrace() throws Exception {
        String nodesCsv = "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,131072,2,T4\n";
        String podsCsv = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,500\n";
        for (String name : List.of("summary.csv", "curve.png", "curve-binpack.csv")) {
            for (String inFlag : List.of("--nodes", "--pods")) {
                for (Spelling s : Spelling.values()) {
                    Path dir = Files.createDirectories(base.resolve("rp-" + s + inFlag + name.replace('.', '_')));
                    Files.createDirectories(dir.resolve("sub"));
                    Path nodes = Files.writeString(base.resolve("n-" + s + inFlag + name), nodesCsv);
                    Path pods = Files.writeString(base.resolve("p-" + s + inFlag + name), podsCsv);
                    String outDir = s == Spelling.DOT_DOT ? dir.resolve("sub").resolve("..").toString() : dir.toString();
                    Path target = inFlag.equals("--nodes") ? nodes : pods;
                    switch (s) {
                        case RELATIVE, DOT_DOT -> {
                            Files.move(target, dir.resolve(name));
                            target = dir.resolve(name);
                            if (inFlag.equals("--nodes")) {
                                nodes = target;
                            } else {
                                pods = target;
                            }
                        }
                        case SYMLINK -> Files.createSymbolicLink(dir.resolve(name), target.toAbsolutePath());
                        default -> Files.createLink(dir.resolve(name), target);
                    }
                    Files.setLastModifiedTime(target, FileTime.fromMillis(1_000_000_000_000L));
                    byte[] before = Files.readAllBytes(target);
                    Run r = run("replay", "--nodes", nodes.toAbsolutePath().toString(), "--pods", pods.toAbsolutePath().toString(),
                            "--policies", "binpack", "--seeds", "1", "--threads", "1", "--out", outDir);
                    refused(r, "--out", inFlag, outDir, target, before);
                    assertTrue(r.err().contains("its " + name + " is the file"), r.err());
                }
            }
        }
    }

    @Test
    void anOutDirThatIsAnInputOrAFileIsRefused() throws Exception {
        Path nodes = Files.writeString(base.resolve("nodes.csv"), "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,131072,2,T4\n");
        Path pods = Files.writeString(base.resolve("pods.csv"), "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,500\n");
        byte[] before = Files.readAllBytes(pods);
        Run r = run("replay", "--nodes", nodes.toString(), "--pods", pods.toString(), "--out", pods.toString());
        assertEquals(2, r.code());
        assertEquals("qgpu replay: --out = \"" + pods + "\": is the file --pods reads, not a directory; qgpu never writes over"
                + " a file it reads: give another --out", r.err().strip());
        assertArrayEquals(before, Files.readAllBytes(pods));
        Path other = Files.writeString(base.resolve("other.txt"), "x");
        Run s = run("simulate", "scenarios/online-offline-fixed-share.json", "--out", other.toString());
        assertEquals(2, s.code());
        assertEquals("qgpu simulate: --out = \"" + other + "\": is a file, not a directory; give a directory (it is created"
                + " when missing)", s.err().strip());
    }

    @Test
    void aFolderGivenAsAnInputOrAsTheOutputIsRefusedWithItsFlag() throws Exception {
        Path inv = copy("examples/inventory.json", "inv.json");
        Path claims = copy("examples/claims-spread.json", "claims.json");
        Run in = run("place", "--inventory", base.toString(), "--claims", claims.toString());
        assertEquals(2, in.code());
        assertEquals("qgpu place: --inventory = \"" + base + "\": is a directory; give a file", in.err().strip());
        Run out = run("place", "--inventory", inv.toString(), "--claims", claims.toString(), "--out", base.toString());
        assertEquals(2, out.code());
        assertEquals("qgpu place: --out = \"" + base + "\": is a directory; give a file name", out.err().strip());
        Run nodes = run("replay", "--nodes", base.toString(), "--pods", claims.toString());
        assertEquals(2, nodes.code());
        assertEquals("qgpu replay: --nodes = \"" + base + "\": is a directory; give a file", nodes.err().strip());
        Run scn = run("simulate", base.toString());
        assertEquals("qgpu simulate: SCENARIO.json = \"" + base + "\": is a directory; give a file", scn.err().strip());
        Run ops = run("ledger", inv.toString(), base.toString());
        assertEquals("qgpu ledger: OPERATIONS.json = \"" + base + "\": is a directory; give a file", ops.err().strip());
        Run restore = run("ledger", "--restore", base.toString());
        assertEquals("qgpu ledger: --restore = \"" + base + "\": is a directory; give a file", restore.err().strip());
    }

    private static Path copyTo(String from, Path to) throws IOException {
        Files.copy(Path.of(from), to);
        Files.setLastModifiedTime(to, FileTime.fromMillis(1_000_000_000_000L));
        return to;
    }
}
