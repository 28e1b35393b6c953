package io.qgpu.kubernetes.node;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AtomicFilesTest {
    @TempDir
    Path tmp;

    @Test
    void replacesTheWholeFileAndLeavesNoTemporaryFile() throws Exception {
        Path f = tmp.resolve("sub/state.json");
        AtomicFiles.write(f, "old".getBytes());
        AtomicFiles.write(f, "new content".getBytes());
        assertArrayEquals("new content".getBytes(), Files.readAllBytes(f));
        try (Stream<Path> files = Files.list(f.getParent())) {
            assertEquals(List.of(f), files.toList());
        }
    }

    @Test
    void forcesTheDataBeforeTheRenameAndTheDirectoryAfterIt() throws Exception {
        Path f = tmp.resolve("state.json");
        List<String> forced = new java.util.ArrayList<>();
        AtomicFiles.write(f, "x".getBytes(), (path, ch) -> {
            // at the data's force the target does not exist yet; at the directory's it does (the rename is done)
            forced.add((path.equals(tmp) ? "dir" : "data") + (Files.exists(f) ? " after rename" : " before rename"));
            ch.force(true);
        });
        assertEquals(List.of("data before rename", "dir after rename"), forced);
    }

    @Test
    void aModeIsTheFilesFromTheMomentItHasItsName() throws Exception {
        Path f = tmp.resolve("ld.so.preload");
        var mode = java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--");
        List<String> seen = new java.util.ArrayList<>();
        AtomicFiles.write(f, "x".getBytes(), (path, ch) -> {
            if (path.equals(tmp)) {   // forced right after the rename
                seen.add(java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(f)));
            }
        }, mode);
        assertEquals(List.of("rw-r--r--"), seen);
        AtomicFiles.write(f, "y".getBytes(), mode);
        assertEquals(mode, Files.getPosixFilePermissions(f));
    }

    @Test
    void aDirectoryThatCannotBeForcedFailsTheWriteNamingIt() {
        Path f = tmp.resolve("state.json");
        java.io.IOException e = assertThrows(java.io.IOException.class, () -> AtomicFiles.write(f, "x".getBytes(), (path, ch) -> {
            if (path.equals(tmp)) {
                throw new java.io.IOException("EIO");
            }
        }));
        assertTrue(e.getMessage().contains("directory " + tmp + " cannot be forced"), e.getMessage());
    }
}
