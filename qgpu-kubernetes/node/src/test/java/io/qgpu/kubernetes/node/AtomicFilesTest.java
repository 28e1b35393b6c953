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

    /**
     * A write cut short between creating its temporary file and renaming it leaves the file behind; the next
     * start removes those of its own names, and nothing else: not the target, not another name's temporary
     * file, not a file that only looks alike without the leading dot.
     */
    @Test
    void theTemporaryFilesOfUnfinishedWritesOfOneNameAreRemovedAndNothingElse() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("cdi"));
        Path target = dir.resolve("qgpu.io-gpu_a.json");
        AtomicFiles.write(target, "{}".getBytes(java.nio.charset.StandardCharsets.UTF_8));
        Path leftA = Files.createTempFile(dir, ".qgpu.io-gpu_a.json", AtomicFiles.TEMP_SUFFIX);
        Path leftB = Files.createTempFile(dir, ".qgpu.io-gpu_b.json", AtomicFiles.TEMP_SUFFIX);
        Path other = Files.createTempFile(dir, ".nvidia.com-gpu_x.json", AtomicFiles.TEMP_SUFFIX);
        Path noDot = Files.createFile(dir.resolve("qgpu.io-gpu_c.json1.tmp"));
        Path notTemp = Files.createFile(dir.resolve(".qgpu.io-gpu_d.json"));
        assertEquals(java.util.Set.of(leftA, leftB), java.util.Set.copyOf(AtomicFiles.removeLeftovers(dir, "qgpu.io-gpu_")));
        try (var left = Files.list(dir)) {
            assertEquals(java.util.Set.of(target, other, noDot, notTemp), java.util.Set.copyOf(left.toList()));
        }
        assertEquals(java.util.List.of(), AtomicFiles.removeLeftovers(dir, "qgpu.io-gpu_"), "nothing left to remove");
        assertEquals(java.util.List.of(), AtomicFiles.removeLeftovers(dir.resolve("missing"), "x"), "a missing directory has none");
        // CdiSpecs removes its own kind's
        Path again = Files.createTempFile(dir, ".qgpu.io-gpu_e.json", AtomicFiles.TEMP_SUFFIX);
        assertEquals(java.util.List.of(again), new CdiSpecs(dir).removeLeftovers());
        assertTrue(Files.exists(other));
    }
}
