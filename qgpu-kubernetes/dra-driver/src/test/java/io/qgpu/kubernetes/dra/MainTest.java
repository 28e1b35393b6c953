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

    /** The test's directories; --cdi-root too unless given (the driver writes in it at start: never the machine's /var/run/cdi). */
    List<String> dirs(String... more) {
        List<String> a = new ArrayList<>(List.of("--node-name", "node-a", "--kubelet-registrar-directory-path", reg.toString(),
                "--kubelet-plugins-directory-path", plugins.toString()));
        if (java.util.Arrays.stream(more).noneMatch(m -> m.startsWith("--cdi-root"))) {
            a.addAll(List.of("--cdi-root", tmp.resolve("cdi").toString()));
        }
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
        refused("--state-file " + tmp + ": is a directory, not a file", dirs("--state-file", tmp.toString()));
        refused("--kubeconfig /no/kubeconfig: no such file", dirs("--kubeconfig", "/no/kubeconfig"));
        refused("--nvml-lib /no/lib.so: no such file", dirs("--nvml-lib", "/no/lib.so"));
        refused("--nvml-lib " + tmp + ": not a file", dirs("--nvml-lib", tmp.toString()));
        refused("--machine t4x4: needs --nvml-lib naming the fake NVML library", dirs("--machine", "t4x4"));
        refused("--rules x: must be qgpu, hami or gpu-manager", dirs("--rules", "x"));
        refused("--recover-after soon: must be a whole number of seconds", dirs("--recover-after", "soon"));
        refused("--recover-after 0: must be at least 1", dirs("--recover-after", "0"));
        Path deep = Files.createDirectories(tmp.resolve("p".repeat(100)));
        String longPlugins = "--kubelet-plugins-directory-path " + deep + ": the socket path " + deep.resolve("gpu.qgpu.io/dra.sock");
        Run r = run(Map.of(), "--node-name", "n", "--kubelet-registrar-directory-path", reg.toString(),
                "--kubelet-plugins-directory-path", deep.toString(), "--cdi-root", tmp.resolve("cdi").toString());
        assertEquals(Main.USAGE_ERROR, r.code());
        assertTrue(r.err().startsWith("error: " + longPlugins) && r.err().contains("at most 107"), r.err());
    }

    @Test
    void aMachineTheFakeLibraryDoesNotKnowIsRefusedByNameWithExitCodeTwo() throws Exception {
        Run r = run(Map.of(), dirs("--cdi-root", tmp.resolve("cdi").toString(), "--state-file", tmp.resolve("s.json").toString(),
                "--nvml-lib", FakeNvmlControl.path().toString(), "--machine", "dgx-z9").toArray(String[]::new));
        assertEquals(Main.USAGE_ERROR, r.code(), r.err());
        assertEquals("error: --machine dgx-z9: the fake NVML library plays dgx-h100, t4x4, a100-bridged, a100-mig, x86-numa, h100-vm"
                + System.lineSeparator(), r.err());
        assertEquals(0, FakeNvmlControl.load().fake_nvml_init_count(), "the refused start closed its NVML session");
    }

    @Test
    void aFileThatIsNoNvmlLibraryIsRefusedByNameWithExitCodeTwo() throws Exception {
        Path notALibrary = Files.writeString(tmp.resolve("libnvidia-ml.so.1"), "not a shared object");
        Run r = run(Map.of(), dirs("--cdi-root", tmp.resolve("cdi").toString(), "--nvml-lib", notALibrary.toString())
                .toArray(String[]::new));
        assertEquals(Main.USAGE_ERROR, r.code(), r.err());
        assertTrue(r.err().startsWith("error: --nvml-lib " + notALibrary + ": cannot be loaded as the NVML library ("), r.err());
        assertTrue(r.err().contains("give the path of libnvidia-ml.so.1"), r.err());
        assertFalse(r.err().contains("-Dqgpu.nvml.library") || r.err().contains("Nvml.builder"), r.err());
        assertEquals(1, r.err().lines().count(), r.err());
    }

    @Test
    void defaultsAreTheKubeletsDirectoriesAndBothValueFormsWork() {
        // the directories are checked by writing in them: the test's own, never the machine's
        DriverConfig c = Main.config(Main.parse(dirs("--cdi-root=" + tmp.resolve("run/cdi"), "--state-file", tmp.resolve("x/s.json").toString(), "--rules", "hami",
                "--recover-after", "30")), Map.of());
        assertEquals("node-a", c.nodeName());
        assertEquals(reg.toAbsolutePath().resolve("gpu.qgpu.io-reg.sock"), c.registrationSocket());
        assertEquals(plugins.toAbsolutePath().resolve("gpu.qgpu.io/dra.sock"), c.draSocket());
        assertEquals(tmp.resolve("run/cdi").toAbsolutePath(), c.cdiRoot());
        assertEquals(tmp.resolve("x/s.json").toAbsolutePath(), c.stateFile());
        assertEquals("hami", c.rules().name());
        assertEquals(Duration.ofSeconds(30), c.recoverAfter());
        DriverConfig d = DriverConfig.defaults("n");
        assertEquals(Path.of("/var/lib/kubelet/plugins_registry"), d.registrarDir());
        assertEquals(Path.of("/var/lib/kubelet/plugins"), d.pluginsDir());
        assertEquals(Path.of("/var/run/cdi"), d.cdiRoot());
        assertEquals(Path.of("/var/lib/kubelet/plugins/gpu.qgpu.io/state.json"), d.stateFile());
        assertEquals("qgpu", d.rules().name());
        assertEquals("node-7", Main.config(Main.parse(List.of("--kubelet-registrar-directory-path", reg.toString(),
                "--kubelet-plugins-directory-path", plugins.toString(), "--cdi-root", tmp.resolve("cdi").toString())),
                Map.of("NODE_NAME", "node-7")).nodeName());
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

    // ---- issue 41 items 3-4: every start-up check is one line naming the flag and the value, exit code 2 ----

    List<String> fake(String... more) {
        List<String> a = dirs("--nvml-lib", FakeNvmlControl.path().toString(), "--machine", "t4x4");
        a.addAll(List.of(more));
        return a;
    }

    @Test
    void aCorruptStateFileNamesTheFileThePathAndWhatIsWrong() throws Exception {
        Path state = Files.writeString(tmp.resolve("state.json"), "garbage");
        Run r = run(Map.of(), fake("--state-file=" + state).toArray(String[]::new));
        assertEquals(Main.USAGE_ERROR, r.code(), r.err());
        assertEquals(1, r.err().lines().count(), r.err());
        assertTrue(r.err().startsWith("error: --state-file " + state + ": is not valid JSON"), r.err());
        assertTrue(r.err().contains("(line 1, column "), r.err());
        assertTrue(r.err().contains("fix or remove the file"), r.err());
        assertFalse(r.err().contains("REDACTED") || r.err().contains("Unrecognized token") || r.err().contains("Exception"), r.err());
        Files.writeString(state, "{\"version\": 99, \"node\": \"node-a\", \"claims\": []}");
        refused("--state-file " + state + ": $.version: 99 must be 1; fix or remove the file (the driver then starts with no prepared"
                + " claims)", fake("--state-file=" + state));
        Files.writeString(state, "{\"version\": 1, \"node\": \"node-b\", \"claims\": []}");
        refused("--state-file " + state + ": $.node: \"node-b\" must be this node's name \"node-a\"; fix or remove the file (the driver"
                + " then starts with no prepared claims)", fake("--state-file=" + state));
    }

    @Test
    void stateAndCdiDirectoriesThatCannotBeWrittenAreRefusedAtStart() throws Exception {
        Path file = Files.writeString(tmp.resolve("a-file"), "x");
        refused("--state-file " + file.resolve("s.json") + ": its directory " + file + " cannot be created (" + file
                + " is a file, not a directory)", dirs("--state-file", file.resolve("s.json").toString()));
        refused("--cdi-root " + file.resolve("cdi") + ": cannot be created (" + file + " is a file, not a directory)",
                dirs("--cdi-root", file.resolve("cdi").toString()));
        // a read-only file system: sysfs takes no new file, not even from root
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isDirectory(Path.of("/sys/kernel")));
        Run r = run(Map.of(), dirs("--cdi-root", "/sys/kernel").toArray(String[]::new));
        assertEquals(Main.USAGE_ERROR, r.code(), r.err());
        assertTrue(r.err().startsWith("error: --cdi-root /sys/kernel: is not writable ("), r.err());
        assertEquals(1, r.err().lines().count(), r.err());
    }

    @Test
    void aDirectoryOfAnotherUserIsRefusedWithoutRoot() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeFalse("root".equals(System.getProperty("user.name")), "root writes anywhere");
        Path locked = Files.createDirectories(tmp.resolve("locked"));
        Files.setPosixFilePermissions(locked, java.nio.file.attribute.PosixFilePermissions.fromString("r-xr-xr-x"));
        try {
            refused("--state-file " + locked.resolve("s.json") + ": its directory " + locked + " is not writable (permission denied)",
                    dirs("--state-file", locked.resolve("s.json").toString()));
            refused("--cdi-root " + locked + ": is not writable (permission denied)", dirs("--cdi-root", locked.toString()));
        } finally {
            Files.setPosixFilePermissions(locked, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        }
    }

    @Test
    void aRecoveryTooLongIsRefusedWithItsMaximum() {
        refused("--recover-after 99999999999999: must be at most 3153600000 (100 years)", dirs("--recover-after", "99999999999999"));
        refused("--recover-after 99999999999999999999999: must be at most 3153600000 (100 years)",
                dirs("--recover-after", "99999999999999999999999"));
        assertEquals(Duration.ofSeconds(3153600000L),
                Main.config(Main.parse(dirs("--recover-after", "3153600000")), Map.of()).recoverAfter());
    }

    @Test
    void mpsControlThatCannotRunIsRefusedWhenTheAgentStartsTheDaemons() throws Exception {
        Path missing = tmp.resolve("no/nvidia-cuda-mps-control");
        refused("--mps-control " + missing + ": no such file",
                dirs("--sharing", "mps", "--mps-daemons", "agent", "--mps-control", missing.toString()));
        Path plain = Files.writeString(tmp.resolve("mps-control"), "#!/bin/sh\n");
        refused("--mps-control " + plain + ": not executable (chmod +x, or give the program's path)",
                dirs("--sharing", "mps", "--mps-daemons", "agent", "--mps-control", plain.toString()));
        Run r = run(Map.of("PATH", tmp.toString()), dirs("--sharing", "mps", "--mps-daemons", "agent").toArray(String[]::new));
        assertEquals(Main.USAGE_ERROR, r.code(), r.err());
        assertEquals("error: --mps-control nvidia-cuda-mps-control: not found on the PATH (" + tmp + "); give the program's path"
                + System.lineSeparator(), r.err());
        // with the MPS control daemon DaemonSet (external) the agent never runs it: nothing to check
        Main.config(Main.parse(dirs("--sharing", "mps", "--mps-control", missing.toString())), Map.of());
    }

    @Test
    void anApiServerThatCannotBeReachedIsOneLineWithItsUrlAndCauseWithinTheTimeout() throws Exception {
        int port = io.qgpu.kubernetes.node.TestKubeconfig.closedPort();
        Path closed = io.qgpu.kubernetes.node.TestKubeconfig.write(tmp, "https://127.0.0.1:" + port);
        long t0 = System.nanoTime();
        refused("--kubeconfig " + closed + ": the Kubernetes API server https://127.0.0.1:" + port + "/: connection refused",
                fake("--kubeconfig", closed.toString()));
        Path unknown = io.qgpu.kubernetes.node.TestKubeconfig.write(tmp, "https://" + io.qgpu.kubernetes.node.TestKubeconfig.UNRESOLVABLE
                + ":6443");
        refused("--kubeconfig " + unknown + ": the Kubernetes API server https://" + io.qgpu.kubernetes.node.TestKubeconfig.UNRESOLVABLE
                + ":6443/: unknown host " + io.qgpu.kubernetes.node.TestKubeconfig.UNRESOLVABLE, fake("--kubeconfig", unknown.toString(),
                "--api-timeout", "5s"));
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(15), "both within the timeouts");
        refused("--api-timeout = \"10\": must be a duration: a number and a unit: ns, us, ms, s or m (for example \"250ms\", \"1.5s\","
                + " \"40us\", \"2m\")", dirs("--api-timeout", "10"));
        refused("--api-timeout 0s: must be above 0 and at most 10m", dirs("--api-timeout", "0s"));
    }

    @Test
    void aServerThatDoesNotAnswerInTimeIsNamedWithTheTimeout() throws Exception {
        try (java.net.ServerSocket silent = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
            Path k = io.qgpu.kubernetes.node.TestKubeconfig.write(tmp, "https://127.0.0.1:" + silent.getLocalPort());
            long t0 = System.nanoTime();
            refused("--kubeconfig " + k + ": the Kubernetes API server https://127.0.0.1:" + silent.getLocalPort()
                    + "/: no answer within 1s (--api-timeout)", fake("--kubeconfig", k.toString(), "--api-timeout", "1s"));
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(5), "within the timeout");
        }
    }

    @Test
    void aDriverStoppedBySigtermSaysSo() throws Exception {
        io.fabric8.kubernetes.client.server.mock.KubernetesMockServer api =
                new io.fabric8.kubernetes.client.server.mock.KubernetesMockServer(false);
        api.expect().get().withPath("/version").andReturn(200, "{\"major\":\"1\",\"minor\":\"34\"}").always();
        api.init();
        try {
            Path k = io.qgpu.kubernetes.node.TestKubeconfig.write(tmp, api.url("/").replaceAll("/$", ""));
            Path java = Path.of(System.getProperty("java.home"), "bin", "java");
            List<String> cmd = new ArrayList<>(List.of(java.toString(), "-cp", System.getProperty("java.class.path"), Main.class.getName()));
            cmd.addAll(fake("--kubeconfig", k.toString(), "--state-file", tmp.resolve("s.json").toString()));
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            StringBuilder log = new StringBuilder();
            java.io.BufferedReader r = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            String line;
            while (System.nanoTime() < deadline && (line = r.readLine()) != null) {
                log.append(line).append('\n');
                if (line.contains("GPU(s) published")) {
                    break;
                }
            }
            assertTrue(log.toString().contains("GPU(s) published"), log.toString());
            // SIGTERM, as the kubelet sends (Process.destroy would close the streams before the last line is read)
            assertEquals(0, new ProcessBuilder("kill", "-TERM", String.valueOf(p.pid())).start().waitFor());
            while ((line = r.readLine()) != null) {
                log.append(line).append('\n');
            }
            assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the JVM ended");
            assertTrue(log.toString().contains("stopping (signal received)"), log.toString());
        } finally {
            api.destroy();
        }
    }
}
