package io.qgpu.kubernetes.node.sharing;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Slice;
import io.qgpu.kubernetes.node.ContainerEdits;
import io.qgpu.kubernetes.node.mps.MpsLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What a container on an MPS-shared GPU needs, as a pure function of its {@link Placement}:
 * <ul>
 *   <li>{@value #ENV_PIPE_DIRECTORY}: the container path where the GPU's pipe directory
 *       ({@link MpsLayout#pipeDir}) is mounted, read-write (clients create sockets there);</li>
 *   <li>{@value #ENV_PINNED_MEMORY}: {@code <index>=<n>M} per visible device, comma-separated, {@code n} the
 *       slice's memory in MiB rounded down (never above the reservation);</li>
 *   <li>{@value #ENV_ACTIVE_THREADS}: the claim's compute limit in percent;</li>
 *   <li>{@value #ENV_CLIENT_PRIORITY}: {@value #PRIORITY_ONLINE} (normal, the highest MPS offers) for online
 *       work, {@value #PRIORITY_OFFLINE} (below normal) for offline work; a driver whose MPS does not know
 *       the variable ignores it and runs every client at the same priority;</li>
 *   <li>the node's MPS shared-memory directory ({@code --mps-shm-dir}, by default
 *       {@link MpsLayout#defaultShmDir()}) mounted read-write at {@code /dev/shm}: the MPS server and its clients
 *       exchange shared memory there, and the MPS control daemon DaemonSet mounts the same directory at the
 *       daemons' {@code /dev/shm}.</li>
 * </ul>
 * An exclusive claim bypasses MPS (it has its GPUs to itself): it gets {@link SharingEdits#none()}, as does a
 * host-only claim. A shared claim on more than one GPU is refused: each GPU has its own control daemon and
 * a client connects to one pipe directory.
 *
 * <pre>{@code
 * MpsSharing mps = MpsSharing.of(new MpsLayout(Path.of("/run/qgpu/mps")));   // /dev/shm from /run/qgpu/mps/shm
 * SharingEdits e = mps.edits(placement);   // 8 GiB, limit 70%, online:
 * e.env();  // {QGPU_SHARING=mps, CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps,
 *           //  CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=8192M, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=70, CUDA_MPS_CLIENT_PRIORITY=0}
 * }</pre>
 *
 * @param layout           where the node's MPS daemons keep their pipe directories
 * @param containerPipeDir the container path the GPU's pipe directory is mounted at
 * @param hostShmDir       the node directory the MPS daemons and the clients use as {@code /dev/shm} (empty: none is
 *                         mounted, for a daemon that shares the clients' {@code /dev/shm} some other way)
 *
 * <p>Thread safety: immutable.
 */
public record MpsSharing(MpsLayout layout, String containerPipeDir, Optional<Path> hostShmDir) {
    /** Client variable: the directory of the control daemon's pipes. */
    public static final String ENV_PIPE_DIRECTORY = "CUDA_MPS_PIPE_DIRECTORY";
    /** Client variable: pinned device-memory limit per device, {@code <index>=<size>[,...]}. */
    public static final String ENV_PINNED_MEMORY = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT";
    /** Client variable: the share of the GPU's threads the client may use, in percent. */
    public static final String ENV_ACTIVE_THREADS = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE";
    /** Client variable: the client's priority; 0 normal, 1 below normal. */
    public static final String ENV_CLIENT_PRIORITY = "CUDA_MPS_CLIENT_PRIORITY";
    /** {@value #ENV_CLIENT_PRIORITY} of online work: normal, the highest MPS offers. */
    public static final String PRIORITY_ONLINE = "0";
    /** {@value #ENV_CLIENT_PRIORITY} of offline work: below normal. */
    public static final String PRIORITY_OFFLINE = "1";
    /** The default container path of the pipe directory (MPS's own default pipe directory). */
    public static final String CONTAINER_PIPE_DIR = "/tmp/nvidia-mps";
    /** Where the shared-memory directory is mounted in the container. */
    public static final String CONTAINER_SHM_DIR = "/dev/shm";

    public MpsSharing {
        Objects.requireNonNull(layout, "layout");
        Objects.requireNonNull(containerPipeDir, "containerPipeDir");
        Objects.requireNonNull(hostShmDir, "hostShmDir");
        if (!containerPipeDir.startsWith("/")) {
            throw new InvalidValueException("--mps-container-pipe-dir", containerPipeDir, "must be an absolute path");
        }
        if (hostShmDir.isPresent() && !hostShmDir.get().isAbsolute()) {
            throw new InvalidValueException("--mps-shm-dir", hostShmDir.get().toString(), "must be an absolute path");
        }
    }

    /** The defaults: pipe directory at {@value #CONTAINER_PIPE_DIR}, {@link MpsLayout#defaultShmDir()} at {@code /dev/shm}. */
    public static MpsSharing of(MpsLayout layout) {
        return new MpsSharing(layout, CONTAINER_PIPE_DIR, Optional.of(layout.defaultShmDir()));
    }

    /**
     * The container's edits.
     *
     * @throws InvalidValueException for a shared claim on more than one GPU, or a slice below 1 MiB
     */
    public SharingEdits edits(Placement p) {
        if (p.claim().hostOnly() || p.claim().exclusive()) {
            return SharingEdits.none();
        }
        String f = "placement[" + p.tenantId() + "]";
        if (p.slices().size() > 1) {
            throw new InvalidValueException(f + ".slices.size", p.slices().size(),
                    "a shared claim on more than one GPU cannot use MPS: each GPU has its own control daemon and a "
                            + "client connects to one (ask for exclusive GPUs, or run the node with --sharing hami-core)");
        }
        Slice s = p.slices().get(0);
        Map<String, String> env = new LinkedHashMap<>();
        env.put(SharingEdits.ENV_SHARING, SharingBackend.MPS.wireName());
        env.put(ENV_PIPE_DIRECTORY, containerPipeDir);
        env.put(ENV_PINNED_MEMORY, pinnedMemoryLimit(f, p.slices()));
        env.put(ENV_ACTIVE_THREADS, Integer.toString(p.claim().computeLimit()));
        env.put(ENV_CLIENT_PRIORITY, p.claim().priority() == PriorityClass.ONLINE ? PRIORITY_ONLINE : PRIORITY_OFFLINE);
        List<ContainerEdits.Mount> mounts = new ArrayList<>();
        mounts.add(ContainerEdits.Mount.bind(layout.pipeDir(s.gpuUuid()).toString(), containerPipeDir, false));
        hostShmDir.ifPresent(d -> mounts.add(ContainerEdits.Mount.bind(d.toString(), CONTAINER_SHM_DIR, false)));
        return SharingEdits.of(env, mounts, List.of());
    }

    /**
     * {@value #ENV_PINNED_MEMORY}'s value: {@code 0=<n>M,1=<n>M,...}, one entry per slice in order, each the
     * slice's memory in MiB rounded down. (A shared claim reserves the same memory on each of its GPUs, so the
     * order CUDA enumerates the visible devices in does not change the limits.)
     *
     * @throws InvalidValueException when a slice is below 1 MiB
     */
    static String pinnedMemoryLimit(String field, List<Slice> slices) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < slices.size(); i++) {
            Slice s = slices.get(i);
            long mib = Mib.floor(field + ".slices[" + s.gpuUuid() + "].memoryBytes", s.memoryBytes());
            b.append(i == 0 ? "" : ",").append(i).append('=').append(mib).append('M');
        }
        return b.toString();
    }
}
