package io.qgpu.kubernetes.node.sharing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The host file the node agents write for HAMi-core's {@code /etc/ld.so.preload}: its content and mode, that a
 * second {@code create()} leaves a file that holds the content alone (a running container's bind mount keeps
 * seeing the same file), and that a wrong file, a link or a directory in its place is dealt with.
 */
class HostFileTest {
    static final String CONTENT = "/usr/local/vgpu/libvgpu.so\n";

    @TempDir
    Path tmp;

    @Test
    void createsTheDirectoryAndTheFileReadableByEveryUid() throws IOException {
        Path f = tmp.resolve("hami-core-preload/ld.so.preload");
        new SharingEdits.HostFile(f.toString(), CONTENT).create();
        assertEquals(CONTENT, Files.readString(f));
        assertEquals("rw-r--r--", PosixFilePermissions.toString(Files.getPosixFilePermissions(f)));
        try (Stream<Path> files = Files.list(f.getParent())) {
            assertEquals(List.of(f), files.toList(), "no temporary file is left");
        }
        assertFalse(new SharingEdits.HostFile(f.toString(), CONTENT).fresh(), "a host file is shared, never fresh");
    }

    @Test
    void aFileThatHoldsTheContentIsLeftAloneButItsModeIsSetAgain() throws IOException {
        Path f = tmp.resolve("ld.so.preload");
        SharingEdits.HostFile h = new SharingEdits.HostFile(f.toString(), CONTENT);
        h.create();
        Object inode = Files.getAttribute(f, "unix:ino");
        FileTime old = FileTime.fromMillis(1_000_000L);
        Files.setLastModifiedTime(f, old);
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-------"));
        h.create();
        assertEquals(inode, Files.getAttribute(f, "unix:ino"), "the same file: a container's bind mount sees it");
        assertEquals(old, Files.getLastModifiedTime(f), "not written again");
        assertEquals("rw-r--r--", PosixFilePermissions.toString(Files.getPosixFilePermissions(f)));
    }

    @Test
    void aFileWithOtherContentIsReplacedWhole() throws IOException {
        Path f = tmp.resolve("ld.so.preload");
        Files.writeString(f, "/somewhere/else.so\n/usr/local/vgpu/libvgpu.so\n");
        new SharingEdits.HostFile(f.toString(), CONTENT).create();
        assertEquals(CONTENT, Files.readString(f));
        assertEquals("rw-r--r--", PosixFilePermissions.toString(Files.getPosixFilePermissions(f)));
    }

    @Test
    void aLinkInItsPlaceIsReplacedNotFollowed() throws IOException {
        Path target = Files.writeString(tmp.resolve("target"), "keep me");
        Path f = tmp.resolve("ld.so.preload");
        Files.createSymbolicLink(f, target);
        new SharingEdits.HostFile(f.toString(), CONTENT).create();
        assertTrue(Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS));
        assertEquals(CONTENT, Files.readString(f));
        assertEquals("keep me", Files.readString(target), "the link's target is untouched");
    }

    @Test
    void aDirectoryInItsPlaceFailsNamingThePath() throws IOException {
        Path f = Files.createDirectories(tmp.resolve("ld.so.preload"));
        IOException e = assertThrows(IOException.class, () -> new SharingEdits.HostFile(f.toString(), CONTENT).create());
        assertEquals("host file " + f + " cannot be prepared: a directory is in its place", e.getMessage());
    }

    @Test
    void aRelativePathIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new SharingEdits.HostFile("ld.so.preload", CONTENT));
        assertEquals("host file ld.so.preload: must be an absolute path naming a file", e.getMessage());
    }

    @Test
    void aNonRootUidCanReadIt() throws Exception {
        assumeTrue("root".equals(System.getProperty("user.name")), "needs root to run a process as another uid");
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/setpriv")), "needs setpriv (util-linux)");
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path f = tmp.resolve("hami-core-preload/ld.so.preload");
        new SharingEdits.HostFile(f.toString(), CONTENT).create();
        Files.setPosixFilePermissions(f.getParent(), PosixFilePermissions.fromString("rwxr-xr-x"));
        // the dynamic loader checks the file with access(R_OK) as the process's real uid before it reads it
        Process p = new ProcessBuilder("/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c",
                "test -r \"$0\" && cat \"$0\"", f.toString()).redirectErrorStream(true).start();
        assumeTrue(p.waitFor(30, TimeUnit.SECONDS), "setpriv did not finish");
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.exitValue(), "uid 65534 could not read the preload file: " + out);
        assertEquals(CONTENT, out);
    }
}
