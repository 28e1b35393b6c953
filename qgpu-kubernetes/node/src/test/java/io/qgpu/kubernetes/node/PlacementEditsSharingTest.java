package io.qgpu.kubernetes.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Slice;
import io.qgpu.kubernetes.node.ContainerEdits.Mount;
import io.qgpu.kubernetes.node.mps.MpsLayout;
import io.qgpu.kubernetes.node.sharing.HamiCoreSharing;
import io.qgpu.kubernetes.node.sharing.MpsSharing;
import io.qgpu.kubernetes.node.sharing.NodeSharing;
import io.qgpu.kubernetes.node.sharing.SharingBackend;
import io.qgpu.kubernetes.node.sharing.SharingEdits.HostDirectory;
import io.qgpu.kubernetes.node.sharing.SharingEdits.HostFile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The one mapping with the node's sharing back end as an input: each back end (none, mps, hami-core) against
 * a shared slice (online and offline), an exclusive claim, and a claim on two GPUs (shared and exclusive).
 * Expected values are written out in full, entries in order.
 */
class PlacementEditsSharingTest {
    static final String A = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6";
    static final String B = "GPU-11112222-3333-4444-5555-666677778888";
    static final long GIB = 1L << 30;
    static final Map<String, Integer> MINORS = Map.of(A, 0, B, 3);

    @TempDir
    Path tmp;
    Path lib;
    PlacementEdits none;
    PlacementEdits mps;
    PlacementEdits hami;

    @BeforeEach
    void backends() throws IOException {
        lib = Files.writeString(tmp.resolve("libvgpu.so"), "not really a library");
        none = new PlacementEdits(MINORS);
        mps = new PlacementEdits(MINORS, NodeSharing.open(SharingBackend.MPS, MpsSharing.of(new MpsLayout(Path.of("/run/qgpu/mps"))), null));
        hami = new PlacementEdits(MINORS, NodeSharing.open(SharingBackend.HAMI_CORE, null,
                HamiCoreSharing.of(lib, Path.of("/var/lib/qgpu/hami-core"))));
    }

    static Placement shared(long bytes, int limit, PriorityClass priority, String... gpus) {
        Claim c = Claim.builder("team-a/job").gpus(gpus.length).memoryBytes(bytes).compute(limit / 2, limit).priority(priority).build();
        List<Slice> slices = new ArrayList<>();
        for (String g : gpus) {
            slices.add(new Slice(g, bytes, limit / 2, limit));
        }
        return new Placement(c, "node-a", slices);
    }

    static Placement exclusive(String... gpus) {
        Claim c = Claim.builder("team-a/train").gpus(gpus.length).exclusive().priority(PriorityClass.OFFLINE).build();
        List<Slice> slices = new ArrayList<>();
        for (String g : gpus) {
            slices.add(new Slice(g, 80 * GIB, 100, 100));
        }
        return new Placement(c, "node-a", slices);
    }

    /** The placement's own environment followed by these entries. */
    static List<String> env(Placement p, String... more) {
        List<String> out = new ArrayList<>();
        p.environment().forEach((k, v) -> out.add(k + "=" + v));
        out.addAll(List.of(more));
        return out;
    }

    static Map<String, String> annotations(Placement p, String sharing) {
        Map<String, String> a = new LinkedHashMap<>();
        a.put("qgpu.io/gpus", String.join(",", p.gpuUuids()));
        a.put("qgpu.io/tenant", p.tenantId());
        if (sharing != null) {
            a.put("qgpu.io/sharing", sharing);
        }
        return a;
    }

    /** What every back end leaves alone: device nodes, the per-GPU part. */
    void sameDevicesAsWithout(PlacementEdits.Edits e, Placement p) {
        PlacementEdits.Edits plain = none.edits(p);
        assertEquals(plain.all().deviceNodes(), e.all().deviceNodes());
        assertEquals(plain.perGpu(), e.perGpu());
    }

    // ---- none: exactly the placement's edits, nothing added (today's behaviour)

    @Test
    void noneAddsNothingToAnyPlacement() {
        for (Placement p : List.of(shared(8 * GIB, 70, PriorityClass.ONLINE, A), shared(8 * GIB, 70, PriorityClass.OFFLINE, A),
                shared(8 * GIB, 70, PriorityClass.ONLINE, A, B), exclusive(A), exclusive(A, B))) {
            PlacementEdits.Edits e = none.edits(p, "pod-1_main");
            assertEquals(env(p), e.all().envStrings());
            assertEquals(List.of(), e.all().mounts());
            assertEquals(annotations(p, null), e.all().annotations());
            assertEquals(List.of(), e.hostDirectories());
            assertFalse(e.all().env().containsKey("QGPU_SHARING"));
            assertEquals(none.edits(p), e, "the key plays no part");
        }
    }

    // ---- mps

    @Test
    void mpsSharedOnline() {
        Placement p = shared(8 * GIB, 70, PriorityClass.ONLINE, A);
        PlacementEdits.Edits e = mps.edits(p, "ignored");
        assertEquals(env(p, "QGPU_SHARING=mps", "CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=8192M",
                "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=70", "CUDA_MPS_CLIENT_PRIORITY=0"), e.all().envStrings());
        assertEquals(List.of(Mount.bind("/run/qgpu/mps/" + A + "/pipe", "/tmp/nvidia-mps", false),
                Mount.bind("/run/qgpu/mps/shm", "/dev/shm", false)), e.all().mounts(), "the pipe, and the MPS /dev/shm by default");
        assertEquals(annotations(p, "mps"), e.all().annotations());
        assertEquals(List.of(), e.hostDirectories());
        assertEquals(e.all().env(), e.common().env(), "the back end's entries belong to the placement as a whole");
        sameDevicesAsWithout(e, p);
    }

    @Test
    void mpsSharedOfflineRunsBelowNormalAndMemoryIsFloored() {
        Placement p = shared(8 * GIB - 1, 30, PriorityClass.OFFLINE, A);
        PlacementEdits.Edits e = mps.edits(p);
        assertEquals(env(p, "QGPU_SHARING=mps", "CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=8191M",
                "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30", "CUDA_MPS_CLIENT_PRIORITY=1"), e.all().envStrings());
    }

    @Test
    void mpsExclusiveBypassesMpsOnOneAndTwoGpus() {
        for (Placement p : List.of(exclusive(A), exclusive(A, B))) {
            PlacementEdits.Edits e = mps.edits(p);
            assertEquals(env(p, "QGPU_SHARING=none"), e.all().envStrings());
            assertEquals(List.of(), e.all().mounts());
            assertEquals(annotations(p, "none"), e.all().annotations());
            sameDevicesAsWithout(e, p);
        }
    }

    @Test
    void mpsRefusesASharedClaimOnTwoGpus() {
        InvalidValueException x = assertThrows(InvalidValueException.class, () -> mps.edits(shared(8 * GIB, 70, PriorityClass.ONLINE, A, B)));
        assertEquals("placement[team-a/job].slices.size", x.field());
    }

    // ---- hami-core

    @Test
    void hamiCoreSharedOnlineAndOfflineGetTheSameLimits() {
        for (PriorityClass prio : PriorityClass.values()) {
            Placement p = shared(8 * GIB, 70, prio, A);
            PlacementEdits.Edits e = hami.edits(p, "pod-1_main");
            assertEquals(env(p, "QGPU_SHARING=hami-core", "CUDA_DEVICE_MEMORY_LIMIT_0=8192m",
                    "CUDA_DEVICE_SM_LIMIT=70", "CUDA_DEVICE_MEMORY_SHARED_CACHE=/usr/local/vgpu/cache/vgpu.cache"), e.all().envStrings(), prio.name());
            assertEquals(List.of(Mount.bind(lib.toString(), "/usr/local/vgpu/libvgpu.so", true),
                    Mount.bind("/var/lib/qgpu/hami-core-preload/ld.so.preload", "/etc/ld.so.preload", true),
                    Mount.bind("/var/lib/qgpu/hami-core/pod-1_main", "/usr/local/vgpu/cache", false),
                    Mount.bind("/tmp/vgpulock", "/tmp/vgpulock", false)), e.all().mounts());
            assertEquals(annotations(p, "hami-core"), e.all().annotations());
            assertEquals(List.of(new HostDirectory("/var/lib/qgpu/hami-core/pod-1_main", true), new HostDirectory("/tmp/vgpulock", false),
                    new HostFile("/var/lib/qgpu/hami-core-preload/ld.so.preload", "/usr/local/vgpu/libvgpu.so\n")), e.hostPaths());
            assertEquals(List.of(new HostDirectory("/var/lib/qgpu/hami-core/pod-1_main", true), new HostDirectory("/tmp/vgpulock", false)),
                    e.hostDirectories());
            sameDevicesAsWithout(e, p);
        }
    }

    @Test
    void hamiCoreWithPreloadEnvSetsLdPreloadAndMountsNoPreloadFile() {
        PlacementEdits env = new PlacementEdits(MINORS, NodeSharing.open(SharingBackend.HAMI_CORE, null,
                HamiCoreSharing.of(lib, Path.of("/var/lib/qgpu/hami-core")).withPreloadFile(java.util.Optional.empty())));
        Placement p = shared(8 * GIB, 70, PriorityClass.ONLINE, A);
        PlacementEdits.Edits e = env.edits(p, "pod-1_main");
        assertEquals(env(p, "QGPU_SHARING=hami-core", "LD_PRELOAD=/usr/local/vgpu/libvgpu.so", "CUDA_DEVICE_MEMORY_LIMIT_0=8192m",
                "CUDA_DEVICE_SM_LIMIT=70", "CUDA_DEVICE_MEMORY_SHARED_CACHE=/usr/local/vgpu/cache/vgpu.cache"), e.all().envStrings());
        assertEquals(List.of(Mount.bind(lib.toString(), "/usr/local/vgpu/libvgpu.so", true),
                Mount.bind("/var/lib/qgpu/hami-core/pod-1_main", "/usr/local/vgpu/cache", false),
                Mount.bind("/tmp/vgpulock", "/tmp/vgpulock", false)), e.all().mounts());
        assertEquals(List.of(new HostDirectory("/var/lib/qgpu/hami-core/pod-1_main", true), new HostDirectory("/tmp/vgpulock", false)),
                e.hostPaths());
    }

    @Test
    void hamiCoreSharedOnTwoGpusLimitsEachVisibleDevice() {
        Placement p = shared(16 * GIB - 1, 60, PriorityClass.ONLINE, B, A);
        PlacementEdits.Edits e = hami.edits(p, "pod-2_main");
        assertEquals(env(p, "QGPU_SHARING=hami-core", "CUDA_DEVICE_MEMORY_LIMIT_0=16383m",
                "CUDA_DEVICE_MEMORY_LIMIT_1=16383m", "CUDA_DEVICE_SM_LIMIT=60",
                "CUDA_DEVICE_MEMORY_SHARED_CACHE=/usr/local/vgpu/cache/vgpu.cache"), e.all().envStrings());
        sameDevicesAsWithout(e, p);
    }

    @Test
    void hamiCoreExclusiveGetsNothingButTheName() {
        for (Placement p : List.of(exclusive(A), exclusive(A, B))) {
            PlacementEdits.Edits e = hami.edits(p, "pod-3_main");
            assertEquals(env(p, "QGPU_SHARING=none"), e.all().envStrings());
            assertEquals(List.of(), e.all().mounts());
            assertEquals(List.of(), e.hostPaths());
            assertEquals(annotations(p, "none"), e.all().annotations());
        }
    }

    @Test
    void hamiCoreNeedsAContainerKey() {
        InvalidValueException x = assertThrows(InvalidValueException.class, () -> hami.edits(shared(8 * GIB, 70, PriorityClass.ONLINE, A)));
        assertEquals("containerKey", x.field());
    }

    // ---- host paths

    @Test
    void hostPathsAreCreatedAFreshDirectoryIsEmptiedAndAFileWritten() throws IOException {
        Path cache = tmp.resolve("cache/pod-1_main");
        Path lock = tmp.resolve("lock");
        Files.createDirectories(cache);
        Files.createDirectories(lock);
        Files.writeString(cache.resolve("vgpu.cache"), "a previous container's limits");
        Files.writeString(lock.resolve("other.lock"), "another container's lock");
        new PlacementEdits.Edits(ContainerEdits.EMPTY, Map.of(), List.of(new HostDirectory(cache.toString(), true),
                new HostDirectory(lock.toString(), false), new HostDirectory(tmp.resolve("new/dir").toString(), true),
                new HostFile(tmp.resolve("preload/ld.so.preload").toString(), "/usr/local/vgpu/libvgpu.so\n"))).createHostPaths();
        assertTrue(Files.isDirectory(cache));
        try (var s = Files.list(cache)) {
            assertEquals(0, s.count(), "the fresh directory is empty");
        }
        assertTrue(Files.exists(lock.resolve("other.lock")), "a shared directory is left as it is");
        assertTrue(Files.isDirectory(tmp.resolve("new/dir")));
        assertEquals("/usr/local/vgpu/libvgpu.so\n", Files.readString(tmp.resolve("preload/ld.so.preload")));
    }
}
