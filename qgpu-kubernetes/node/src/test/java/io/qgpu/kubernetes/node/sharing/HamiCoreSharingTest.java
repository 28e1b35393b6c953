package io.qgpu.kubernetes.node.sharing;

import static io.qgpu.kubernetes.node.sharing.Placements.GPU_A;
import static io.qgpu.kubernetes.node.sharing.Placements.GPU_B;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.PriorityClass;
import io.qgpu.kubernetes.node.ContainerEdits;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class HamiCoreSharingTest {
    private final HamiCoreSharing hami = HamiCoreSharing.of(Path.of("/usr/local/vgpu/libvgpu.so"), Path.of("/var/lib/qgpu/hami"));

    @Test
    void aSharedSliceGetsThePreloadFileLimitsAndItsOwnCacheButNoLdPreload() {
        SharingEdits e = hami.edits(Placements.shared(8L << 30, 40, 70, PriorityClass.ONLINE, GPU_A), "pod-1_main");
        Map<String, String> expected = new LinkedHashMap<>();
        expected.put("QGPU_SHARING", "hami-core");
        expected.put("CUDA_DEVICE_MEMORY_LIMIT_0", "8192m");
        expected.put("CUDA_DEVICE_SM_LIMIT", "70");
        expected.put("CUDA_DEVICE_MEMORY_SHARED_CACHE", "/usr/local/vgpu/cache/vgpu.cache");
        assertEquals(List.copyOf(expected.entrySet()), List.copyOf(e.env().entrySet()), "entries and their order: no LD_PRELOAD");
        assertEquals(List.of(
                ContainerEdits.Mount.bind("/usr/local/vgpu/libvgpu.so", "/usr/local/vgpu/libvgpu.so", true),
                ContainerEdits.Mount.bind("/var/lib/qgpu/hami-core-preload/ld.so.preload", "/etc/ld.so.preload", true),
                ContainerEdits.Mount.bind("/var/lib/qgpu/hami/pod-1_main", "/usr/local/vgpu/cache", false),
                ContainerEdits.Mount.bind("/tmp/vgpulock", "/tmp/vgpulock", false)), e.mounts());
        assertEquals(List.of(new SharingEdits.HostDirectory("/var/lib/qgpu/hami/pod-1_main", true),
                new SharingEdits.HostDirectory("/tmp/vgpulock", false),
                new SharingEdits.HostFile("/var/lib/qgpu/hami-core-preload/ld.so.preload", "/usr/local/vgpu/libvgpu.so\n")), e.hostPaths(),
                "the cache starts empty, the lock directory and the preload file are shared");
        assertTrue(e.mounts().get(0).readOnly(), "the library is read-only");
        assertTrue(e.mounts().get(1).readOnly(), "the preload file is read-only");
        assertEquals(List.of("ro", "nosuid", "nodev", "bind"), e.mounts().get(0).options());
        assertEquals(List.of("ro", "nosuid", "nodev", "bind"), e.mounts().get(1).options());
        assertEquals(List.of("rw", "nosuid", "nodev", "bind"), e.mounts().get(2).options());
    }

    @Test
    void withPreloadEnvTheLibraryIsInLdPreloadAndNoFileIsMounted() {
        HamiCoreSharing env = hami.withPreloadFile(Optional.empty());
        SharingEdits e = env.edits(Placements.shared(8L << 30, 40, 70, PriorityClass.ONLINE, GPU_A), "pod-1_main");
        assertEquals(List.of("QGPU_SHARING", "LD_PRELOAD", "CUDA_DEVICE_MEMORY_LIMIT_0", "CUDA_DEVICE_SM_LIMIT", "CUDA_DEVICE_MEMORY_SHARED_CACHE"),
                List.copyOf(e.env().keySet()));
        assertEquals("/usr/local/vgpu/libvgpu.so", e.env().get("LD_PRELOAD"));
        assertEquals(List.of(
                ContainerEdits.Mount.bind("/usr/local/vgpu/libvgpu.so", "/usr/local/vgpu/libvgpu.so", true),
                ContainerEdits.Mount.bind("/var/lib/qgpu/hami/pod-1_main", "/usr/local/vgpu/cache", false),
                ContainerEdits.Mount.bind("/tmp/vgpulock", "/tmp/vgpulock", false)), e.mounts());
        assertTrue(e.hostPaths().stream().noneMatch(SharingEdits.HostFile.class::isInstance));
    }

    @Test
    void thePreloadFileHoldsTheContainerPathOfTheLibrary() {
        HamiCoreSharing moved = new HamiCoreSharing(Path.of("/opt/hami/libvgpu.so"), "/opt/vgpu/libvgpu.so", Path.of("/var/lib/qgpu/hami"),
                "/opt/vgpu/cache", Path.of("/tmp/vgpulock"), Optional.of(Path.of("/etc/qgpu/ld.so.preload")));
        assertEquals("/opt/vgpu/libvgpu.so\n", moved.preloadFileContent(), "the container's path, not the node's");
        assertEquals(new SharingEdits.HostFile("/etc/qgpu/ld.so.preload", "/opt/vgpu/libvgpu.so\n"),
                moved.edits(Placements.shared(1L << 30, 10, 50, PriorityClass.ONLINE, GPU_A), "k").hostPaths().get(2));
    }

    @Test
    void theDefaultPreloadFileIsBesideTheCacheRootNotUnderIt() {
        assertEquals(Path.of("/var/lib/qgpu/hami-core-preload/ld.so.preload"), HamiCoreSharing.defaultPreloadFile(Path.of("/var/lib/qgpu/hami-core")));
        assertEquals(Path.of("/srv/hami-core-preload/ld.so.preload"), HamiCoreSharing.defaultPreloadFile(Path.of("/srv/cache/")));
        assertEquals(Path.of("/hami-core-preload/ld.so.preload"), HamiCoreSharing.defaultPreloadFile(Path.of("/")));
    }

    @Test
    void aPreloadFileUnderTheCacheRootOrRelativeIsRefusedNamingTheFlagAndValue() {
        InvalidValueException under = assertThrows(InvalidValueException.class, () -> hami.withPreloadFile(Optional.of(Path.of("/var/lib/qgpu/hami/ld.so.preload"))));
        assertEquals("--hami-core-preload-file", under.field());
        assertEquals("/var/lib/qgpu/hami/ld.so.preload", under.value());
        assertEquals("--hami-core-preload-file = \"/var/lib/qgpu/hami/ld.so.preload\": must not be under --hami-core-cache-root "
                + "(/var/lib/qgpu/hami): the agent removes what no container owns there", under.getMessage());
        assertEquals("--hami-core-preload-file = \"ld.so.preload\": must be an absolute path",
                assertThrows(InvalidValueException.class, () -> hami.withPreloadFile(Optional.of(Path.of("ld.so.preload")))).getMessage());
        assertEquals("--hami-core-preload-file = \"/\": must name a file",
                assertThrows(InvalidValueException.class, () -> hami.withPreloadFile(Optional.of(Path.of("/")))).getMessage());
    }

    @Test
    void thePreloadModeIsFileOrEnv() {
        assertTrue(HamiCoreSharing.preloadByFile("file"));
        assertEquals(false, HamiCoreSharing.preloadByFile("env"));
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> HamiCoreSharing.preloadByFile("both"));
        assertEquals("--hami-core-preload", e.field());
        assertEquals("both", e.value());
        assertEquals("--hami-core-preload = \"both\": must be one of file, env", e.getMessage());
    }

    @Test
    void eachContainerHasItsOwnCacheDirectory() {
        var p = Placements.shared(8L << 30, 40, 70, PriorityClass.ONLINE, GPU_A);
        assertEquals("/var/lib/qgpu/hami/pod-2_side", hami.edits(p, "pod-2_side").mounts().get(2).hostPath());
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
