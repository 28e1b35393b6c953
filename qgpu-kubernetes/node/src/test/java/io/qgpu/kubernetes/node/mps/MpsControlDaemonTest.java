package io.qgpu.kubernetes.node.mps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The program of the MPS control daemon DaemonSet, against the fake {@code nvidia-cuda-mps-control}: a daemon per
 * GPU with the floor as its defaults, which an agent in {@code --mps-daemons external} mode adopts and leaves
 * running when it stops; the pod's stop quits them.
 */
class MpsControlDaemonTest {
    static final String A = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6";
    static final String B = "GPU-11112222-3333-4444-5555-666677778888";

    @TempDir
    Path tmp;
    MpsLayout layout;

    @AfterEach
    void killLeftoverDaemons() throws Exception {
        if (layout != null) {
            FakeMpsControlScript.killAll(layout);
        }
    }

    @Test
    void runsADaemonPerGpuWithTheFloorAsDefaultsAndAnExternalAgentAdoptsThem() throws Exception {
        FakeMpsControlScript fake = FakeMpsControlScript.write(tmp);
        layout = new MpsLayout(tmp.resolve("mps"));
        ManualTicker ticker = new ManualTicker();
        // the kubelet made the host path (DirectoryOrCreate) rwxr-xr-x before the pod started
        Files.createDirectories(layout.defaultShmDir());
        Files.setPosixFilePermissions(layout.defaultShmDir(), java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        MpsControlDaemon pod = MpsControlDaemon.start(new ProcessMpsControl(fake.binary, layout, Duration.ofSeconds(20)), List.of(A, B),
                new MpsLimits(1024, 5), layout.defaultShmDir(), MpsSupervisor.Settings.defaults(), ticker, Duration.ZERO);
        assertTrue(Files.isDirectory(layout.defaultShmDir()));
        assertEquals("1777", Integer.toOctalString((Integer) Files.getAttribute(layout.defaultShmDir(), "unix:mode") & 07777));
        long a = FakeMpsControlScript.daemonPid(layout, A).orElseThrow();
        long b = FakeMpsControlScript.daemonPid(layout, B).orElseThrow();
        for (String gpu : List.of(A, B)) {
            assertEquals(List.of("set_default_device_pinned_mem_limit 0 1024M", "set_default_active_thread_percentage 5"),
                    FakeMpsControlScript.defaults(layout, gpu), "the smallest slice until the agent sets the GPU's limits");
        }

        MpsSupervisor agent = new MpsSupervisor(new ProcessMpsControl(fake.binary, layout, Duration.ofSeconds(20)), MpsDaemonMode.EXTERNAL,
                MpsSupervisor.Settings.defaults(), ticker);
        agent.share(Set.of(A, B));
        assertEquals(MpsSupervisor.State.RUNNING, agent.status().get(A).state());
        assertEquals(0, agent.status().get(A).starts());
        agent.applyLimits(A, new MpsLimits(8192, 70));
        assertEquals(List.of("set_default_device_pinned_mem_limit 0 8192M", "set_default_active_thread_percentage 70"),
                FakeMpsControlScript.defaults(layout, A));
        agent.close();
        assertEquals(2, fake.calls().stream().filter(c -> c.startsWith("start ")).count(), "the pod's starts only");
        assertTrue(FakeMpsControlScript.running(a) && FakeMpsControlScript.running(b), "the agent's stop leaves them");

        pod.close();
        pod.close();
        assertEquals(2, fake.calls().stream().filter(c -> c.startsWith("command quit ")).count(), "the pod's stop quits them");
        pod.awaitClose();
    }

    @Test
    void theCommandLineIsRefusedByFlagAndValue() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8);
        assertEquals(MpsControlDaemon.USAGE_ERROR, MpsControlDaemon.run(new String[] {"--nope"}, e));
        assertEquals(MpsControlDaemon.USAGE_ERROR, MpsControlDaemon.run(new String[] {"--mps-root", "relative"}, e));
        assertEquals(MpsControlDaemon.USAGE_ERROR, MpsControlDaemon.run(new String[] {"--rules", "mine"}, e));
        assertEquals(0, MpsControlDaemon.run(new String[] {"--help"}, e));
        String out = err.toString(StandardCharsets.UTF_8);
        assertTrue(out.contains("error: unknown argument --nope"), out);
        assertTrue(out.contains("error: --mps-root = \"relative\": must be an absolute path"), out);
        assertTrue(out.contains("error: --rules = \"mine\": must be one of qgpu, hami, gpu-manager"), out);
        assertTrue(out.contains("usage: java -cp"), out);
        assertEquals(Map.of("--mps-root", "/run/x", "--rules", "hami"), MpsControlDaemon.parse(List.of("--mps-root=/run/x", "--rules", "hami")));
        assertEquals(new MpsLimits(1, 1), MpsControlDaemon.Options.of(Map.of("--rules", "hami")).floor());
        assertEquals(Path.of("/run/x/shm"), MpsControlDaemon.Options.of(Map.of("--mps-root", "/run/x")).shmDir());
    }
}
