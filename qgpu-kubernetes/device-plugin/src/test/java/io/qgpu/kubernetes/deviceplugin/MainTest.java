package io.qgpu.kubernetes.deviceplugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Health;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ListAndWatchResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import io.qgpu.kubernetes.node.FakeNvmlControl;

/** The command line, and small pieces of the wire form. */
class MainTest {
    @TempDir
    Path tmp;

    PluginConfig config(String... args) {
        return Main.config(Main.parse(List.of(args)), Map.of());
    }

    void refused(String message, String... args) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> config(args));
        assertEquals(message, e.getMessage());
    }

    @Test
    void defaultsFromThePluginDirectory() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("device-plugins"));
        PluginConfig c = config("--plugin-dir", dir.toString());
        assertEquals(dir.toAbsolutePath(), c.pluginDir());
        assertEquals("kubelet.sock", c.kubeletSocket());
        assertEquals("qgpu.sock", c.endpoint());
        assertEquals(tmp.toAbsolutePath().resolve("qgpu-device-plugin-state.json"), c.stateFile());
        assertEquals("local", c.nodeName());
        assertEquals("qgpu", c.rules().name());
        assertEquals(4L << 30, c.slotMemoryBytes());
        assertEquals(Duration.ofMinutes(5), c.recoverAfter());
        assertEquals(Duration.ofSeconds(10), c.recoveryCheckEvery());
        assertEquals("node-7", Main.config(Main.parse(List.of("--plugin-dir", dir.toString())), Map.of("NODE_NAME", "node-7"))
                .nodeName());
        PluginConfig all = config("--plugin-dir", dir.toString(), "--node-name", "n1", "--state-file", tmp.resolve("x/s.json").toString(),
                "--rules", "hami", "--recover-after", "30", "--machine", "t4x4");
        assertEquals("n1", all.nodeName());
        assertEquals(tmp.resolve("x/s.json"), all.stateFile());
        assertEquals("hami", all.rules().name());
        assertEquals(Duration.ofSeconds(30), all.recoverAfter());
        assertEquals("t4x4", all.fakeMachine().orElseThrow());
    }

    @Test
    void badArgumentsAreRefusedByName() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("d"));
        refused("--plugin-dir is required");
        refused("--plugin-dir /no/such/dir: no such directory", "--plugin-dir", "/no/such/dir");
        refused("unknown argument --port", "--plugin-dir", dir.toString(), "--port", "1");
        refused("--plugin-dir needs a value", "--plugin-dir");
        refused("--node-name is given twice", "--plugin-dir", dir.toString(), "--node-name", "a", "--node-name", "b");
        refused("--rules x: must be qgpu, hami or gpu-manager", "--plugin-dir", dir.toString(), "--rules", "x");
        refused("--recover-after soon: must be a whole number of seconds", "--plugin-dir", dir.toString(), "--recover-after", "soon");
        refused("--recover-after 0: must be at least 1", "--plugin-dir", dir.toString(), "--recover-after", "0");
        refused("--nvml-lib /no/lib.so: no such file", "--plugin-dir", dir.toString(), "--nvml-lib", "/no/lib.so");
    }

    record Run(int rc, String out, String err) {
    }

    static Run run(String... args) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
        int rc = Main.run(List.of(args), new java.io.PrintStream(out, true, java.nio.charset.StandardCharsets.UTF_8),
                new java.io.PrintStream(err, true, java.nio.charset.StandardCharsets.UTF_8));
        return new Run(rc, out.toString(java.nio.charset.StandardCharsets.UTF_8), err.toString(java.nio.charset.StandardCharsets.UTF_8));
    }

    /** The first line of standard error; the rest is the usage text. No stack trace, no Java class name. */
    static String firstLine(Run r) {
        assertFalse(r.err().contains("\tat ") || r.err().contains("Exception"), r.err());
        return r.err().lines().findFirst().orElse("");
    }

    @Test
    void anUnknownFakeMachineIsOneLineAndExitCode2() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("d"));
        Run r = run("--plugin-dir", dir.toString(), "--nvml-lib", FakeNvmlControl.path().toString(), "--machine", "nosuch");
        assertEquals(2, r.rc());
        assertEquals(1, r.err().lines().count(), "one line, no usage text: " + r.err());
        assertEquals("error: --machine nosuch: the fake NVML library plays dgx-h100, t4x4, a100-bridged, a100-mig, x86-numa, h100-vm",
                firstLine(r));
    }

    @Test
    void helpListsEveryFakeMachineAndThePluginStartsOnEach() throws Exception {
        Run help = run("--help");
        assertEquals(0, help.rc());
        String text = help.out().replaceAll("\\s+", " ");
        for (String m : Main.FAKE_MACHINES) {
            assertTrue(text.contains(m), m + " in " + help.out());
            Path dir = Files.createDirectories(tmp.resolve("m-" + m));
            PluginConfig c = config("--plugin-dir", dir.toString(), "--nvml-lib", FakeNvmlControl.path().toString(), "--machine", m,
                    "--state-file", tmp.resolve("s-" + m + ".json").toString()).withRecovery(Duration.ofSeconds(60), Duration.ZERO, () -> 0L);
            try (DevicePlugin p = DevicePlugin.start(c)) {
                assertFalse(p.pool().devices().isEmpty(), m);
            }
        }
    }

    @Test
    void aCorruptStateFileIsOneLineNamingTheFlagWithoutParserText() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("d"));
        Path state = tmp.resolve("state.json");
        Files.writeString(state, "garbage");
        Run r = run("--plugin-dir", dir.toString(), "--nvml-lib", FakeNvmlControl.path().toString(), "--state-file", state.toString());
        assertEquals(2, r.rc());
        String line = firstLine(r);
        assertTrue(line.startsWith("error: --state-file " + state + ": is not valid JSON"), line);
        assertTrue(line.contains("(line 1, column "), line);
        assertFalse(line.contains("StreamReadFeature") || line.contains("Unrecognized token") || line.contains("REDACTED"), line);
        refused("--state-file " + tmp + ": is a directory, not a file", "--plugin-dir", dir.toString(), "--state-file", tmp.toString());
    }

    @Test
    void aStateFileForAnotherNodeIsOneLineNamingTheFlag() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("d"));
        Path state = tmp.resolve("state.json");
        Files.writeString(state, "{\"version\": 99}");
        Run r = run("--plugin-dir", dir.toString(), "--nvml-lib", FakeNvmlControl.path().toString(), "--machine", "t4x4",
                "--state-file", state.toString());
        assertEquals(2, r.rc());
        assertTrue(firstLine(r).startsWith("error: --state-file " + state + ": $.version"), r.err());
        assertEquals(1, r.err().lines().count(), r.err());
    }

    @Test
    void anNvmlLibraryThatCannotBeLoadedNamesThePluginsOwnFlag() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("d"));
        Path notALibrary = Files.writeString(tmp.resolve("libnvidia-ml.so.1"), "not a library");
        Run r = run("--plugin-dir", dir.toString(), "--nvml-lib", notALibrary.toString());
        assertEquals(2, r.rc());
        assertTrue(firstLine(r).startsWith("error: --nvml-lib " + notALibrary + ": cannot be loaded as the NVML library"), r.err());
        assertTrue(r.err().contains("give the path of libnvidia-ml.so.1"), r.err());
        assertFalse(r.err().contains("-Dqgpu.nvml.library") || r.err().contains("NVML_ERROR"), r.err());
        assertEquals(1, r.err().lines().count(), r.err());
        String none = Main.startFailure(new io.qgpu.nvml.NvmlLibraryException("load", io.qgpu.nvml.NvmlReturn.LIBRARY_NOT_FOUND,
                "libnvidia-ml.so.1", "not found", null), Map.of());
        assertTrue(none.contains("Give its path with --nvml-lib PATH"), none);
        assertFalse(none.contains("-Dqgpu.nvml.library") || none.contains("Nvml.builder"), none);
    }

    @Test
    void aDeviceWithoutAKnownNumaNodeHasNoTopology() {
        ListAndWatchResponse r = DevicePluginService.list(List.of(
                new VirtualDevice("GPU-a::0", "GPU-a", Health.HEALTHY, OptionalInt.empty()),
                new VirtualDevice("GPU-b::0", "GPU-b", Health.UNHEALTHY, OptionalInt.of(1))));
        assertFalse(r.getDevices(0).hasTopology());
        assertEquals("Healthy", r.getDevices(0).getHealth());
        assertTrue(r.getDevices(1).hasTopology());
        assertEquals(1, r.getDevices(1).getTopology().getNodes(0).getID());
        assertEquals("Unhealthy", r.getDevices(1).getHealth());
    }

    @Test
    void idsLongerThanTheKubeletTakesAreRefused() {
        String mig = "MIG-" + "0".repeat(60);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> VirtualDevice.idOf(mig, 1));
        assertTrue(e.getMessage().contains("at most 63"), e.getMessage());
        assertEquals("GPU-1", VirtualDevice.homeOf(VirtualDevice.idOf("GPU-1", 12)));
    }
    @Test
    void sharingFlagsReachTheConfigAndBadOnesAreRefusedByName() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("dp"));
        assertEquals(io.qgpu.kubernetes.node.sharing.SharingOptions.defaults(), config("--plugin-dir", dir.toString()).sharing(),
                "default: no back end");
        PluginConfig mps = config("--plugin-dir", dir.toString(), "--sharing", "mps", "--mps-root", "/run/x/mps", "--mps-control", "/opt/bin/mpsc");
        assertEquals(io.qgpu.kubernetes.node.sharing.SharingBackend.MPS, mps.sharing().backend());
        assertEquals(Path.of("/run/x/mps"), mps.sharing().mpsRoot());
        assertEquals(Path.of("/opt/bin/mpsc"), mps.sharing().mpsControl());
        refused("--sharing = \"mig\": must be one of none, mps, hami-core", "--plugin-dir", dir.toString(), "--sharing", "mig");
        refused("--mps-root = \"mps\": must be an absolute path", "--plugin-dir", dir.toString(), "--sharing", "mps", "--mps-root", "mps");
        refused("--hami-core-preload = \"ld\": must be one of file, env", "--plugin-dir", dir.toString(), "--sharing", "hami-core",
                "--hami-core-preload", "ld");
        refused("--hami-core-preload-file = \"p\": must be an absolute path", "--plugin-dir", dir.toString(), "--sharing", "hami-core",
                "--hami-core-preload-file", "p");
        Path missing = tmp.resolve("libvgpu.so");
        refused("--hami-core-library = \"" + missing + "\": no such file: --sharing hami-core needs HAMi-core's libvgpu.so on the node "
                + "(build it from HAMi-core, or run with --sharing none or mps)",
                "--plugin-dir", dir.toString(), "--sharing", "hami-core", "--hami-core-library", missing.toString());
        for (String flag : io.qgpu.kubernetes.node.sharing.SharingOptions.FLAGS) {
            assertTrue(Main.USAGE.contains(flag + " "), flag + " is in the usage text");
        }
    }

    @Test
    void hamiCoreWithoutItsLibraryIsOneLineAndExitCode2() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("dp-hami"));
        Path missing = tmp.resolve("no/libvgpu.so");
        Run r = run("--plugin-dir", dir.toString(), "--nvml-lib", FakeNvmlControl.path().toString(), "--machine", "t4x4",
                "--sharing", "hami-core", "--hami-core-library", missing.toString());
        assertEquals(2, r.rc());
        assertEquals(1, r.err().lines().count(), "one line, no usage text: " + r.err());
        assertEquals("error: --hami-core-library = \"" + missing + "\": no such file: --sharing hami-core needs HAMi-core's libvgpu.so "
                + "on the node (build it from HAMi-core, or run with --sharing none or mps)", firstLine(r));
        Run bad = run("--plugin-dir", dir.toString(), "--sharing", "mig");
        assertEquals(2, bad.rc());
        assertEquals("error: --sharing = \"mig\": must be one of none, mps, hami-core", firstLine(bad));
        assertEquals(1, bad.err().lines().count(), bad.err());
    }

    // ---- issue 41 items 3-4: every start-up check is one line naming the flag and the value, exit code 2 ----

    /** One line on standard error, exit code 2. */
    static void oneLine(String line, Run r) {
        assertEquals(2, r.rc(), r.err());
        assertEquals(List.of("error: " + line), r.err().lines().toList(), "one line, no usage text, no stack trace");
    }

    @Test
    void nodeNamesKubernetesWouldNotTakeAreRefusedWithTheDraDriversRule() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("d"));
        refused("--node-name Node_A: must be a DNS subdomain (lower-case letters, digits, '-' and '.')",
                "--plugin-dir", dir.toString(), "--node-name", "Node_A");
        refused("--node-name " + "a".repeat(254) + ": must be a DNS subdomain (lower-case letters, digits, '-' and '.')",
                "--plugin-dir", dir.toString(), "--node-name", "a".repeat(254));
        IllegalArgumentException env = assertThrows(IllegalArgumentException.class,
                () -> Main.config(Main.parse(List.of("--plugin-dir", dir.toString())), Map.of("HOSTNAME", "My_Laptop")));
        assertEquals("--node-name (from $HOSTNAME) My_Laptop: must be a DNS subdomain (lower-case letters, digits, '-' and '.')",
                env.getMessage());
        assertEquals("node-1.example.com", config("--plugin-dir", dir.toString(), "--node-name", "node-1.example.com").nodeName());
    }

    @Test
    void aStateFileWhoseDirectoryCannotBeWrittenIsRefusedAtStart() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("d"));
        Path file = Files.writeString(tmp.resolve("a-file"), "x");
        Path state = file.resolve("state.json");
        oneLine("--state-file " + state + ": its directory " + file + " cannot be created (" + file + " is a file, not a directory)",
                run("--plugin-dir", dir.toString(), "--state-file", state.toString()));
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isDirectory(Path.of("/sys/kernel")));
        Run ro = run("--plugin-dir", dir.toString(), "--state-file", "/sys/kernel/qgpu-state.json");
        assertEquals(2, ro.rc(), ro.err());
        assertTrue(firstLine(ro).startsWith("error: --state-file /sys/kernel/qgpu-state.json: its directory /sys/kernel is not writable ("),
                ro.err());
    }

    @Test
    void aDirectoryOfAnotherUserIsRefusedWithoutRoot() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeFalse("root".equals(System.getProperty("user.name")), "root writes anywhere");
        Path dir = Files.createDirectories(tmp.resolve("d"));
        Path locked = Files.createDirectories(tmp.resolve("locked"));
        Files.setPosixFilePermissions(locked, java.nio.file.attribute.PosixFilePermissions.fromString("r-xr-xr-x"));
        try {
            refused("--state-file " + locked.resolve("s.json") + ": its directory " + locked + " is not writable (permission denied)",
                    "--plugin-dir", dir.toString(), "--state-file", locked.resolve("s.json").toString());
        } finally {
            Files.setPosixFilePermissions(locked, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        }
    }

    @Test
    void aRecoveryTooLongIsRefusedWithItsMaximum() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("d"));
        oneLine("--recover-after 99999999999999: must be at most 3153600000 (100 years)",
                run("--plugin-dir", dir.toString(), "--recover-after", "99999999999999"));
        assertEquals(Duration.ofSeconds(3153600000L), config("--plugin-dir", dir.toString(), "--recover-after", "3153600000").recoverAfter());
    }

    @Test
    void mpsControlThatCannotRunIsRefusedWhenThePluginStartsTheDaemons() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("d"));
        Path missing = tmp.resolve("no/nvidia-cuda-mps-control");
        oneLine("--mps-control " + missing + ": no such file", run("--plugin-dir", dir.toString(), "--sharing", "mps",
                "--mps-daemons", "agent", "--mps-control", missing.toString()));
        Path plain = Files.writeString(tmp.resolve("mps-control"), "#!/bin/sh\n");
        oneLine("--mps-control " + plain + ": not executable (chmod +x, or give the program's path)", run("--plugin-dir", dir.toString(),
                "--sharing", "mps", "--mps-daemons", "agent", "--mps-control", plain.toString()));
        IllegalArgumentException onPath = assertThrows(IllegalArgumentException.class, () -> Main.config(Main.parse(List.of(
                "--plugin-dir", dir.toString(), "--sharing", "mps", "--mps-daemons", "agent")), Map.of("PATH", tmp.toString())));
        assertEquals("--mps-control nvidia-cuda-mps-control: not found on the PATH (" + tmp + "); give the program's path",
                onPath.getMessage());
        config("--plugin-dir", dir.toString(), "--sharing", "mps", "--mps-control", missing.toString()); // external daemons: not run
    }

    @Test
    void anApiServerThatCannotBeReachedIsOneLineWithItsUrlAndCause() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("d"));
        int port = io.qgpu.kubernetes.node.TestKubeconfig.closedPort();
        String before = System.getProperty("kubeconfig");
        try {
            System.setProperty("kubeconfig", io.qgpu.kubernetes.node.TestKubeconfig.write(tmp, "https://127.0.0.1:" + port).toString());
            long t0 = System.nanoTime();
            oneLine("--kubernetes: the Kubernetes API server https://127.0.0.1:" + port + "/: connection refused",
                    run("--plugin-dir", dir.toString(), "--nvml-lib", FakeNvmlControl.path().toString(), "--machine", "t4x4",
                            "--kubernetes"));
            String host = io.qgpu.kubernetes.node.TestKubeconfig.UNRESOLVABLE;
            System.setProperty("kubeconfig", io.qgpu.kubernetes.node.TestKubeconfig.write(tmp, "https://" + host + ":6443").toString());
            oneLine("--kubernetes: the Kubernetes API server https://" + host + ":6443/: unknown host " + host,
                    run("--plugin-dir", dir.toString(), "--kubernetes", "--api-timeout", "5s"));
            assertTrue(System.nanoTime() - t0 < java.util.concurrent.TimeUnit.SECONDS.toNanos(15), "both within the timeouts");
        } finally {
            if (before == null) {
                System.clearProperty("kubeconfig");
            } else {
                System.setProperty("kubeconfig", before);
            }
        }
        refused("--api-timeout 5s: only with --kubernetes", "--plugin-dir", dir.toString(), "--api-timeout", "5s");
        refused("--api-timeout 11m: must be above 0 and at most 10m", "--plugin-dir", dir.toString(), "--kubernetes", "--api-timeout", "11m");
    }

    @Test
    void theFakeMachinesComeFromOnePlace() {
        assertEquals(io.qgpu.kubernetes.node.AgentChecks.FAKE_MACHINES, Main.FAKE_MACHINES);
    }
}
