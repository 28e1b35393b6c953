package io.qgpu.kubernetes.node.sharing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.qgpu.kubernetes.node.reconcile.OwnedDirectories;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * HAMi-core's directories are usable by a container that runs as any uid under any umask: HAMi-core opens its
 * cache file there with {@code O_CREAT} and ends the process when it cannot. The agent (root, umask 022 here)
 * makes them {@code rwxrwxrwx}; where the test runs as root and {@code setpriv} exists it also writes into them as
 * uid 65534 with umask 077, as a non-root container would (skipped otherwise, saying why).
 */
class NonRootDirectoriesTest {
    @TempDir
    Path tmp;

    @Test
    void freshAndSharedDirectoriesAreOpenToEveryUid() throws Exception {
        Path fresh = tmp.resolve("cache/pod-1_main");
        Path lock = tmp.resolve("vgpulock");
        new SharingEdits.HostDirectory(fresh.toString(), true).create();
        new SharingEdits.HostDirectory(lock.toString(), false).create();
        Path owned = tmp.resolve("owned");
        OwnedDirectories d = new OwnedDirectories("cache", owned, Set::of, SharingEdits.HostDirectory.ANY_UID);
        d.ensure(owned.resolve("claim-1"));
        for (Path p : new Path[] {fresh, lock, owned.resolve("claim-1")}) {
            assertEquals("rwxrwxrwx", PosixFilePermissions.toString(Files.getPosixFilePermissions(p)), p.toString());
        }
    }

    @Test
    void aNonRootProcessUnderARestrictiveUmaskCreatesItsFilesThere() throws Exception {
        assumeTrue("root".equals(System.getProperty("user.name")), "needs root to run a process as another uid");
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/setpriv")), "needs setpriv (util-linux)");
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwxr-xr-x"));   // traversable, as /var/lib is
        Path fresh = tmp.resolve("cache/pod-1_main");
        Path lock = tmp.resolve("vgpulock");
        new SharingEdits.HostDirectory(fresh.toString(), true).create();
        new SharingEdits.HostDirectory(lock.toString(), false).create();
        Files.setPosixFilePermissions(tmp.resolve("cache"), PosixFilePermissions.fromString("rwxr-xr-x"));
        Process p = new ProcessBuilder("/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c",
                "umask 077 && : > \"$0/vgpu.cache\" && : > \"$1/vgpu0.lock\"", fresh.toString(), lock.toString())
                .redirectErrorStream(true).start();
        assumeTrue(p.waitFor(30, TimeUnit.SECONDS), "setpriv did not finish");
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.exitValue(), "uid 65534 could not create its files: " + out);
        assertEquals(65534, Files.getAttribute(fresh.resolve("vgpu.cache"), "unix:uid"));
    }
}
