package io.qgpu.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.PlacementPolicy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue 30 item 8: the small truths that a test can hold. */
class SmallTruthsTest {

    static final Path ROOT = CliConsistencyTest.ROOT;

    /** Runs a copy of ./qgpu beside a built-looking jar with the given environment; returns its output. */
    private static String runScript(Path tmp, Map<String, String> env) throws Exception {
        Path script = tmp.resolve("qgpu");
        Files.copy(ROOT.resolve("qgpu"), script);
        script.toFile().setExecutable(true);
        Path jar = tmp.resolve("samples/qgpu-cli/target/qgpu.jar");
        Files.createDirectories(jar.getParent());
        Files.writeString(jar, "");
        ProcessBuilder pb = new ProcessBuilder("bash", script.toString(), "--version").redirectErrorStream(true);
        pb.environment().remove("JAVA_HOME");
        pb.environment().putAll(env);
        Process p = pb.start();
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    }

    private static Path fakeJava(Path home, String name) throws Exception {
        Path java = home.resolve("bin/java");
        Files.createDirectories(java.getParent());
        Files.writeString(java, "#!/bin/sh\necho " + name + " \"$@\"\n");
        Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));
        return java;
    }

    @Test
    void theScriptUsesJavaHomeWhenItIsSet(@TempDir Path tmp) throws Exception {
        Path work = Files.createDirectories(tmp.resolve("repo"));
        fakeJava(tmp.resolve("jdk"), "jdk-in-java-home");
        fakeJava(tmp.resolve("path"), "java-on-path");
        String path = tmp.resolve("path/bin") + ":" + System.getenv("PATH");
        String withHome = runScript(work, Map.of("JAVA_HOME", tmp.resolve("jdk").toString(), "PATH", path));
        assertEquals("jdk-in-java-home -jar " + work.resolve("samples/qgpu-cli/target/qgpu.jar") + " --version", withHome);
        Path work2 = Files.createDirectories(tmp.resolve("repo2"));
        String without = runScript(work2, Map.of("PATH", path));
        assertTrue(without.startsWith("java-on-path -jar "), without);
    }

    @Test
    void everyDefaultOutputFolderIsIgnoredByGit() throws Exception {
        List<String> ignored = Files.readAllLines(ROOT.resolve(".gitignore"));
        assertTrue(ignored.contains("qgpu-sim-out/"), ignored.toString());
        assertTrue(ignored.contains("qgpu-replay-out/"), ignored.toString());
        assertTrue(new ReplayCommand().usage().contains("(default qgpu-replay-out)"));
        assertTrue(new SimulateCommand().usage().contains("qgpu-sim-out/"));
    }

    @Test
    void placeHelpListsEveryPolicy() {
        String help = new PlaceCommand().usage();
        for (PlacementPolicy p : PlacementPolicy.values()) {
            assertTrue(help.contains("binpack | spread | " + p.wireName()) || help.contains(p.wireName() + " |")
                    || help.contains("| " + p.wireName()), p + " in " + help);
        }
        assertTrue(help.contains("--node-policy P         engine default at node level: binpack | spread | fragmentation"), help);
        LedgerCommandTest.Run r = LedgerCommandTest.run("place", "--inventory", "examples/inventory.json", "--claims",
                "examples/claims-spread.json", "--node-policy", "fragmentation", "--gpu-policy", "fragmentation");
        assertTrue(r.code() == 0 || r.code() == 1, r.err());
        assertTrue(r.out().contains("\"node\" : \"fragmentation\""), r.out());
    }
}
