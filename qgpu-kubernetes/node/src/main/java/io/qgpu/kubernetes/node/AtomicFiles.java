package io.qgpu.kubernetes.node;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.util.Objects;
import java.util.Set;

/**
 * Whole-file writes that a crash cannot tear and that are durable once {@link #write} returns: the bytes go to
 * a temporary file in the same directory, which is forced to disk ({@code fsync}); the temporary file is
 * renamed over the target in one atomic rename; then the directory itself is forced, so that the rename (the
 * new directory entry) survives a power loss too. A reader, or the next start after {@code kill -9} or a
 * crash of the machine, sees the old content or the new, never a mix, and after {@code write} returns, the new.
 * The node agents write their state files and CDI specs this way.
 *
 * <p>What it does not promise: on a file system that cannot open a directory for reading (not Linux's), the
 * directory cannot be forced and {@link #write} fails naming the directory rather than return without the
 * guarantee.
 *
 * <pre>{@code
 * AtomicFiles.write(Path.of("/var/lib/qgpu/state.json"), json);
 * }</pre>
 *
 * <p>Thread safety: stateless; two concurrent writes of one file leave one of the two contents whole.
 */
public final class AtomicFiles {
    /**
     * Suffix of the temporary files; a crash between creating and renaming one may leave it behind
     * ({@link #removeLeftovers} removes them at the next start).
     */
    public static final String TEMP_SUFFIX = ".tmp";

    /** How a file or directory is forced to disk; tests record the calls. */
    @FunctionalInterface
    interface Sync {
        /** Forces what the channel (of {@code path}) holds to the storage device. */
        void force(Path path, FileChannel channel) throws IOException;

        Sync FSYNC = (path, channel) -> channel.force(true);
    }

    private AtomicFiles() {
    }

    /**
     * Replaces the file's content atomically and durably, creating its directory when missing.
     *
     * @throws IOException naming the directory when its file system cannot rename atomically or the directory
     *                     cannot be forced
     */
    public static void write(Path file, byte[] content) throws IOException {
        write(file, content, Sync.FSYNC);
    }

    /**
     * {@link #write(Path, byte[])} with the file's permissions set before the rename, so that no reader ever sees the
     * new file with the temporary file's own mode ({@code rw-------}).
     *
     * @param mode the permissions the file has from the moment it appears under its name
     * @throws IOException as {@link #write(Path, byte[])}, or when the permissions cannot be set
     */
    public static void write(Path file, byte[] content, Set<PosixFilePermission> mode) throws IOException {
        write(file, content, Sync.FSYNC, Objects.requireNonNull(mode, "mode"));
    }

    static void write(Path file, byte[] content, Sync sync) throws IOException {
        write(file, content, sync, null);
    }

    static void write(Path file, byte[] content, Sync sync, Set<PosixFilePermission> mode) throws IOException {
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
                sync.force(tmp, ch);
            }
            if (mode != null) {
                Files.setPosixFilePermissions(tmp, mode);
            }
            try {
                Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                throw new IOException("the file system of " + dir + " cannot rename atomically", e);
            }
        } finally {
            Files.deleteIfExists(tmp);
        }
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            sync.force(dir, d);
        } catch (IOException e) {
            throw new IOException("directory " + dir + " cannot be forced to disk after writing " + target.getFileName()
                    + ": " + e.getMessage(), e);
        }
    }

    /**
     * Removes the temporary files that writes of files whose names start with {@code namePrefix}, in {@code dir},
     * left behind when they did not finish (a {@code kill -9} or a crash between creating a temporary file and
     * renaming it): the files named {@code .<namePrefix>...}{@value #TEMP_SUFFIX}. Other files, and the
     * temporary files of other names, are left alone. Call it where no such write can be under way, at a start
     * before the first write: it would remove an unfinished write's file, and that write would then fail.
     *
     * @return the files removed; empty when {@code dir} does not exist
     * @throws IOException naming the directory when it cannot be listed or a file in it cannot be removed
     */
    public static java.util.List<Path> removeLeftovers(Path dir, String namePrefix) throws IOException {
        Objects.requireNonNull(dir, "dir");
        String start = "." + Objects.requireNonNull(namePrefix, "namePrefix");
        java.util.List<Path> removed = new java.util.ArrayList<>();
        try (java.nio.file.DirectoryStream<Path> files = Files.newDirectoryStream(dir,
                f -> f.getFileName().toString().startsWith(start) && f.getFileName().toString().endsWith(TEMP_SUFFIX))) {
            for (Path f : files) {
                if (Files.isRegularFile(f, java.nio.file.LinkOption.NOFOLLOW_LINKS) && Files.deleteIfExists(f)) {
                    removed.add(f);
                }
            }
        } catch (java.nio.file.NoSuchFileException e) {
            return java.util.List.of();
        } catch (IOException e) {
            throw new IOException("cannot remove the unfinished writes' temporary files in " + dir + ": " + e.getMessage(), e);
        }
        return removed;
    }
}
