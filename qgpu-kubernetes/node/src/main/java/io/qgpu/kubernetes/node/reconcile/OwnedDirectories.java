package io.qgpu.kubernetes.node.reconcile;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.LinkedHashSet;
import java.util.Objects;
import java.util.Set;
import java.util.function.Supplier;

/**
 * Directories a node agent creates for its containers under one root of its own (HAMi-core's per-container
 * cache directories under {@code --hami-core-cache-root}), as a {@link NodeResource}: every direct
 * subdirectory of the root that no claim or allocation wants any more is removed with what is in it, so no
 * directory outlives its owner, also after a crash or a rolled-back answer.
 *
 * <p>{@link #ensure} only creates a missing directory; emptying one for a new container is the answer's own
 * step ({@code PlacementEdits.Edits#createHostDirectories()}), never the reconciler's, which must not empty a
 * directory under a running container. Nothing outside the root is ever touched: a desired path that is not
 * a direct child of the root is refused, and a symbolic link among the children is removed as a link, never
 * followed.
 *
 * <pre>{@code
 * OwnedDirectories caches = new OwnedDirectories("hami-core-cache", Path.of("/var/lib/qgpu/hami-core"),
 *         () -> Set.of(Path.of("/var/lib/qgpu/hami-core/claim-uid")));
 * }</pre>
 *
 * <p>Thread safety: stateless apart from its supplier; the reconciler calls it from one thread at a time.
 */
public final class OwnedDirectories implements NodeResource<Path> {
    private final String kind;
    private final Path root;
    private final Supplier<Set<Path>> desired;
    private final Set<java.nio.file.attribute.PosixFilePermission> mode;

    /**
     * Directories made with the process umask's mode.
     *
     * @param kind    names the resource in reports
     * @param root    the agent's own root (absolute)
     * @param desired the directories wanted now, each a direct child of {@code root}
     */
    public OwnedDirectories(String kind, Path root, Supplier<Set<Path>> desired) {
        this(kind, root, desired, Set.of());
    }

    /**
     * Directories made with this mode, set explicitly after creating them (the umask does not apply).
     *
     * @param mode the permissions of a directory {@link #ensure} creates; empty: the umask's
     */
    public OwnedDirectories(String kind, Path root, Supplier<Set<Path>> desired, Set<java.nio.file.attribute.PosixFilePermission> mode) {
        this.kind = Objects.requireNonNull(kind, "kind");
        this.root = Objects.requireNonNull(root, "root").toAbsolutePath().normalize();
        this.desired = Objects.requireNonNull(desired, "desired");
        this.mode = Set.copyOf(mode);
    }

    /** The root. */
    public Path root() {
        return root;
    }

    @Override
    public String kind() {
        return kind;
    }

    @Override
    public Set<Path> desired() {
        Set<Path> out = new LinkedHashSet<>();
        for (Path p : desired.get()) {
            out.add(checked(p));
        }
        return out;
    }

    @Override
    public Set<Path> present() throws IOException {
        Set<Path> out = new LinkedHashSet<>();
        try (DirectoryStream<Path> children = Files.newDirectoryStream(root)) {
            for (Path c : children) {
                if (Files.isDirectory(c, LinkOption.NOFOLLOW_LINKS) || Files.isSymbolicLink(c)) {
                    out.add(c.toAbsolutePath().normalize());
                }
            }
        } catch (NoSuchFileException e) {
            return Set.of();
        } catch (IOException e) {
            throw new IOException(kind + ": cannot list " + root + ": " + e.getMessage(), e);
        }
        return out;
    }

    @Override
    public void ensure(Path dir) throws IOException {
        Path d = checked(dir);
        if (!Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS)) {
            try {
                Files.createDirectories(d);
                if (!mode.isEmpty()) {
                    Files.setPosixFilePermissions(d, mode);
                }
            } catch (IOException e) {
                throw new IOException(kind + ": cannot create " + d + ": " + e.getMessage(), e);
            }
        }
    }

    @Override
    public void remove(Path dir) throws IOException {
        Path d = checked(dir);
        try {
            deleteTree(d);
        } catch (IOException e) {
            throw new IOException(kind + ": cannot remove " + d + ": " + e.getMessage(), e);
        }
    }

    /**
     * Deletes a file, a link or a directory tree without following links; nothing when it is gone. The one way
     * the node agents remove a directory they made.
     *
     * @throws IOException when a part of it cannot be deleted (what could be is gone)
     */
    public static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        if (!Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
            Files.deleteIfExists(p);
            return;
        }
        Files.walkFileTree(p, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.deleteIfExists(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException exc) throws IOException {
                if (exc != null) {
                    throw exc;
                }
                Files.deleteIfExists(d);
                return FileVisitResult.CONTINUE;
            }
        });
    }

    private Path checked(Path p) {
        Path n = Objects.requireNonNull(p, "directory").toAbsolutePath().normalize();
        if (!root.equals(n.getParent())) {
            throw new IllegalArgumentException(kind + ": " + p + " is not a directory directly under " + root);
        }
        return n;
    }

    @Override
    public String toString() {
        return kind + " under " + root;
    }
}
