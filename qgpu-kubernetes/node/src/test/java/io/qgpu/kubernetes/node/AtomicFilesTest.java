package io.qgpu.kubernetes.node;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

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
}
