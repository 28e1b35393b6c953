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
import io.qgpu.kubernetes.node.mps.MpsControlDaemon;
import io.qgpu.kubernetes.node.mps.MpsDaemonMode;
import io.qgpu.kubernetes.node.mps.MpsLayout;
import io.qgpu.kubernetes.node.mps.MpsLimits;
import io.qgpu.kubernetes.node.mps.ProcessMpsControl;
import io.qgpu.kubernetes.node.mps.MpsSupervisor;
import io.qgpu.kubernetes.node.reconcile.NodeReconciler;
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
        if (layout != null) {
            FakeMpsControlScript.killAll(layout);   // the agents leave their daemons running when they stop
        }
    }

    SharingOptions mps(Duration tickEvery) throws Exception {
        fake = FakeMpsControlScript.write(Files.createDirectories(tmp.resolve("bin")));
        layout = new MpsLayout(tmp.resolve("mps"));
        return SharingOptions.parse(Map.of("--sharing", "mps", "--mps-root", layout.root().toString(), "--mps-control",
                fake.binary.toString(), "--mps-daemons", "agent")).withMpsTickEvery(tickEvery);
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

    /**
     * Issue 38: the daemons start with the plugin (here {@code --mps-daemons agent}) and outlive it; a restarted
     * plugin adopts them (same pids, no second start). This test was {@code mpsDaemonsStartWithThePluginAndQuitWithIt},
     * which asserted the old design: a {@code quit} per GPU when the plugin closed.
     */
    @Test
    void mpsDaemonsStartWithThePluginAndOutliveIt() throws Exception {
        SharingOptions options = mps(Duration.ZERO);
        DevicePlugin plugin = start(config("t4x4", PodDecisions.none()).withSharing(options));
        for (int g = 0; g < 4; g++) {
            gpus.add(uuidOf(plugin, g));
        }
        MpsSupervisor s = plugin.mps().orElseThrow();
        assertEquals(MpsDaemonMode.AGENT, s.mode());
        assertEquals(gpus.stream().sorted().toList(), List.copyOf(s.status().keySet()), "a daemon per GPU");
        Map<String, Long> pids = new java.util.HashMap<>();
        for (String gpu : gpus) {
            assertTrue(fake.calls().contains("start visible=" + gpu + " pipe=" + layout.pipeDir(gpu) + " log=" + layout.logDir(gpu)),
                    fake.calls().toString());
            assertEquals(MpsSupervisor.State.RUNNING, s.status().get(gpu).state());
            pids.put(gpu, FakeMpsControlScript.daemonPid(layout, gpu).orElseThrow());
        }
        assertEquals(4, count("start "));
        assertTrue(plugin.reconciler().failures().isEmpty(), plugin.reconciler().failures().toString());

        plugin.close();
        assertEquals(0, count("command quit "), "the plugin's stop leaves the daemons running");
        for (String gpu : gpus) {
            assertTrue(FakeMpsControlScript.running(pids.get(gpu)), gpu);
        }

        DevicePlugin again = start(config("t4x4", PodDecisions.none()).withSharing(options));
        assertEquals(4, count("start "), "the restarted plugin adopts them");
        for (String gpu : gpus) {
            assertEquals(0, again.mps().orElseThrow().status().get(gpu).starts(), gpu);
            assertEquals(pids.get(gpu), FakeMpsControlScript.daemonPid(layout, gpu).orElseThrow(), "the same daemon");
        }
    }

    /**
     * Issue 38, as deployed: the daemons belong to the MPS control daemon DaemonSet's pod ({@link MpsControlDaemon});
     * the plugin ({@code --mps-daemons external}, the default) starts without them, reports their GPUs' steps as
     * failing, adopts them once the pod runs them, and leaves them running when it stops.
     */
    @Test
    void mpsExternalDaemonsAreAdoptedNeverStartedAndOutliveThePlugin() throws Exception {
        SharingOptions external = mps(Duration.ZERO).withMpsDaemons(MpsDaemonMode.EXTERNAL);
        DevicePlugin plugin = start(config("t4x4", PodDecisions.none()).withSharing(external));
        for (int g = 0; g < 4; g++) {
            gpus.add(uuidOf(plugin, g));
        }
        assertTrue(plugin.reconciler().failures().stream().anyMatch(f -> f.kind().equals("mps-daemon")
                && f.error().contains("no MPS control daemon answers")), plugin.reconciler().failures().toString());
        assertEquals(0, count("start "), "the plugin starts none");

        MpsControlDaemon pod = MpsControlDaemon.start(new ProcessMpsControl(fake.binary, layout, Duration.ofSeconds(20)), gpus,
                new MpsLimits(1024, 5), layout.defaultShmDir(), MpsSupervisor.Settings.defaults(), clock::get, Duration.ZERO);
        open.add(pod);
        assertEquals(4, count("start "));
        assertTrue(plugin.reconciler().reconcileNow().converged(), plugin.reconciler().failures().toString());
        for (String gpu : gpus) {
            assertEquals(MpsSupervisor.State.RUNNING, plugin.mps().orElseThrow().status().get(gpu).state());
            assertEquals(0, plugin.mps().orElseThrow().status().get(gpu).starts(), "adopted");
        }
        long pid = FakeMpsControlScript.daemonPid(layout, gpus.get(0)).orElseThrow();
        plugin.close();
        assertEquals(0, count("command quit "));
        assertTrue(FakeMpsControlScript.running(pid), "the daemon outlives the plugin");
        DevicePlugin again = start(config("t4x4", PodDecisions.none()).withSharing(external));
        assertTrue(again.reconciler().failures().isEmpty(), again.reconciler().failures().toString());
        assertEquals(4, count("start "), "adopted again, never started by a plugin");
        assertEquals(pid, FakeMpsControlScript.daemonPid(layout, gpus.get(0)).orElseThrow());
    }

    /**
     * Issue 38: the GPUs under MPS are in {@code EXCLUSIVE_PROCESS} (fake NVML), a mode changed behind the plugin is
     * set again, and a refused change is reported by the reconciler and retried once its back-off is over; every daemon holds the rules' smallest slice until a slice
     * is allocated on its GPU, then that slice's limits.
     */
    @Test
    void mpsGpusAreExclusiveProcessAndTheDaemonsHoldTheSlicesLimits() throws Exception {
        DevicePlugin plugin = start(config("t4x4", PodDecisions.none()).withSharing(mps(Duration.ZERO)));
        for (int g = 0; g < 4; g++) {
            gpus.add(uuidOf(plugin, g));
            assertEquals(3, FAKE.fake_nvml_compute_mode(g), "EXCLUSIVE_PROCESS from the first pass");
        }
        // someone sets GPU 0 back to DEFAULT behind the plugin's back, and NVML refuses the plugin's next change once
        FAKE.fake_nvml_set_compute_mode(0, 0);
        FAKE.fake_nvml_set_fault("nvmlDeviceSetComputeMode", 4, 0, 1);   // NO_PERMISSION
        plugin.reconciler().reconcile();
        List<NodeReconciler.Failure> failing = plugin.reconciler().failures();
        assertEquals(1, failing.size(), failing.toString());
        assertEquals("compute-mode", failing.get(0).kind());
        assertEquals(gpus.get(0), failing.get(0).key());
        assertTrue(failing.get(0).error().contains("NVML_ERROR_NO_PERMISSION"), failing.get(0).error());
        assertEquals(0, FAKE.fake_nvml_compute_mode(0), "GPU 0 is still DEFAULT");
        for (int g = 1; g < 4; g++) {
            assertEquals(3, FAKE.fake_nvml_compute_mode(g), "EXCLUSIVE_PROCESS");
        }
        clock.addAndGet(Duration.ofSeconds(1).toNanos());
        assertTrue(plugin.reconciler().reconcile().converged());
        assertEquals(3, FAKE.fake_nvml_compute_mode(0), "retried after the back-off");

        for (String gpu : gpus) {
            assertEquals(List.of("set_default_device_pinned_mem_limit 0 1024M", "set_default_active_thread_percentage 5"),
                    FakeMpsControlScript.defaults(layout, gpu), "no slice yet: the smallest one the rules allow");
        }
        String gpu = uuidOf(plugin, 1);
        FakeMpsControlScript.addServer(layout, gpu, 777);
        allocate(stub(), VirtualDevice.idOf(gpu, 0));
        plugin.reconciler().reconcile();
        assertEquals(List.of("set_default_device_pinned_mem_limit 0 4096M", "set_default_active_thread_percentage 100"),
                FakeMpsControlScript.defaults(layout, gpu), "the slice's limits: a client that drops its variables gets no more");
        assertEquals(List.of("set_device_pinned_mem_limit 777 0 4096M", "set_active_thread_percentage 777 100"),
                FakeMpsControlScript.serverLimits(layout, gpu), "and the running server's next clients too");
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
                .setReadOnly(false).build(), Mount.newBuilder().setHostPath(layout.root().resolve("shm").toString())
                .setContainerPath("/dev/shm").setReadOnly(false).build()), r.getMountsList(), "the pipe and the MPS /dev/shm");
        assertTrue(Files.isDirectory(layout.root().resolve("shm")), "the reconciler made the shared-memory directory");
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
