package io.qgpu.kubernetes.node;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Whole-file writes that a crash cannot tear: the bytes go to a temporary file in the same directory,
 * are forced to disk, and the temporary file is renamed over the target in one atomic rename, so a
 * reader (or the next start after {@code kill -9}) sees the old content or the new, never a mix.
 * The node agents write their state files and CDI specs this way.
 *
 * <pre>{@code
 * AtomicFiles.write(Path.of("/var/lib/qgpu/state.json"), json);
 * }</pre>
 *
 * <p>Thread safety: stateless; two concurrent writes of one file leave one of the two contents whole.
 */
public final class AtomicFiles {
    /** Suffix of the temporary files; a crash between creating and renaming one may leave it behind. */
    public static final String TEMP_SUFFIX = ".tmp";

    private AtomicFiles() {
    }

    /**
     * Replaces the file's content atomically, creating its directory when missing.
     *
     * @throws IOException naming the directory when its file system cannot rename atomically
     */
    public static void write(Path file, byte[] content) throws IOException {
        Path target = file.toAbsolutePath();
        Path dir = target.getParent();
        Files.createDirectories(dir);
        // a leading dot keeps the temporary file out of globs such as *.json (the CDI loaders' scan)
        Path tmp = Files.createTempFile(dir, "." + target.getFileName(), TEMP_SUFFIX);
        try {
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                ByteBuffer b = ByteBuffer.wrap(content);
                while (b.hasRemaining()) {
                    ch.write(b);
                }
                ch.force(true);
            }
            try {
                Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                throw new IOException("the file system of " + dir + " cannot rename atomically", e);
            }
        } finally {
            Files.deleteIfExists(tmp);
        }
    }
}
