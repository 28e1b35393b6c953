package io.qgpu.kubernetes.node.sharing;

import static io.qgpu.kubernetes.node.sharing.Placements.GPU_A;
import static io.qgpu.kubernetes.node.sharing.Placements.GPU_B;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.PriorityClass;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class HamiCoreSharingTest {
    private final HamiCoreSharing hami = HamiCoreSharing.of(Path.of("/usr/local/vgpu/libvgpu.so"), Path.of("/var/lib/qgpu/hami"));

    @Test
    void aSharedSliceGetsThePreloadLimitsAndItsOwnCache() {
        SharingEdits e = hami.edits(Placements.shared(8L << 30, 40, 70, PriorityClass.ONLINE, GPU_A), "pod-1_main");
        Map<String, String> expected = new LinkedHashMap<>();
        expected.put("QGPU_SHARING", "hami-core");
        expected.put("LD_PRELOAD", "/usr/local/vgpu/libvgpu.so");
        expected.put("CUDA_DEVICE_MEMORY_LIMIT_0", "8192m");
        expected.put("CUDA_DEVICE_SM_LIMIT", "70");
        expected.put("CUDA_DEVICE_MEMORY_SHARED_CACHE", "/usr/local/vgpu/cache/vgpu.cache");
        assertEquals(List.copyOf(expected.entrySet()), List.copyOf(e.env().entrySet()), "entries and their order");
        assertEquals(List.of(
                new SharingEdits.Mount("/usr/local/vgpu/libvgpu.so", "/usr/local/vgpu/libvgpu.so", true),
                new SharingEdits.Mount("/var/lib/qgpu/hami/pod-1_main", "/usr/local/vgpu/cache", false),
                new SharingEdits.Mount("/tmp/vgpulock", "/tmp/vgpulock", false)), e.mounts());
        assertEquals(List.of("/var/lib/qgpu/hami/pod-1_main", "/tmp/vgpulock"), e.hostDirectories());
    }

    @Test
    void eachContainerHasItsOwnCacheDirectory() {
        var p = Placements.shared(8L << 30, 40, 70, PriorityClass.ONLINE, GPU_A);
        assertEquals("/var/lib/qgpu/hami/pod-2_side", hami.edits(p, "pod-2_side").mounts().get(1).hostPath());
    }

    @Test
    void everyVisibleGpuGetsItsMemoryLimit() {
        SharingEdits e = hami.edits(Placements.shared((4L << 30) + 123, 10, 30, PriorityClass.OFFLINE, GPU_A, GPU_B), "k");
        assertEquals("4096m", e.env().get("CUDA_DEVICE_MEMORY_LIMIT_0"));
        assertEquals("4096m", e.env().get("CUDA_DEVICE_MEMORY_LIMIT_1"));
        assertEquals(null, e.env().get("CUDA_DEVICE_MEMORY_LIMIT_2"));
        assertEquals("30", e.env().get("CUDA_DEVICE_SM_LIMIT"));
    }

    @ParameterizedTest
    @CsvSource({"1048576, 1m", "2097151, 1m", "17179869184, 16384m", "17179869183, 16383m"})
    void memoryIsWholeMibRoundedDown(long bytes, String expected) {
        assertEquals(expected, hami.edits(Placements.shared(bytes, 10, 50, PriorityClass.ONLINE, GPU_A), "k").env()
                .get("CUDA_DEVICE_MEMORY_LIMIT_0"));
    }

    @Test
    void exclusiveAndHostOnlyClaimsGetNothing() {
        assertEquals(SharingEdits.none(), hami.edits(Placements.exclusive(GPU_A), "k"));
        assertEquals(SharingEdits.none(), hami.edits(Placements.hostOnly(), "k"));
    }

    @Test
    void aContainerKeyThatIsNotAFileNameIsRefused() {
        var p = Placements.shared(1L << 30, 10, 50, PriorityClass.ONLINE, GPU_A);
        for (String bad : new String[] {"../x", "a/b", "", ".hidden"}) {
            InvalidValueException e = assertThrows(InvalidValueException.class, () -> hami.edits(p, bad), bad);
            assertEquals("containerKey", e.field());
            assertEquals(bad, e.value());
        }
        assertThrows(InvalidValueException.class, () -> hami.edits(p, null));
    }

    @Test
    void aMissingLibraryIsRefusedNamingTheFlagThePathAndWhy(@TempDir Path dir) throws IOException {
        Path lib = dir.resolve("libvgpu.so");
        HamiCoreSharing h = HamiCoreSharing.of(lib, dir.resolve("cache"));
        InvalidValueException e = assertThrows(InvalidValueException.class, h::checkLibrary);
        assertEquals("--hami-core-library", e.field());
        assertEquals(lib.toString(), e.value());
        assertTrue(e.getMessage().startsWith("--hami-core-library = \"" + lib + "\": no such file: --sharing hami-core needs"), e.getMessage());

        Files.createDirectory(lib);
        assertTrue(assertThrows(InvalidValueException.class, h::checkLibrary).getMessage().contains("is not a regular file"));
        Files.delete(lib);

        Files.write(lib, new byte[] {0x7f, 'E', 'L', 'F'});
        h.checkLibrary();
    }

    @Test
    void relativeHostPathsAreRefusedNamingTheFlag() {
        assertEquals("--hami-core-library = \"libvgpu.so\": must be an absolute path",
                assertThrows(InvalidValueException.class, () -> HamiCoreSharing.of(Path.of("libvgpu.so"), Path.of("/c"))).getMessage());
    }
}
