package io.qgpu.kubernetes.node.sharing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.kubernetes.node.mps.MpsDaemonMode;
import io.qgpu.kubernetes.node.mps.MpsLayout;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The agents' sharing flags: defaults, values, and refusals naming the flag and the value. */
class SharingOptionsTest {
    @TempDir
    Path tmp;

    @Test
    void withoutFlagsThereIsNoBackEnd() {
        SharingOptions o = SharingOptions.parse(Map.of("--plugin-dir", "/x"));
        assertEquals(SharingOptions.defaults(), o);
        assertEquals(SharingBackend.NONE, o.open().backend());
        assertTrue(o.supervisor(() -> 0L).isEmpty());
    }

    @Test
    void mpsTakesItsRootControlAndShm() {
        SharingOptions o = SharingOptions.parse(Map.of("--sharing", "mps", "--mps-root", "/run/x/mps", "--mps-control", "bin/fake-control",
                "--mps-shm-dir", "/run/x/shm"));
        assertEquals(SharingBackend.MPS, o.backend());
        assertEquals(new MpsLayout(Path.of("/run/x/mps")), o.mpsLayout());
        assertEquals(Path.of("bin/fake-control"), o.mpsControl());
        assertEquals(Optional.of(Path.of("/run/x/shm")), o.mpsShmDir());
        assertEquals(SharingBackend.MPS, o.open().backend());
        assertTrue(o.supervisor(() -> 0L).isPresent());
    }

    @Test
    void mpsDaemonsAreExternalAndTheShmDirectoryIsUnderTheRootByDefault() {
        SharingOptions o = SharingOptions.parse(Map.of("--sharing", "mps", "--mps-root", "/run/x/mps"));
        assertEquals(MpsDaemonMode.EXTERNAL, o.mpsDaemons(), "the MPS control daemon DaemonSet starts them");
        assertEquals(Path.of("/run/x/mps/shm"), o.mpsShmDirectory());
        assertEquals(MpsDaemonMode.EXTERNAL, o.supervisor(() -> 0L).orElseThrow().mode());
        SharingOptions agent = SharingOptions.parse(Map.of("--sharing", "mps", "--mps-daemons", "agent", "--mps-shm-dir", "/dev/shm/qgpu"));
        assertEquals(MpsDaemonMode.AGENT, agent.mpsDaemons());
        assertEquals(Path.of("/dev/shm/qgpu"), agent.mpsShmDirectory());
        assertEquals(MpsDaemonMode.AGENT, agent.supervisor(() -> 0L).orElseThrow().mode());
        assertEquals(MpsDaemonMode.AGENT, o.withMpsDaemons(MpsDaemonMode.AGENT).mpsDaemons());
        assertEquals("--mps-daemons = \"pod\": must be one of external, agent",
                assertThrows(IllegalArgumentException.class, () -> SharingOptions.parse(Map.of("--sharing", "mps", "--mps-daemons", "pod")))
                        .getMessage());
        assertEquals("--mps-daemons = \"agent\": only with --sharing mps (--sharing is none)",
                assertThrows(IllegalArgumentException.class, () -> SharingOptions.parse(Map.of("--mps-daemons", "agent"))).getMessage());
    }

    @Test
    void hamiCoreTakesItsLibraryAndCacheRoot() throws IOException {
        Path lib = Files.writeString(tmp.resolve("libvgpu.so"), "x");
        SharingOptions o = SharingOptions.parse(Map.of("--sharing", "hami-core", "--hami-core-library", lib.toString(),
                "--hami-core-cache-root", "/var/lib/x"));
        assertEquals(lib, o.hamiCoreLibrary());
        assertEquals(Path.of("/var/lib/x"), o.hamiCoreCacheRoot());
        assertEquals(SharingBackend.HAMI_CORE, o.open().backend());
    }

    @Test
    void badValuesAreRefusedByFlagAndValue() {
        assertEquals("--sharing = \"mig\": must be one of none, mps, hami-core",
                assertThrows(IllegalArgumentException.class, () -> SharingOptions.parse(Map.of("--sharing", "mig"))).getMessage());
        assertEquals("--mps-root = \"run/mps\": must be an absolute path",
                assertThrows(IllegalArgumentException.class, () -> SharingOptions.parse(Map.of("--sharing", "mps", "--mps-root", "run/mps"))).getMessage());
        assertEquals("--mps-root = \"/run/mps\": only with --sharing mps (--sharing is none)",
                assertThrows(IllegalArgumentException.class, () -> SharingOptions.parse(Map.of("--mps-root", "/run/mps"))).getMessage());
        assertEquals("--hami-core-library = \"/x/libvgpu.so\": only with --sharing hami-core (--sharing is mps)",
                assertThrows(IllegalArgumentException.class, () -> SharingOptions.parse(Map.of("--sharing", "mps",
                        "--hami-core-library", "/x/libvgpu.so"))).getMessage());
    }

    @Test
    void hamiCoreLoadsItsLibraryThroughAPreloadFileBesideTheCacheRootByDefault() throws IOException {
        Path lib = Files.writeString(tmp.resolve("libvgpu.so"), "x");
        SharingOptions o = SharingOptions.parse(Map.of("--sharing", "hami-core", "--hami-core-library", lib.toString(),
                "--hami-core-cache-root", "/var/lib/x/cache"));
        assertEquals(Optional.of(Path.of("/var/lib/x/hami-core-preload/ld.so.preload")), o.hamiCorePreloadFile());
        assertEquals(Optional.of(Path.of("/var/lib/qgpu/hami-core-preload/ld.so.preload")), SharingOptions.defaults().hamiCorePreloadFile());
        SharingOptions named = SharingOptions.parse(Map.of("--sharing", "hami-core", "--hami-core-library", lib.toString(),
                "--hami-core-preload", "file", "--hami-core-preload-file", "/etc/qgpu/ld.so.preload"));
        assertEquals(Optional.of(Path.of("/etc/qgpu/ld.so.preload")), named.hamiCorePreloadFile());
        assertEquals(named.hamiCorePreloadFile(), named.withMpsTickEvery(java.time.Duration.ZERO).hamiCorePreloadFile());
    }

    @Test
    void hamiCorePreloadEnvHasNoPreloadFile() throws IOException {
        Path lib = Files.writeString(tmp.resolve("libvgpu.so"), "x");
        SharingOptions o = SharingOptions.parse(Map.of("--sharing", "hami-core", "--hami-core-library", lib.toString(),
                "--hami-core-preload", "env"));
        assertEquals(Optional.empty(), o.hamiCorePreloadFile());
    }

    @Test
    void badPreloadValuesAreRefusedByFlagAndValue() throws IOException {
        Path lib = Files.writeString(tmp.resolve("libvgpu.so"), "x");
        assertEquals("--hami-core-preload = \"ld\": must be one of file, env",
                assertThrows(IllegalArgumentException.class, () -> SharingOptions.parse(Map.of("--sharing", "hami-core",
                        "--hami-core-library", lib.toString(), "--hami-core-preload", "ld"))).getMessage());
        assertEquals("--hami-core-preload-file = \"/etc/x\": only with --hami-core-preload file (--hami-core-preload is env)",
                assertThrows(IllegalArgumentException.class, () -> SharingOptions.parse(Map.of("--sharing", "hami-core",
                        "--hami-core-library", lib.toString(), "--hami-core-preload", "env", "--hami-core-preload-file", "/etc/x"))).getMessage());
        assertEquals("--hami-core-preload-file = \"etc/x\": must be an absolute path",
                assertThrows(IllegalArgumentException.class, () -> SharingOptions.parse(Map.of("--sharing", "hami-core",
                        "--hami-core-library", lib.toString(), "--hami-core-preload-file", "etc/x"))).getMessage());
        assertEquals("--hami-core-preload-file = \"/var/lib/x/p\": must not be under --hami-core-cache-root (/var/lib/x): "
                        + "the agent removes what no container owns there",
                assertThrows(IllegalArgumentException.class, () -> SharingOptions.parse(Map.of("--sharing", "hami-core",
                        "--hami-core-library", lib.toString(), "--hami-core-cache-root", "/var/lib/x", "--hami-core-preload-file",
                        "/var/lib/x/p"))).getMessage());
        assertEquals("--hami-core-preload = \"env\": only with --sharing hami-core (--sharing is mps)",
                assertThrows(IllegalArgumentException.class, () -> SharingOptions.parse(Map.of("--sharing", "mps",
                        "--hami-core-preload", "env"))).getMessage());
    }

    @Test
    void hamiCoreWithoutItsLibraryIsRefusedWithTheReason() {
        Path missing = tmp.resolve("no/libvgpu.so");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SharingOptions.parse(Map.of("--sharing", "hami-core",
                "--hami-core-library", missing.toString())));
        assertEquals("--hami-core-library = \"" + missing + "\": no such file: --sharing hami-core needs HAMi-core's libvgpu.so on the node "
                + "(build it from HAMi-core, or run with --sharing none or mps)", e.getMessage());
        assertEquals(1, e.getMessage().lines().count(), "one line");
    }
}
