package io.qgpu.kubernetes.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.qgpu.api.InvalidValueException;
import io.qgpu.kubernetes.dra.v1.DRAPluginGrpc;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourceResponse;
import io.qgpu.kubernetes.node.mps.FakeMpsControlScript;
import io.qgpu.kubernetes.node.mps.MpsControlDaemon;
import io.qgpu.kubernetes.node.mps.MpsDaemonMode;
import io.qgpu.kubernetes.node.mps.MpsLayout;
import io.qgpu.kubernetes.node.mps.MpsLimits;
import io.qgpu.kubernetes.node.mps.ProcessMpsControl;
import io.qgpu.kubernetes.node.mps.MpsSupervisor;
import io.qgpu.kubernetes.node.sharing.SharingBackend;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The driver with {@code --sharing mps} (against the node module's fake {@code nvidia-cuda-mps-control}, which
 * records its calls) and {@code --sharing hami-core} (a fake {@code libvgpu.so}: any file): the MPS daemons'
 * life cycle with the driver's, and the CDI spec NodePrepareResources writes under each back end.
 */
class SharingTest extends DriverTestBase {
    static final long GIB = 1L << 30;
    FakeMpsControlScript fake;
    MpsLayout layout;
    final List<String> gpus = new ArrayList<>();

    @AfterEach
    void killLeftoverDaemons() throws Exception {
        if (layout != null) {
            FakeMpsControlScript.killAll(layout);   // the agents leave their daemons running when they stop
        }
    }

    /** The driver with {@code --sharing mps --mps-daemons agent} (the fake program written once per test). */
    DraDriver startMps() throws IOException {
        return startMps(MpsDaemonMode.AGENT);
    }

    DraDriver startMps(MpsDaemonMode mode) throws IOException {
        if (fake == null) {
            fake = FakeMpsControlScript.write(Files.createDirectories(tmp.resolve("bin")));
            layout = new MpsLayout(tmp.resolve("mps"));
        }
        SharingOptions o = SharingOptions.parse(Map.of("--sharing", "mps", "--mps-root", layout.root().toString(), "--mps-control",
                fake.binary.toString(), "--mps-daemons", mode.wireName())).withMpsTickEvery(Duration.ZERO);
        DraDriver d = DraDriver.start(config("dgx-h100").withSharing(o), client);
        open.add(d);
        gpus.clear();
        for (int i = 0; i < 8; i++) {
            gpus.add(uuid(d, i));
        }
        return d;
    }

    static String uuid(DraDriver d, int index) {
        return d.slices().slice().getSpec().getDevices().get(index).getAttributes().get("uuid").getString();
    }

    NodePrepareResourceResponse prepare(DRAPluginGrpc.DRAPluginBlockingStub stub, String name, String uid) {
        return Kubelet.prepare(stub, Kubelet.claim(Claims.NS, name, uid)).getClaimsOrThrow(uid);
    }

    JsonNode spec(String uid) throws IOException {
        return new ObjectMapper().readTree(cdi.resolve("qgpu.io-gpu_" + uid + ".json").toFile());
    }

    static Map<String, String> env(JsonNode spec) {
        Map<String, String> env = new LinkedHashMap<>();
        for (JsonNode e : spec.at("/containerEdits/env")) {
            String[] kv = e.asText().split("=", 2);
            env.put(kv[0], kv[1]);
        }
        return env;
    }

    long count(String prefix) throws IOException {
        return fake.calls().stream().filter(c -> c.startsWith(prefix)).count();
    }

    /**
     * Issue 38: the daemons start with the driver (here {@code --mps-daemons agent}) and outlive it; a restarted
     * driver adopts them (same pids, no second start). This test was {@code mpsDaemonsStartWithTheDriverAndQuitWithIt},
     * which asserted the old design: a {@code quit} per GPU when the driver closed.
     */
    @Test
    void mpsDaemonsStartWithTheDriverAndOutliveIt() throws Exception {
        DraDriver d = startMps();
        MpsSupervisor s = d.mps().orElseThrow();
        assertEquals(gpus.stream().sorted().toList(), List.copyOf(s.status().keySet()), "a daemon per GPU");
        Map<String, Long> pids = new LinkedHashMap<>();
        for (String gpu : gpus) {
            assertTrue(fake.calls().contains("start visible=" + gpu + " pipe=" + layout.pipeDir(gpu) + " log=" + layout.logDir(gpu)));
            assertEquals(MpsSupervisor.State.RUNNING, s.status().get(gpu).state());
            pids.put(gpu, FakeMpsControlScript.daemonPid(layout, gpu).orElseThrow());
        }
        assertEquals(8, count("start "));
        for (int g = 0; g < 8; g++) {
            assertEquals(3, FAKE.fake_nvml_compute_mode(g), "GPU " + g + " is EXCLUSIVE_PROCESS");
        }
        d.close();
        assertEquals(0, count("command quit "), "the driver's stop leaves the daemons running");
        pids.values().forEach(pid -> assertTrue(FakeMpsControlScript.running(pid)));

        DraDriver again = startMps();
        assertEquals(8, count("start "), "the restarted driver adopts them");
        for (String gpu : gpus) {
            assertEquals(0, again.mps().orElseThrow().status().get(gpu).starts());
            assertEquals(pids.get(gpu), FakeMpsControlScript.daemonPid(layout, gpu).orElseThrow(), "the same daemon");
        }
    }

    /**
     * Issue 38: an exclusive claim stops sharing on its GPU before it is answered (the daemon quits, the GPU gets its
     * previous compute mode back: the claim may run several processes); its release starts sharing again.
     */
    @Test
    void mpsAnExclusiveClaimStopsSharingItsGpuUntilItIsReleased() throws Exception {
        DraDriver d = startMps();
        DRAPluginGrpc.DRAPluginBlockingStub stub = kubelet.v1(register());
        String gpu = gpus.get(1);
        long pid = FakeMpsControlScript.daemonPid(layout, gpu).orElseThrow();
        String whole = Claims.allocated(client, "whole", Claims.whole("gpu-1"));
        assertEquals("", prepare(stub, "whole", whole).getError());
        assertTrue(fake.calls().contains("command quit visible= pipe=" + layout.pipeDir(gpu) + " log=" + layout.logDir(gpu)),
                "stopping sharing on the GPU quits its daemon");
        assertFalse(FakeMpsControlScript.running(pid) && FakeMpsControlScript.liveDaemons(layout, gpu).contains(pid));
        assertEquals(0, FAKE.fake_nvml_compute_mode(1), "back to DEFAULT, the mode it had");
        assertEquals(3, FAKE.fake_nvml_compute_mode(0), "the other GPUs stay under MPS");
        assertEquals(1, count("command quit "));
        assertTrue(d.reconciler().reconcileNow().converged(), d.reconciler().failures().toString());
        assertEquals(8, count("start "), "a pass keeps it so");

        Kubelet.unprepare(stub, Kubelet.claim(Claims.NS, "whole", whole));
        assertTrue(d.reconciler().reconcileNow().converged(), d.reconciler().failures().toString());
        assertEquals(9, count("start "), "released: sharing starts again");
        assertEquals(3, FAKE.fake_nvml_compute_mode(1));
    }

    /**
     * Issue 38 item 2: the daemon holds a GPU's slices to limits a client cannot shed: the smallest slice while none
     * is on it, then the claim's limits, set before the claim is answered; a second tenant raises them to the
     * largest of the two (set on the running server too), and the first one's release lowers them again.
     */
    @Test
    void mpsTheDaemonHoldsTheGpusSlicesToTheirLimits() throws Exception {
        DraDriver d = startMps();
        DRAPluginGrpc.DRAPluginBlockingStub stub = kubelet.v1(register());
        String gpu = gpus.get(0);
        assertEquals(List.of("set_default_device_pinned_mem_limit 0 1024M", "set_default_active_thread_percentage 5"),
                FakeMpsControlScript.defaults(layout, gpu), "no slice: the smallest one qgpu's rules allow");

        String first = Claims.allocated(client, "first", Claims.share("gpu-0", "30Gi", "30", null));
        assertEquals("", prepare(stub, "first", first).getError());
        assertEquals(List.of("set_default_device_pinned_mem_limit 0 30720M", "set_default_active_thread_percentage 30"),
                FakeMpsControlScript.defaults(layout, gpu), "one slice: its limits, before the claim is answered");

        FakeMpsControlScript.addServer(layout, gpu, 4242);   // the first tenant's server runs
        String second = Claims.allocated(client, "second", Claims.share("gpu-0", "10Gi", "50", null));
        assertEquals("", prepare(stub, "second", second).getError());
        assertEquals(List.of("set_default_device_pinned_mem_limit 0 30720M", "set_default_active_thread_percentage 50"),
                FakeMpsControlScript.defaults(layout, gpu), "two slices: the largest of each limit");
        assertEquals(List.of("set_device_pinned_mem_limit 4242 0 30720M", "set_active_thread_percentage 4242 50"),
                FakeMpsControlScript.serverLimits(layout, gpu), "and the running server's next clients");

        Kubelet.unprepare(stub, Kubelet.claim(Claims.NS, "first", first));
        assertTrue(d.reconciler().reconcileNow().converged(), d.reconciler().failures().toString());
        assertEquals(List.of("set_default_device_pinned_mem_limit 0 10240M", "set_default_active_thread_percentage 50"),
                FakeMpsControlScript.defaults(layout, gpu), "the second alone");
    }

    /**
     * Issue 38, as deployed ({@code --mps-daemons external}): the driver starts without daemons and never starts one;
     * a shared claim on a GPU whose daemon does not answer is refused (its client would run without MPS, unlimited),
     * and prepared once the MPS control daemon DaemonSet's pod ({@link MpsControlDaemon}) runs it.
     */
    @Test
    void mpsExternalASharedClaimWaitsForTheDaemonSetsDaemon() throws Exception {
        DraDriver d = startMps(MpsDaemonMode.EXTERNAL);
        DRAPluginGrpc.DRAPluginBlockingStub stub = kubelet.v1(register());
        String uid = Claims.allocated(client, "share", Claims.share("gpu-0", "8Gi", "40", null));
        String error = prepare(stub, "share", uid).getError();
        assertTrue(error.contains("no MPS control daemon answers for GPU " + gpus.get(0)), error);
        assertTrue(d.claims().get(uid).isEmpty(), "nothing is left of the refused claim");
        assertEquals(0, count("start "));

        MpsControlDaemon pod = MpsControlDaemon.start(new ProcessMpsControl(fake.binary, layout, Duration.ofSeconds(20)), gpus,
                new MpsLimits(1024, 5), layout.defaultShmDir(), MpsSupervisor.Settings.defaults(), clock::get, Duration.ZERO);
        open.add(pod);
        assertEquals("", prepare(stub, "share", uid).getError(), "the kubelet's retry");
        assertEquals(List.of("set_default_device_pinned_mem_limit 0 8192M", "set_default_active_thread_percentage 40"),
                FakeMpsControlScript.defaults(layout, gpus.get(0)));
        assertEquals(8, count("start "), "the pod's starts only");
        d.close();
        assertEquals(0, count("command quit "));
    }

    @Test
    void mpsSharedClaimGetsThePipeTheLimitsAndTheEngineExclusiveBypassesIt() throws Exception {
        DraDriver d = startMps();
        DRAPluginGrpc.DRAPluginBlockingStub stub = kubelet.v1(register());
        String uid = Claims.allocated(client, "share", Claims.share("gpu-0", "30Gi", "30", null));
        assertEquals("", prepare(stub, "share", uid).getError());
        JsonNode spec = spec(uid);
        Map<String, String> env = env(spec);
        assertEquals("mps", env.get("QGPU_SHARING"));
        assertEquals("/tmp/nvidia-mps", env.get("CUDA_MPS_PIPE_DIRECTORY"));
        assertEquals("0=30720M", env.get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"));
        assertEquals("30", env.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
        assertEquals("1", env.get("CUDA_MPS_CLIENT_PRIORITY"), "a DRA claim without a GpuConfig is offline: below normal");
        JsonNode mount = spec.at("/containerEdits/mounts/0");
        assertEquals(layout.pipeDir(gpus.get(0)).toString(), mount.get("hostPath").asText());
        assertEquals("/tmp/nvidia-mps", mount.get("containerPath").asText());
        assertEquals("[\"rw\",\"nosuid\",\"nodev\",\"bind\"]", mount.get("options").toString());
        assertEquals(2, spec.at("/containerEdits/mounts").size());
        JsonNode shm = spec.at("/containerEdits/mounts/1");
        assertEquals(layout.defaultShmDir().toString(), shm.get("hostPath").asText(), "the MPS shared memory, by default");
        assertEquals("/dev/shm", shm.get("containerPath").asText());
        assertEquals("mps", spec.at("/annotations/qgpu.io~1sharing").asText());

        String whole = Claims.allocated(client, "whole", Claims.whole("gpu-1"));
        assertEquals("", prepare(stub, "whole", whole).getError());
        Map<String, String> wenv = env(spec(whole));
        assertEquals("none", wenv.get("QGPU_SHARING"), "an exclusive claim bypasses MPS");
        assertFalse(wenv.keySet().stream().anyMatch(k -> k.startsWith("CUDA_MPS_")), wenv.toString());
        assertTrue(spec(whole).at("/containerEdits/mounts").isMissingNode());
        assertEquals("none", spec(whole).at("/annotations/qgpu.io~1sharing").asText());

        String two = Claims.allocated(client, "two", Claims.share("gpu-2", "10Gi", "20", null), Claims.share("gpu-3", "10Gi", "20", null));
        String error = prepare(stub, "two", two).getError();
        assertTrue(error.contains("slices.size = 2") && error.contains("cannot use MPS"), error);
        assertFalse(Files.exists(cdi.resolve("qgpu.io-gpu_" + two + ".json")), "no spec for a refused claim");
        assertTrue(d.claims().get(two).isEmpty());
    }

    /**
     * Before issue 38 the spec carried {@code LD_PRELOAD}; now, by default, the library is loaded through the node's
     * preload file mounted read-only at {@code /etc/ld.so.preload}, and {@code LD_PRELOAD} is not set.
     */
    @Test
    void mpsClientPriorityAndThreadPercentageFollowTheClaimsGpuConfig() throws Exception {
        startMps();
        DRAPluginGrpc.DRAPluginBlockingStub stub = kubelet.v1(register());
        String online = Claims.allocated(client, "online", List.of(Claims.gpuConfig("FromClaim", "priority", "online", "computeLimit", 70)),
                Claims.share("gpu-0", "8Gi", "40", null));
        assertEquals("", prepare(stub, "online", online).getError());
        Map<String, String> env = env(spec(online));
        assertEquals("online", env.get("QGPU_PRIORITY"));
        assertEquals("0", env.get("CUDA_MPS_CLIENT_PRIORITY"), "online work: normal priority");
        assertEquals("40", env.get("QGPU_COMPUTE_REQUEST"));
        assertEquals("70", env.get("QGPU_COMPUTE_LIMIT"));
        assertEquals("70", env.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "MPS enforces the limit");

        String offline = Claims.allocated(client, "offline", List.of(Claims.gpuConfig("FromClass", "priority", "offline")),
                Claims.share("gpu-0", "8Gi", "40", null));
        assertEquals("", prepare(stub, "offline", offline).getError());
        assertEquals("1", env(spec(offline)).get("CUDA_MPS_CLIENT_PRIORITY"), "offline work: below normal");
        assertEquals("40", env(spec(offline)).get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
    }

    @Test
    void hamiCoreClaimGetsThePreloadFileTheLimitsAndAFreshCache() throws Exception {
        Path lib = Files.writeString(tmp.resolve("libvgpu.so"), "any file");
        Path cacheRoot = tmp.resolve("hami/cache");
        Path lockDir = tmp.resolve("vgpulock");
        SharingOptions o = SharingOptions.parse(Map.of("--sharing", "hami-core", "--hami-core-library", lib.toString(),
                "--hami-core-cache-root", cacheRoot.toString(), "--hami-core-lock-dir", lockDir.toString()));
        DraDriver d = DraDriver.start(config("dgx-h100").withSharing(o), client);
        open.add(d);
        assertTrue(d.mps().isEmpty());
        DRAPluginGrpc.DRAPluginBlockingStub stub = kubelet.v1(register());
        String uid = Claims.allocated(client, "share", Claims.share("gpu-0", "8Gi", "40", null),
                Claims.share("gpu-1", "8Gi", "40", null));
        assertEquals("", prepare(stub, "share", uid).getError());
        JsonNode spec = spec(uid);
        Map<String, String> env = env(spec);
        assertEquals("hami-core", env.get("QGPU_SHARING"));
        assertFalse(env.containsKey("LD_PRELOAD"), "the preload file loads the library, not the environment");
        assertEquals("8192m", env.get("CUDA_DEVICE_MEMORY_LIMIT_0"));
        assertEquals("8192m", env.get("CUDA_DEVICE_MEMORY_LIMIT_1"));
        assertEquals("40", env.get("CUDA_DEVICE_SM_LIMIT"));
        assertEquals("/usr/local/vgpu/cache/vgpu.cache", env.get("CUDA_DEVICE_MEMORY_SHARED_CACHE"));
        JsonNode mounts = spec.at("/containerEdits/mounts");
        assertEquals(4, mounts.size());
        assertEquals(lib.toString(), mounts.get(0).get("hostPath").asText());
        assertEquals("/usr/local/vgpu/libvgpu.so", mounts.get(0).get("containerPath").asText());
        assertEquals("[\"ro\",\"nosuid\",\"nodev\",\"bind\"]", mounts.get(0).get("options").toString());
        Path preload = tmp.resolve("hami/hami-core-preload/ld.so.preload");
        assertEquals(preload.toString(), mounts.get(1).get("hostPath").asText(), "beside the cache root by default");
        assertEquals("/etc/ld.so.preload", mounts.get(1).get("containerPath").asText());
        assertEquals("[\"ro\",\"nosuid\",\"nodev\",\"bind\"]", mounts.get(1).get("options").toString());
        assertEquals(cacheRoot.resolve(uid).toString(), mounts.get(2).get("hostPath").asText(), "the claim's own cache directory");
        assertEquals(lockDir.toString(), mounts.get(3).get("hostPath").asText());
        assertTrue(Files.isDirectory(cacheRoot.resolve(uid)));
        assertTrue(Files.isDirectory(lockDir));
        assertEquals("/usr/local/vgpu/libvgpu.so\n", Files.readString(preload), "written before the spec");
        assertEquals("rw-r--r--", PosixFilePermissions.toString(Files.getPosixFilePermissions(preload)));
        assertEquals("hami-core", spec.at("/annotations/qgpu.io~1sharing").asText());

        // the node's shared paths are the reconciler's: a preload file removed from the node comes back on a pass
        Files.delete(preload);
        assertTrue(d.reconciler().reconcile().converged());
        assertEquals("/usr/local/vgpu/libvgpu.so\n", Files.readString(preload));
    }

    @Test
    void hamiCoreWithPreloadEnvPutsTheLibraryInLdPreloadAndWritesNoFile() throws Exception {
        Path lib = Files.writeString(tmp.resolve("libvgpu.so"), "any file");
        Path cacheRoot = tmp.resolve("hami/cache");
        SharingOptions o = SharingOptions.parse(Map.of("--sharing", "hami-core", "--hami-core-library", lib.toString(),
                "--hami-core-cache-root", cacheRoot.toString(), "--hami-core-lock-dir", tmp.resolve("vgpulock").toString(),
                "--hami-core-preload", "env"));
        DraDriver d = DraDriver.start(config("dgx-h100").withSharing(o), client);
        open.add(d);
        DRAPluginGrpc.DRAPluginBlockingStub stub = kubelet.v1(register());
        String uid = Claims.allocated(client, "share", Claims.share("gpu-0", "8Gi", "40", null));
        assertEquals("", prepare(stub, "share", uid).getError());
        JsonNode spec = spec(uid);
        assertEquals("/usr/local/vgpu/libvgpu.so", env(spec).get("LD_PRELOAD"));
        List<String> targets = new ArrayList<>();
        spec.at("/containerEdits/mounts").forEach(m -> targets.add(m.get("containerPath").asText()));
        assertEquals(List.of("/usr/local/vgpu/libvgpu.so", "/usr/local/vgpu/cache", "/tmp/vgpulock"), targets);
        assertFalse(Files.exists(tmp.resolve("hami/hami-core-preload")), "no preload file is written");
    }

    @Test
    void hamiCoreWithoutItsLibraryDoesNotStart() {
        Path missing = tmp.resolve("nowhere/libvgpu.so");
        SharingOptions o = new SharingOptions(SharingBackend.HAMI_CORE, MpsLayout.DEFAULT_ROOT, Path.of("nvidia-cuda-mps-control"),
                Optional.empty(), missing, tmp.resolve("c"), tmp.resolve("l"), Duration.ZERO);
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> DraDriver.start(config("dgx-h100").withSharing(o), client));
        assertEquals("--hami-core-library", e.field());
        assertEquals(0, FAKE.fake_nvml_init_count(), "no NVML session was opened");
    }
}
