package io.qgpu.kubernetes.deviceplugin;

import static io.qgpu.kubernetes.deviceplugin.LifecycleTest.uuidOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.InvalidValueException;
import io.qgpu.kubernetes.deviceplugin.v1beta1.AllocateRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerAllocateRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerAllocateResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DevicePluginGrpc;
import io.qgpu.kubernetes.deviceplugin.v1beta1.Mount;
import io.qgpu.kubernetes.node.mps.FakeMpsControlScript;
import io.qgpu.kubernetes.node.mps.MpsLayout;
import io.qgpu.kubernetes.node.mps.MpsSupervisor;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The plugin with {@code --sharing mps} (against the node module's fake {@code nvidia-cuda-mps-control}, which
 * records its calls) and {@code --sharing hami-core} (a fake {@code libvgpu.so}: any file): the MPS daemons'
 * life cycle with the plugin's, and what {@code Allocate} answers under each back end.
 */
class SharingTest extends PluginTestBase {
    FakeMpsControlScript fake;
    MpsLayout layout;
    final List<String> gpus = new ArrayList<>();

    @AfterEach
    void killLeftoverDaemons() throws Exception {
        for (String gpu : gpus) {
            if (layout != null && Files.isDirectory(layout.pipeDir(gpu))) {
                Optional<Long> pid = FakeMpsControlScript.daemonPid(layout, gpu);
                if (pid.isPresent() && FakeMpsControlScript.running(pid.get())) {
                    FakeMpsControlScript.crash(pid.get());
                }
            }
        }
    }

    SharingOptions mps(Duration tickEvery) throws Exception {
        fake = FakeMpsControlScript.write(Files.createDirectories(tmp.resolve("bin")));
        layout = new MpsLayout(tmp.resolve("mps"));
        return SharingOptions.parse(Map.of("--sharing", "mps", "--mps-root", layout.root().toString(), "--mps-control",
                fake.binary.toString())).withMpsTickEvery(tickEvery);
    }

    DevicePluginGrpc.DevicePluginBlockingStub stub() throws Exception {
        return DevicePluginGrpc.newBlockingStub(dial(kubelet.awaitRegistration()));
    }

    static ContainerAllocateResponse allocate(DevicePluginGrpc.DevicePluginBlockingStub stub, String id) {
        return stub.allocate(AllocateRequest.newBuilder().addContainerRequests(ContainerAllocateRequest.newBuilder().addDevicesIds(id)).build())
                .getContainerResponses(0);
    }

    long count(String prefix) throws Exception {
        return fake.calls().stream().filter(c -> c.startsWith(prefix)).count();
    }

    @Test
    void mpsDaemonsStartWithThePluginAndQuitWithIt() throws Exception {
        DevicePlugin plugin = start(config("t4x4", PodDecisions.none()).withSharing(mps(Duration.ZERO)));
        for (int g = 0; g < 4; g++) {
            gpus.add(uuidOf(plugin, g));
        }
        MpsSupervisor s = plugin.mps().orElseThrow();
        assertEquals(gpus.stream().sorted().toList(), List.copyOf(s.status().keySet()), "a daemon per GPU");
        for (String gpu : gpus) {
            assertTrue(fake.calls().contains("start visible=" + gpu + " pipe=" + layout.pipeDir(gpu) + " log=" + layout.logDir(gpu)),
                    fake.calls().toString());
            assertEquals(MpsSupervisor.State.RUNNING, s.status().get(gpu).state());
        }
        assertEquals(4, count("start "));

        plugin.close();
        for (String gpu : gpus) {
            assertTrue(fake.calls().contains("command quit visible= pipe=" + layout.pipeDir(gpu) + " log=" + layout.logDir(gpu)),
                    fake.calls().toString());
        }
        assertEquals(4, count("command quit "));
        assertTrue(s.status().isEmpty());
    }

    @Test
    void mpsAllocateAnswersThePipeTheLimitsAndTheEngine() throws Exception {
        DevicePlugin plugin = start(config("t4x4", PodDecisions.none()).withSharing(mps(Duration.ZERO)));
        for (int g = 0; g < 4; g++) {
            gpus.add(uuidOf(plugin, g));
        }
        String gpu = uuidOf(plugin, 1);
        ContainerAllocateResponse r = allocate(stub(), VirtualDevice.idOf(gpu, 0));
        Map<String, String> env = r.getEnvsMap();
        assertEquals(gpu, env.get("NVIDIA_VISIBLE_DEVICES"));
        assertEquals("mps", env.get("QGPU_SHARING"));
        assertEquals("/tmp/nvidia-mps", env.get("CUDA_MPS_PIPE_DIRECTORY"));
        assertEquals("0=4096M", env.get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "the plugin's own slot: 4 GiB");
        assertEquals("100", env.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
        assertEquals("1", env.get("CUDA_MPS_CLIENT_PRIORITY"), "offline: below normal");
        assertEquals(List.of(Mount.newBuilder().setHostPath(layout.pipeDir(gpu).toString()).setContainerPath("/tmp/nvidia-mps")
                .setReadOnly(false).build()), r.getMountsList());
        assertEquals("mps", r.getAnnotationsOrThrow("qgpu.io/sharing"));
        assertTrue(Files.isDirectory(layout.pipeDir(gpu)), "the supervisor made the pipe directory");
    }

    /**
     * The plugin's timer ticks the supervisor: a daemon killed (SIGKILL) is started again once the health
     * check (5 s on the test's clock) and the back-off (1 s) are over. The wait is on the plugin's timer
     * (every 10 ms), bounded at 20 s; the clock decides when the restart is due.
     */
    @Test
    void thePluginsTimerRestartsAKilledDaemon() throws Exception {
        DevicePlugin plugin = start(config("t4x4", PodDecisions.none()).withSharing(mps(Duration.ofMillis(10))));
        for (int g = 0; g < 4; g++) {
            gpus.add(uuidOf(plugin, g));
        }
        String gpu = uuidOf(plugin, 2);
        FakeMpsControlScript.crash(FakeMpsControlScript.daemonPid(layout, gpu).orElseThrow());
        clock.addAndGet(Duration.ofSeconds(5).toNanos());
        awaitStarts(gpu, 1, MpsSupervisor.State.BACKING_OFF, plugin);
        assertEquals(4, count("start "), "no restart before the back-off is over");
        clock.addAndGet(Duration.ofSeconds(1).toNanos());
        awaitStarts(gpu, 2, MpsSupervisor.State.RUNNING, plugin);
        assertEquals(5, count("start "));
        assertTrue(FakeMpsControlScript.running(FakeMpsControlScript.daemonPid(layout, gpu).orElseThrow()));
    }

    private static void awaitStarts(String gpu, int starts, MpsSupervisor.State state, DevicePlugin plugin) throws InterruptedException {
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (true) {
            MpsSupervisor.DaemonStatus s = plugin.mps().orElseThrow().status().get(gpu);
            if (s.starts() == starts && s.state() == state) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the plugin's timer did not bring " + gpu + " to " + state + " with " + starts + " start(s): " + s);
            }
            Thread.sleep(5);
        }
    }

    /**
     * Before issue 38 the answer carried {@code LD_PRELOAD}; now, by default, the library is loaded through the node's
     * preload file mounted read-only at {@code /etc/ld.so.preload}, and {@code LD_PRELOAD} is not set.
     */
    @Test
    void hamiCoreAllocateAnswersThePreloadFileTheLimitsAndAFreshCache() throws Exception {
        Path lib = Files.writeString(tmp.resolve("libvgpu.so"), "any file");
        Path cacheRoot = tmp.resolve("hami/cache");
        Path lockDir = tmp.resolve("vgpulock");
        DevicePlugin plugin = start(config("t4x4", PodDecisions.none()).withSharing(SharingOptions.parse(Map.of("--sharing", "hami-core",
                "--hami-core-library", lib.toString(), "--hami-core-cache-root", cacheRoot.toString(), "--hami-core-lock-dir", lockDir.toString()))));
        assertTrue(plugin.mps().isEmpty());
        String gpu = uuidOf(plugin, 0);
        String id = VirtualDevice.idOf(gpu, 3);
        String key = id.replace(':', '_');
        Files.createDirectories(cacheRoot.resolve(key));
        Files.writeString(cacheRoot.resolve(key).resolve("vgpu.cache"), "a previous container's limits");

        ContainerAllocateResponse r = allocate(stub(), id);
        Map<String, String> env = r.getEnvsMap();
        assertEquals("hami-core", env.get("QGPU_SHARING"));
        assertFalse(env.containsKey("LD_PRELOAD"), "the preload file loads the library, not the environment");
        assertEquals("4096m", env.get("CUDA_DEVICE_MEMORY_LIMIT_0"));
        assertFalse(env.containsKey("CUDA_DEVICE_MEMORY_LIMIT_1"));
        assertEquals("100", env.get("CUDA_DEVICE_SM_LIMIT"));
        assertEquals("/usr/local/vgpu/cache/vgpu.cache", env.get("CUDA_DEVICE_MEMORY_SHARED_CACHE"));
        Path preload = tmp.resolve("hami/hami-core-preload/ld.so.preload");
        assertEquals(List.of(
                Mount.newBuilder().setHostPath(lib.toString()).setContainerPath("/usr/local/vgpu/libvgpu.so").setReadOnly(true).build(),
                Mount.newBuilder().setHostPath(preload.toString()).setContainerPath("/etc/ld.so.preload").setReadOnly(true).build(),
                Mount.newBuilder().setHostPath(cacheRoot.resolve(key).toString()).setContainerPath("/usr/local/vgpu/cache").build(),
                Mount.newBuilder().setHostPath(lockDir.toString()).setContainerPath("/tmp/vgpulock").build()), r.getMountsList());
        assertEquals("hami-core", r.getAnnotationsOrThrow("qgpu.io/sharing"));
        assertTrue(Files.isDirectory(lockDir));
        assertEquals("/usr/local/vgpu/libvgpu.so\n", Files.readString(preload), "written before the answer");
        assertEquals("rw-r--r--", PosixFilePermissions.toString(Files.getPosixFilePermissions(preload)));
        try (var files = Files.list(cacheRoot.resolve(key))) {
            assertEquals(0, files.count(), "the container's cache directory starts empty");
        }

        // the plugin's reconciler keeps the shared paths of live allocations: a removed preload file comes back
        Files.delete(preload);
        assertTrue(plugin.reconciler().reconcile().converged());
        assertEquals("/usr/local/vgpu/libvgpu.so\n", Files.readString(preload));
    }

    @Test
    void hamiCoreWithPreloadEnvAnswersLdPreloadAndWritesNoFile() throws Exception {
        Path lib = Files.writeString(tmp.resolve("libvgpu.so"), "any file");
        Path cacheRoot = tmp.resolve("hami/cache");
        DevicePlugin plugin = start(config("t4x4", PodDecisions.none()).withSharing(SharingOptions.parse(Map.of("--sharing", "hami-core",
                "--hami-core-library", lib.toString(), "--hami-core-cache-root", cacheRoot.toString(), "--hami-core-lock-dir",
                tmp.resolve("vgpulock").toString(), "--hami-core-preload", "env"))));
        ContainerAllocateResponse r = allocate(stub(), VirtualDevice.idOf(uuidOf(plugin, 0), 0));
        assertEquals("/usr/local/vgpu/libvgpu.so", r.getEnvsMap().get("LD_PRELOAD"));
        assertEquals(List.of("/usr/local/vgpu/libvgpu.so", "/usr/local/vgpu/cache", "/tmp/vgpulock"),
                r.getMountsList().stream().map(Mount::getContainerPath).toList());
        assertFalse(Files.exists(tmp.resolve("hami/hami-core-preload")), "no preload file is written");
    }

    @Test
    void hamiCoreWithoutItsLibraryDoesNotStart() throws Exception {
        Path missing = tmp.resolve("nowhere/libvgpu.so");
        SharingOptions o = new SharingOptions(io.qgpu.kubernetes.node.sharing.SharingBackend.HAMI_CORE, MpsLayout.DEFAULT_ROOT,
                Path.of("nvidia-cuda-mps-control"), Optional.empty(), missing, tmp.resolve("c"), tmp.resolve("l"), Duration.ZERO);
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> start(config("t4x4", PodDecisions.none()).withSharing(o)));
        assertEquals("--hami-core-library", e.field());
        assertEquals(0, FAKE.fake_nvml_init_count(), "no NVML session was opened");
    }

    @Test
    void withoutABackEndTheAnswerHasNoSharingEntries() throws Exception {
        DevicePlugin plugin = start("t4x4");
        ContainerAllocateResponse r = allocate(stub(), VirtualDevice.idOf(uuidOf(plugin, 0), 0));
        assertFalse(r.getEnvsMap().containsKey("QGPU_SHARING"));
        assertFalse(r.getAnnotationsMap().containsKey("qgpu.io/sharing"));
        assertEquals(0, r.getMountsCount());
        assertTrue(plugin.mps().isEmpty());
    }
}
