package io.qgpu.kubernetes.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import io.qgpu.kubernetes.node.FakeNvmlControl;

/** Item 1: one way to start it; a bad flag or value is one line naming the flag and the value, exit code 2. */
class MainTest {
    @TempDir
    Path tmp;
    Path reg;
    Path plugins;

    @BeforeEach
    void makeDirectories() throws Exception {
        reg = Files.createDirectories(tmp.resolve("reg"));
        plugins = Files.createDirectories(tmp.resolve("plugins"));
    }

    record Run(int code, String out, String err) {
    }

    static Run run(Map<String, String> env, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(args, env, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    List<String> dirs(String... more) {
        List<String> a = new ArrayList<>(List.of("--node-name", "node-a", "--kubelet-registrar-directory-path", reg.toString(),
                "--kubelet-plugins-directory-path", plugins.toString()));
        a.addAll(List.of(more));
        return a;
    }

    void refused(String line, List<String> args) {
        Run r = run(Map.of(), args.toArray(String[]::new));
        assertEquals(Main.USAGE_ERROR, r.code(), r.err());
        assertEquals("error: " + line + System.lineSeparator(), r.err(), "one line, no stack trace");
        assertEquals("", r.out());
    }

    @Test
    void badFlagsAndValuesAreRefusedByNameAndValueWithExitCodeTwo() throws Exception {
        refused("--node-name is required (or $NODE_NAME)", List.of());
        refused("unknown argument --port", dirs("--port", "1"));
        refused("unknown argument --cdi-dir=/x", dirs("--cdi-dir=/x"));
        refused("--cdi-root needs a value", dirs("--cdi-root"));
        refused("--cdi-root \"\": must not be empty", dirs("--cdi-root="));
        refused("--node-name is given twice", dirs("--node-name", "b"));
        refused("--node-name Node_A: must be a DNS subdomain (lower-case letters, digits, '-' and '.')",
                List.of("--node-name", "Node_A"));
        refused("--kubelet-registrar-directory-path /no/such/dir: no such directory",
                List.of("--node-name", "n", "--kubelet-registrar-directory-path", "/no/such/dir"));
        refused("--kubelet-plugins-directory-path /no/plugins: no such directory",
                List.of("--node-name", "n", "--kubelet-registrar-directory-path", reg.toString(), "--kubelet-plugins-directory-path=/no/plugins"));
        Path file = Files.writeString(tmp.resolve("file"), "x");
        refused("--cdi-root " + file + ": not a directory", dirs("--cdi-root", file.toString()));
        refused("--state-file " + tmp + ": is a directory", dirs("--state-file", tmp.toString()));
        refused("--kubeconfig /no/kubeconfig: no such file", dirs("--kubeconfig", "/no/kubeconfig"));
        refused("--nvml-lib /no/lib.so: no such file", dirs("--nvml-lib", "/no/lib.so"));
        refused("--machine t4x4: needs --nvml-lib naming the fake NVML library", dirs("--machine", "t4x4"));
        refused("--rules x: must be qgpu, hami or gpu-manager", dirs("--rules", "x"));
        refused("--recover-after soon: must be a whole number of seconds", dirs("--recover-after", "soon"));
        refused("--recover-after 0: must be at least 1", dirs("--recover-after", "0"));
        Path deep = Files.createDirectories(tmp.resolve("p".repeat(100)));
        String longPlugins = "--kubelet-plugins-directory-path " + deep + ": the socket path " + deep.resolve("gpu.qgpu.io/dra.sock");
        Run r = run(Map.of(), "--node-name", "n", "--kubelet-registrar-directory-path", reg.toString(),
                "--kubelet-plugins-directory-path", deep.toString());
        assertEquals(Main.USAGE_ERROR, r.code());
        assertTrue(r.err().startsWith("error: " + longPlugins) && r.err().contains("at most 107"), r.err());
    }

    @Test
    void aMachineTheFakeLibraryDoesNotKnowIsRefusedByNameWithExitCodeTwo() throws Exception {
        Run r = run(Map.of(), dirs("--cdi-root", tmp.resolve("cdi").toString(), "--state-file", tmp.resolve("s.json").toString(),
                "--nvml-lib", FakeNvmlControl.path().toString(), "--machine", "dgx-z9").toArray(String[]::new));
        assertEquals(Main.USAGE_ERROR, r.code(), r.err());
        assertEquals("error: --machine dgx-z9: the fake library knows dgx-h100, t4x4 and a100-bridged" + System.lineSeparator(), r.err());
        assertEquals(0, FakeNvmlControl.load().fake_nvml_init_count(), "the refused start closed its NVML session");
    }

    @Test
    void aFileThatIsNoNvmlLibraryIsRefusedByNameWithExitCodeTwo() throws Exception {
        Path notALibrary = Files.writeString(tmp.resolve("libnvidia-ml.so.1"), "not a shared object");
        Run r = run(Map.of(), dirs("--cdi-root", tmp.resolve("cdi").toString(), "--nvml-lib", notALibrary.toString())
                .toArray(String[]::new));
        assertEquals(Main.USAGE_ERROR, r.code(), r.err());
        assertTrue(r.err().startsWith("error: --nvml-lib " + notALibrary + ": not an NVML library: "), r.err());
        assertEquals(1, r.err().lines().count(), r.err());
    }

    @Test
    void defaultsAreTheKubeletsDirectoriesAndBothValueFormsWork() {
        DriverConfig c = Main.config(Main.parse(dirs("--cdi-root=/run/cdi", "--state-file", "/x/s.json", "--rules", "hami",
                "--recover-after", "30")), Map.of());
        assertEquals("node-a", c.nodeName());
        assertEquals(reg.toAbsolutePath().resolve("gpu.qgpu.io-reg.sock"), c.registrationSocket());
        assertEquals(plugins.toAbsolutePath().resolve("gpu.qgpu.io/dra.sock"), c.draSocket());
        assertEquals(Path.of("/run/cdi"), c.cdiRoot());
        assertEquals(Path.of("/x/s.json"), c.stateFile());
        assertEquals("hami", c.rules().name());
        assertEquals(Duration.ofSeconds(30), c.recoverAfter());
        DriverConfig d = DriverConfig.defaults("n");
        assertEquals(Path.of("/var/lib/kubelet/plugins_registry"), d.registrarDir());
        assertEquals(Path.of("/var/lib/kubelet/plugins"), d.pluginsDir());
        assertEquals(Path.of("/var/run/cdi"), d.cdiRoot());
        assertEquals(Path.of("/var/lib/kubelet/plugins/gpu.qgpu.io/state.json"), d.stateFile());
        assertEquals("qgpu", d.rules().name());
        assertEquals("node-7", Main.config(Main.parse(List.of("--kubelet-registrar-directory-path", reg.toString(),
                "--kubelet-plugins-directory-path", plugins.toString())), Map.of("NODE_NAME", "node-7")).nodeName());
        assertEquals(plugins.toAbsolutePath().resolve("gpu.qgpu.io/state.json"),
                Main.config(Main.parse(dirs()), Map.of()).stateFile());
        Run help = run(Map.of(), "--help");
        assertEquals(0, help.code());
        assertTrue(help.out().contains("--kubelet-registrar-directory-path"));
    }

    @Test
    void theJvmExitsWithTwoAndPrintsOneLine() throws Exception {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process p = new ProcessBuilder(java.toString(), "-cp", System.getProperty("java.class.path"), Main.class.getName(),
                "--node-name", "Node_A").start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the JVM ended");
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(2, p.exitValue(), err);
        assertEquals(List.of("error: --node-name Node_A: must be a DNS subdomain (lower-case letters, digits, '-' and '.')"),
                err.lines().toList());
        assertFalse(err.contains("Exception"));
        assertEquals("", new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
    }
    @Test
    void sharingFlagsAreRefusedByNameAndValueWithExitCodeTwo() throws Exception {
        refused("--sharing = \"mig\": must be one of none, mps, hami-core", dirs("--sharing", "mig"));
        refused("--mps-root = \"mps\": must be an absolute path", dirs("--sharing", "mps", "--mps-root", "mps"));
        refused("--hami-core-cache-root = \"/x\": only with --sharing hami-core (--sharing is none)", dirs("--hami-core-cache-root", "/x"));
        refused("--hami-core-preload = \"ld\": must be one of file, env", dirs("--sharing=hami-core", "--hami-core-preload=ld"));
        refused("--hami-core-preload-file = \"/etc/p\": only with --hami-core-preload file (--hami-core-preload is env)",
                dirs("--sharing=hami-core", "--hami-core-preload", "env", "--hami-core-preload-file", "/etc/p"));
        Path missing = tmp.resolve("no/libvgpu.so");
        refused("--hami-core-library = \"" + missing + "\": no such file: --sharing hami-core needs HAMi-core's libvgpu.so on the node "
                + "(build it from HAMi-core, or run with --sharing none or mps)", dirs("--sharing=hami-core", "--hami-core-library", missing.toString()));
        DriverConfig c = Main.config(Main.parse(dirs("--sharing", "mps", "--mps-root=/run/x/mps", "--mps-control", "/opt/mpsc")), Map.of());
        assertEquals(io.qgpu.kubernetes.node.sharing.SharingBackend.MPS, c.sharing().backend());
        assertEquals(Path.of("/run/x/mps"), c.sharing().mpsRoot());
        assertEquals(Path.of("/opt/mpsc"), c.sharing().mpsControl());
        assertEquals(io.qgpu.kubernetes.node.sharing.SharingOptions.defaults(), Main.config(Main.parse(dirs()), Map.of()).sharing());
        for (String flag : io.qgpu.kubernetes.node.sharing.SharingOptions.FLAGS) {
            assertTrue(Main.USAGE.contains(flag + " "), flag + " is in the usage text");
        }
    }
}
