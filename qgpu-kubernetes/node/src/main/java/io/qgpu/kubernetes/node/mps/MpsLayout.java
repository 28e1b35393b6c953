package io.qgpu.kubernetes.node.mps;

import io.qgpu.api.InvalidValueException;
import java.nio.file.Path;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Where the MPS control daemon of each shared GPU keeps its files on the node: under a configurable root,
 * one directory per GPU UUID with {@code pipe/} (the daemon's and the server's named pipes and sockets,
 * {@code CUDA_MPS_PIPE_DIRECTORY}, also mounted into the GPU's client containers) and {@code log/}
 * ({@code CUDA_MPS_LOG_DIRECTORY}). The one place both {@link MpsSupervisor} and the client edits take the
 * paths from.
 *
 * <pre>{@code
 * MpsLayout l = new MpsLayout(Path.of("/run/qgpu/mps"));
 * l.pipeDir("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6");   // /run/qgpu/mps/GPU-8932f937-.../pipe
 * }</pre>
 *
 * @param root absolute directory on the node
 *
 * <p>Thread safety: immutable.
 */
public record MpsLayout(Path root) {
    /** The default root. */
    public static final Path DEFAULT_ROOT = Path.of("/run/qgpu/mps");

    private static final Pattern GPU = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");

    public MpsLayout {
        Objects.requireNonNull(root, "root");
        if (!root.isAbsolute()) {
            throw new InvalidValueException("--mps-root", root.toString(), "must be an absolute path");
        }
        root = root.normalize();
    }

    /** The name of the default shared-memory directory under the root ({@link #defaultShmDir()}). */
    public static final String SHM = "shm";

    /**
     * The default MPS shared-memory directory on the node, {@code <root>/shm}: the daemons' {@code /dev/shm} (the
     * MPS DaemonSet mounts it there) and every client's (the client edits mount it there). Under the default root
     * it lies on {@code /run}, a tmpfs on systemd hosts.
     */
    public Path defaultShmDir() {
        return root.resolve(SHM);
    }

    /** The GPU's directory. */
    public Path gpuDir(String gpuUuid) {
        return root.resolve(segment(gpuUuid));
    }

    /** The GPU's pipe directory ({@code CUDA_MPS_PIPE_DIRECTORY} of its daemon and clients). */
    public Path pipeDir(String gpuUuid) {
        return gpuDir(gpuUuid).resolve("pipe");
    }

    /** The GPU's log directory ({@code CUDA_MPS_LOG_DIRECTORY} of its daemon). */
    public Path logDir(String gpuUuid) {
        return gpuDir(gpuUuid).resolve("log");
    }

    private static String segment(String gpuUuid) {
        if (gpuUuid == null || !GPU.matcher(gpuUuid).matches()) {
            throw new InvalidValueException("gpuUuid", gpuUuid,
                    "must be a GPU UUID of A-Z a-z 0-9 . _ - (MPS sharing of MIG devices is not supported)");
        }
        return gpuUuid;
    }
}
