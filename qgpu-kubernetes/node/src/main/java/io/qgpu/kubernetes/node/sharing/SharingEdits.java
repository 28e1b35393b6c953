package io.qgpu.kubernetes.node.sharing;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a sharing back end adds to a container: environment entries, bind mounts, and host directories the
 * node agent creates before the container starts. A small value that the container-edits mapping of a
 * placement merges in; {@link NodeSharing#edits} computes it.
 *
 * <pre>{@code
 * SharingEdits e = sharing.edits(placement, "pod-uid_main");
 * e.env().get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");   // "70"
 * e.mounts().get(0).readOnly();
 * }</pre>
 *
 * @param env             entries in a stable order; always holds {@value #ENV_SHARING}
 * @param mounts          bind mounts, host path to container path
 * @param hostDirectories directories on the host that must exist before the container starts
 *
 * <p>Thread safety: immutable.
 */
public record SharingEdits(Map<String, String> env, List<Mount> mounts, List<String> hostDirectories) {

    /**
     * Environment entry naming the engine that enforces this container's limits: {@code none},
     * {@code mps} or {@code hami-core} ({@link SharingBackend#wireName()}). An exclusive or host-only
     * claim says {@code none} on any node: nothing shares its GPUs.
     */
    public static final String ENV_SHARING = "QGPU_SHARING";

    /**
     * A bind mount.
     *
     * @param hostPath      absolute path on the node
     * @param containerPath absolute path in the container
     * @param readOnly      whether the container may only read it
     *
     * <p>Thread safety: immutable.
     */
    public record Mount(String hostPath, String containerPath, boolean readOnly) {
        public Mount {
            Objects.requireNonNull(hostPath, "hostPath");
            Objects.requireNonNull(containerPath, "containerPath");
            if (!hostPath.startsWith("/") || !containerPath.startsWith("/")) {
                throw new IllegalArgumentException("mount " + hostPath + " -> " + containerPath + ": both paths must be absolute");
            }
        }
    }

    public SharingEdits {
        env = Collections.unmodifiableMap(new LinkedHashMap<>(Objects.requireNonNull(env, "env")));
        mounts = List.copyOf(mounts);
        hostDirectories = List.copyOf(hostDirectories);
        if (!env.containsKey(ENV_SHARING)) {
            throw new IllegalArgumentException("env must name the back end in " + ENV_SHARING);
        }
    }

    /** The edits of a container no back end enforces: {@value #ENV_SHARING}{@code =none} only. */
    public static SharingEdits none() {
        return new SharingEdits(Map.of(ENV_SHARING, SharingBackend.NONE.wireName()), List.of(), List.of());
    }

    /** The back end these edits are for. */
    public SharingBackend backend() {
        return SharingBackend.parse(env.get(ENV_SHARING));
    }
}
