package io.qgpu.kubernetes.node.sharing;

import io.qgpu.kubernetes.node.ContainerEdits;
import io.qgpu.kubernetes.node.PlacementEdits;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a sharing back end adds to a container: container edits (environment entries and bind mounts, in
 * {@link ContainerEdits}' own types) and the host directories the node agent creates before the container
 * starts. {@link PlacementEdits}, the one mapping of a placement to container edits, merges it in; no node
 * agent uses it on its own.
 *
 * <pre>{@code
 * SharingEdits e = sharing.edits(placement, "pod-uid_main");
 * e.env().get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");   // "70"
 * e.mounts().get(0).readOnly();
 * }</pre>
 *
 * @param edits           environment entries in a stable order (always holding {@value #ENV_SHARING}) and bind
 *                        mounts; no device nodes, no annotations
 * @param hostDirectories directories on the node that must exist before the container starts
 *
 * <p>Thread safety: immutable.
 */
public record SharingEdits(ContainerEdits edits, List<HostDirectory> hostDirectories) {

    /**
     * Environment entry naming the engine that enforces this container's limits: {@code mps} or
     * {@code hami-core} ({@link SharingBackend#wireName()}) for a shared slice, {@code none} for an exclusive
     * or host-only claim (nothing shares its GPUs). A node without a back end adds nothing at all.
     */
    public static final String ENV_SHARING = "QGPU_SHARING";

    /**
     * A directory the node agent creates before the container starts.
     *
     * @param path  absolute path on the node
     * @param fresh whether it belongs to this container alone and must start empty (files a previous
     *              container left there are removed); a shared directory is only created when missing
     *
     * <p>Thread safety: immutable.
     */
    public record HostDirectory(String path, boolean fresh) {
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

    public SharingEdits {
        Objects.requireNonNull(edits, "edits");
        hostDirectories = List.copyOf(Objects.requireNonNull(hostDirectories, "hostDirectories"));
        if (!edits.env().containsKey(ENV_SHARING)) {
            throw new IllegalArgumentException("env must name the back end in " + ENV_SHARING);
        }
        if (!edits.deviceNodes().isEmpty() || !edits.annotations().isEmpty()) {
            throw new IllegalArgumentException("a sharing back end adds environment and mounts only");
        }
    }

    /** Environment and mounts, no host directory. */
    static SharingEdits of(Map<String, String> env, List<ContainerEdits.Mount> mounts, List<HostDirectory> hostDirectories) {
        return new SharingEdits(new ContainerEdits(env, List.of(), mounts, Map.of()), hostDirectories);
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
