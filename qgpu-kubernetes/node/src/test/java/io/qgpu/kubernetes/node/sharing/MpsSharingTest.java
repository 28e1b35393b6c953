package io.qgpu.kubernetes.node.sharing;

import static io.qgpu.kubernetes.node.sharing.Placements.GPU_A;
import static io.qgpu.kubernetes.node.sharing.Placements.GPU_B;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Slice;
import io.qgpu.kubernetes.node.ContainerEdits;
import io.qgpu.kubernetes.node.mps.MpsLayout;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class MpsSharingTest {
    private static final long MIB = 1L << 20;
    private final MpsLayout layout = new MpsLayout(Path.of("/run/qgpu/mps"));
    private final MpsSharing mps = MpsSharing.of(layout);

    @Test
    void aSharedOnlineSliceGetsPipeMemoryThreadsAndTheHighestPriority() {
        SharingEdits e = mps.edits(Placements.shared(8L << 30, 40, 70, PriorityClass.ONLINE, GPU_A));
        Map<String, String> expected = new LinkedHashMap<>();
        expected.put("QGPU_SHARING", "mps");
        expected.put("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps");
        expected.put("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=8192M");
        expected.put("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "70");
        expected.put("CUDA_MPS_CLIENT_PRIORITY", "0");
        assertEquals(List.copyOf(expected.entrySet()), List.copyOf(e.env().entrySet()), "entries and their order");
        assertEquals(List.of(ContainerEdits.Mount.bind("/run/qgpu/mps/" + GPU_A + "/pipe", "/tmp/nvidia-mps", false),
                ContainerEdits.Mount.bind("/run/qgpu/mps/shm", "/dev/shm", false)), e.mounts(),
                "the pipe directory, and by default the node's MPS shared-memory directory as /dev/shm");
        assertEquals(layout.pipeDir(GPU_A).toString(), e.mounts().get(0).hostPath(), "the supervisor's pipe directory");
        assertTrue(e.hostDirectories().isEmpty(), "the supervisor creates the pipe directory");
        assertEquals(SharingBackend.MPS, e.backend());
    }

    @Test
    void offlineWorkRunsBelowNormal() {
        SharingEdits e = mps.edits(Placements.shared(4L << 30, 0, 100, PriorityClass.OFFLINE, GPU_A));
        assertEquals("1", e.env().get("CUDA_MPS_CLIENT_PRIORITY"));
        assertEquals("100", e.env().get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
    }

    @ParameterizedTest
    @CsvSource({
        "1048576, 0=1M",          // exactly 1 MiB
        "1048577, 0=1M",          // a byte more: still 1 MiB, never 2
        "2097151, 0=1M",          // a byte short of 2 MiB: rounded down
        "8589934592, 0=8192M",    // 8 GiB
        "8589934591, 0=8191M",    // a byte short of 8 GiB
        "17179869184, 0=16384M",  // 16 GiB
    })
    void memoryIsWholeMibRoundedDown(long bytes, String expected) {
        assertEquals(expected, mps.edits(Placements.shared(bytes, 10, 50, PriorityClass.ONLINE, GPU_A)).env()
                .get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"));
    }

    @Test
    void theLimitListsEveryVisibleDeviceByIndex() {
        assertEquals("0=8192M,1=8192M,2=1M", MpsSharing.pinnedMemoryLimit("p", List.of(
                new Slice(GPU_A, 8L << 30, 0, 50), new Slice(GPU_B, (8L << 30) + MIB - 1, 0, 50), new Slice("GPU-c", MIB, 0, 50))));
    }

    @Test
    void belowOneMibIsRefusedNamingTheSlice() {
        InvalidValueException e = assertThrows(InvalidValueException.class,
                () -> mps.edits(Placements.shared(MIB - 1, 10, 50, PriorityClass.ONLINE, GPU_A)));
        assertEquals("placement[team-a/job].slices[" + GPU_A + "].memoryBytes = 1048575: is below 1 MiB: MPS and HAMi-core take limits in whole MiB",
                e.getMessage());
    }

    @Test
    void exclusiveAndHostOnlyClaimsBypassMps() {
        assertEquals(SharingEdits.none(), mps.edits(Placements.exclusive(GPU_A)));
        assertEquals(SharingEdits.none(), mps.edits(Placements.exclusive(GPU_A, GPU_B)));
        assertEquals(SharingEdits.none(), mps.edits(Placements.hostOnly()));
        assertEquals(Map.of("QGPU_SHARING", "none"), SharingEdits.none().env());
    }

    @Test
    void aSharedClaimOnTwoGpusIsRefusedWithTheReason() {
        InvalidValueException e = assertThrows(InvalidValueException.class,
                () -> mps.edits(Placements.shared(4L << 30, 10, 50, PriorityClass.ONLINE, GPU_A, GPU_B)));
        assertEquals("placement[team-a/job].slices.size", e.field());
        assertEquals(2, e.value());
        assertTrue(e.getMessage().contains("each GPU has its own control daemon"), e.getMessage());
    }

    @Test
    void withoutASharedMemoryDirectoryOnlyThePipeIsMounted() {
        MpsSharing without = new MpsSharing(layout, MpsSharing.CONTAINER_PIPE_DIR, Optional.empty());
        SharingEdits e = without.edits(Placements.shared(1L << 30, 10, 50, PriorityClass.ONLINE, GPU_A));
        assertEquals(List.of(ContainerEdits.Mount.bind(layout.pipeDir(GPU_A).toString(), "/tmp/nvidia-mps", false)), e.mounts());
    }

    @Test
    void theSharedMemoryDirectoryIsMountedWhereConfigured() {
        MpsSharing withShm = new MpsSharing(layout, "/var/run/mps", Optional.of(Path.of("/run/qgpu/mps-shm")));
        SharingEdits e = withShm.edits(Placements.shared(1L << 30, 10, 50, PriorityClass.ONLINE, GPU_A));
        assertEquals("/var/run/mps", e.env().get("CUDA_MPS_PIPE_DIRECTORY"));
        assertEquals(List.of(ContainerEdits.Mount.bind(layout.pipeDir(GPU_A).toString(), "/var/run/mps", false),
                ContainerEdits.Mount.bind("/run/qgpu/mps-shm", "/dev/shm", false)), e.mounts());
    }

    @Test
    void relativePathsAreRefusedNamingTheFlag() {
        assertEquals("--mps-root = \"run/mps\": must be an absolute path",
                assertThrows(InvalidValueException.class, () -> new MpsLayout(Path.of("run/mps"))).getMessage());
        assertEquals("--mps-container-pipe-dir = \"tmp/mps\": must be an absolute path",
                assertThrows(InvalidValueException.class, () -> new MpsSharing(layout, "tmp/mps", Optional.empty())).getMessage());
    }

    @Test
    void aGpuNameThatIsNotAPathSegmentIsRefused() {
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> layout.pipeDir("../etc"));
        assertEquals("gpuUuid", e.field());
        assertThrows(InvalidValueException.class, () -> layout.pipeDir("MIG-GPU-8932f937/1/2"));
    }
}
