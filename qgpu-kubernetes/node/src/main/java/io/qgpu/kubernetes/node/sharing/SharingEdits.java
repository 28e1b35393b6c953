package io.qgpu.kubernetes.node.sharing;

import io.qgpu.kubernetes.node.ContainerEdits;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a sharing back end adds to a container: container edits (environment entries and bind mounts, in
 * {@link ContainerEdits}' own types) and the host paths the node agent creates before the container starts
 * (directories, and files with a fixed content such as HAMi-core's {@code ld.so.preload}). {@code PlacementEdits},
 * the one mapping of a placement to container edits, merges it in; no node agent uses it on its own.
 *
 * <pre>{@code
 * SharingEdits e = sharing.edits(placement, "pod-uid_main");
 * e.env().get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");   // "70"
 * e.mounts().get(0).readOnly();
 * }</pre>
 *
 * @param edits           environment entries in a stable order (always holding {@value #ENV_SHARING}) and bind
 *                        mounts; no device nodes, no annotations
 * @param hostPaths       directories and files on the node that must exist before the container starts, in the
 *                        order they are created ({@link HostPath#create()})
 *
 * <p>Thread safety: immutable.
 */
public record SharingEdits(ContainerEdits edits, List<HostPath> hostPaths) {

    /**
     * Environment entry naming the engine that enforces this container's limits: {@code mps} or
     * {@code hami-core} ({@link SharingBackend#wireName()}) for a shared slice, {@code none} for an exclusive
     * or host-only claim (nothing shares its GPUs). A node without a back end adds nothing at all.
     */
    public static final String ENV_SHARING = "QGPU_SHARING";

    /**
     * A path on the node that the node agent makes hold before the container starts, and again on each pass of
     * its reconciler: {@link HostDirectory} or {@link HostFile}. Both agents create every host path of a
     * container's edits the same way ({@code PlacementEdits.Edits#createHostPaths()}, the device plugin's
     * {@code Allocate}, the DRA driver's prepare and shared-path resource); {@link #create()} is idempotent.
     */
    public sealed interface HostPath permits HostDirectory, HostFile {
        /** The absolute path on the node. */
        String path();

        /**
         * Whether it belongs to one container alone and starts empty (a fresh directory); a shared path is made
         * to hold without taking anything from the containers that already use it.
         */
        boolean fresh();

        /**
         * Makes the path hold; a no-op when it already does.
         *
         * @throws IOException naming the path when it cannot be made to hold
         */
        void create() throws IOException;
    }

    /**
     * A directory the node agent creates before the container starts.
     *
     * @param path  absolute path on the node
     * @param fresh whether it belongs to this container alone and must start empty (files a previous
     *              container left there are removed); a shared directory is only created when missing
     *
     * <p>Thread safety: immutable.
     */
    public record HostDirectory(String path, boolean fresh) implements HostPath {
        public HostDirectory {
            Objects.requireNonNull(path, "hostDirectory.path");
            if (!path.startsWith("/")) {
                throw new IllegalArgumentException("host directory " + path + ": must be absolute");
            }
        }

        /** Read, write and search for every uid: a container's processes run as any user (HAMi makes its directories so). */
        public static final java.util.Set<java.nio.file.attribute.PosixFilePermission> ANY_UID =
                java.nio.file.attribute.PosixFilePermissions.fromString("rwxrwxrwx");

        /**
         * Creates the directory (and its parents) when missing; a fresh one is emptied of the regular files a
         * previous container left in it. A fresh directory, and a shared one this call creates, is made
         * {@code rwxrwxrwx} explicitly (whatever the agent's umask), so that a container running as any uid can
         * create its files there; a shared directory that exists already keeps its mode.
         *
         * @throws IOException naming the directory when it cannot be created or emptied
         */
        @Override
        public void create() throws IOException {
            Path dir = Path.of(path);
            try {
                boolean existed = Files.isDirectory(dir);
                Files.createDirectories(dir);
                if (fresh || !existed) {
                    Files.setPosixFilePermissions(dir, ANY_UID);
                }
                if (fresh) {
                    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
                        for (Path f : files) {
                            if (Files.isRegularFile(f, java.nio.file.LinkOption.NOFOLLOW_LINKS) || Files.isSymbolicLink(f)) {
                                Files.delete(f);
                            }
                        }
                    }
                }
            } catch (IOException e) {
                throw new IOException("host directory " + path + " cannot be prepared: " + e.getMessage(), e);
            }
        }
    }

    /**
     * A file with a fixed content that the node agent writes before the container starts, shared by every container
     * that mounts it (never {@link #fresh()}), and readable by every uid: HAMi-core's {@code ld.so.preload}, which
     * the containers get mounted read-only at {@code /etc/ld.so.preload}.
     *
     * <p>{@link #create()} leaves a file that already holds exactly {@code content} alone (only its mode is set
     * again when it differs: a running container's bind mount sees the same file); otherwise it writes the file
     * whole with {@link io.qgpu.kubernetes.node.AtomicFiles} (a temporary file renamed over it, already
     * {@link #MODE}), so no container ever reads half a file or a file it may not read. A link at the path is
     * replaced, not followed. The directory is created when missing.
     *
     * @param path    absolute path on the node
     * @param content the file's whole content
     *
     * <p>Thread safety: immutable; two concurrent {@link #create()} calls leave the file whole.
     */
    public record HostFile(String path, String content) implements HostPath {
        /** Read and write for the agent, read for every other uid ({@code rw-r--r--}). */
        public static final java.util.Set<java.nio.file.attribute.PosixFilePermission> MODE =
                java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--");

        public HostFile {
            Objects.requireNonNull(path, "hostFile.path");
            Objects.requireNonNull(content, "hostFile.content");
            if (!path.startsWith("/") || Path.of(path).getFileName() == null) {
                throw new IllegalArgumentException("host file " + path + ": must be an absolute path naming a file");
            }
        }

        /** Never: the file is shared. */
        @Override
        public boolean fresh() {
            return false;
        }

        /**
         * Writes the file unless it holds {@link #content()} already, and makes it {@link #MODE}.
         *
         * @throws IOException naming the file when it cannot be written (a directory at its path, a read-only
         *                     file system)
         */
        @Override
        public void create() throws IOException {
            Path file = Path.of(path);
            byte[] bytes = content.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            try {
                if (Files.isDirectory(file, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                    throw new IOException("a directory is in its place");
                }
                if (Files.isRegularFile(file, java.nio.file.LinkOption.NOFOLLOW_LINKS)
                        && java.util.Arrays.equals(Files.readAllBytes(file), bytes)) {
                    if (!Files.getPosixFilePermissions(file, java.nio.file.LinkOption.NOFOLLOW_LINKS).equals(MODE)) {
                        Files.setPosixFilePermissions(file, MODE);
                    }
                    return;
                }
                io.qgpu.kubernetes.node.AtomicFiles.write(file, bytes, MODE);
            } catch (IOException e) {
                throw new IOException("host file " + path + " cannot be prepared: " + e.getMessage(), e);
            }
        }
    }

    public SharingEdits {
        Objects.requireNonNull(edits, "edits");
        hostPaths = List.copyOf(Objects.requireNonNull(hostPaths, "hostPaths"));
        if (!edits.env().containsKey(ENV_SHARING)) {
            throw new IllegalArgumentException("env must name the back end in " + ENV_SHARING);
        }
        if (!edits.deviceNodes().isEmpty() || !edits.annotations().isEmpty()) {
            throw new IllegalArgumentException("a sharing back end adds environment and mounts only");
        }
    }

    /** Environment, mounts and host paths. */
    static SharingEdits of(Map<String, String> env, List<ContainerEdits.Mount> mounts, List<? extends HostPath> hostPaths) {
        return new SharingEdits(new ContainerEdits(env, List.of(), mounts, Map.of()), List.copyOf(hostPaths));
    }

    /** The {@link HostDirectory host directories} among {@link #hostPaths()}, in order. */
    public List<HostDirectory> hostDirectories() {
        return directoriesOf(hostPaths);
    }

    /** The {@link HostDirectory host directories} among these host paths, in order. */
    public static List<HostDirectory> directoriesOf(List<HostPath> paths) {
        return paths.stream().filter(HostDirectory.class::isInstance).map(HostDirectory.class::cast).toList();
    }

    /** The edits of a container no back end enforces on a node with one: {@value #ENV_SHARING}{@code =none} only. */
    public static SharingEdits none() {
        return of(Map.of(ENV_SHARING, SharingBackend.NONE.wireName()), List.of(), List.of());
    }

    /** The environment entries, in order. */
    public Map<String, String> env() {
        return edits.env();
    }

    /** The bind mounts, in order. */
    public List<ContainerEdits.Mount> mounts() {
        return edits.mounts();
    }

    /** The back end these edits are for. */
    public SharingBackend backend() {
        return SharingBackend.parse(env().get(ENV_SHARING));
    }
}
