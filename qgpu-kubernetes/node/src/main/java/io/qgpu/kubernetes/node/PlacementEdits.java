package io.qgpu.kubernetes.node;

import io.qgpu.api.Placement;
import io.qgpu.kubernetes.node.ContainerEdits.DeviceNode;
import io.qgpu.kubernetes.node.sharing.NodeSharing;
import io.qgpu.kubernetes.node.sharing.SharingBackend;
import io.qgpu.kubernetes.node.sharing.SharingEdits;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The one mapping from a qgpu {@link Placement} to what its container gets; the device plugin's
 * {@code Allocate} and the DRA driver's CDI specs both use it.
 *
 * <ul>
 * <li>environment: {@link Placement#environment()} ({@code NVIDIA_VISIBLE_DEVICES} with the physical
 *     UUIDs, {@code QGPU_MEMORY_LIMIT_BYTES}, {@code QGPU_COMPUTE_REQUEST}, {@code QGPU_COMPUTE_LIMIT},
 *     {@code QGPU_PRIORITY}, {@code QGPU_TENANT}), in its order;</li>
 * <li>device nodes: {@link #CONTROL_DEVICES} (read-write) for the placement as a whole, and
 *     {@code /dev/nvidiaN} (read-write) for each GPU, {@code N} its minor number;</li>
 * <li>annotations: {@value #ANNOTATION_GPUS} (the UUIDs, comma-separated) and {@value #ANNOTATION_TENANT};</li>
 * <li>on a node with a sharing back end ({@link NodeSharing}, {@code --sharing mps|hami-core}): the back end's
 *     environment entries (starting with {@code QGPU_SHARING}) after the placement's, its bind mounts, and the
 *     annotation {@value #ANNOTATION_SHARING} with the engine that enforces the slice ({@code mps},
 *     {@code hami-core}, or {@code none} for an exclusive or host-only claim); the host paths the agent creates
 *     before the container starts (directories, and files such as HAMi-core's {@code ld.so.preload}) are in
 *     {@link Edits#hostPaths()}. A node without a back end
 *     ({@link NodeSharing#none()}, the default) adds nothing: its edits are exactly the placement's.</li>
 * </ul>
 *
 * <p>It is split into what belongs to the placement as a whole ({@link Edits#common()}, the back end's edits
 * included) and what to each GPU ({@link Edits#perGpu()}), because a CDI spec carries the first once and the
 * second per device; {@link Edits#all()} joins them. This is the only place where container edits are decided.
 *
 * <pre>{@code
 * PlacementEdits mapping = new PlacementEdits(Map.of("GPU-a0", 0));
 * ContainerEdits e = mapping.edits(placement).all();
 * e.env().get("NVIDIA_VISIBLE_DEVICES");   // "GPU-a0"
 *
 * PlacementEdits mps = new PlacementEdits(Map.of("GPU-a0", 0), NodeSharing.open(SharingBackend.MPS, MpsSharing.of(layout), null));
 * mps.edits(placement, "pod-uid_main").all().env().get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");   // "70"
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public final class PlacementEdits {
    /** Device nodes every GPU container needs, besides one {@code /dev/nvidiaN} per GPU. */
    public static final List<String> CONTROL_DEVICES = List.of("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools");
    /** Container annotation (to the runtime): the physical GPU UUIDs, comma-separated. */
    public static final String ANNOTATION_GPUS = "qgpu.io/gpus";
    /** Container annotation (to the runtime): the qgpu tenant id. */
    public static final String ANNOTATION_TENANT = "qgpu.io/tenant";
    /**
     * Container annotation (to the runtime), on a node with a sharing back end only: the engine that enforces
     * the slice, the value of {@value SharingEdits#ENV_SHARING}.
     */
    public static final String ANNOTATION_SHARING = "qgpu.io/sharing";

    private final Map<String, Integer> minorOf;
    private final NodeSharing sharing;

    /** A node without a sharing back end. @param minorOf GPU UUID to the minor number {@code N} of its {@code /dev/nvidiaN} */
    public PlacementEdits(Map<String, Integer> minorOf) {
        this(minorOf, NodeSharing.none());
    }

    /**
     * @param minorOf GPU UUID to the minor number {@code N} of its {@code /dev/nvidiaN}
     * @param sharing the node's sharing back end
     */
    public PlacementEdits(Map<String, Integer> minorOf, NodeSharing sharing) {
        this.minorOf = Map.copyOf(Objects.requireNonNull(minorOf, "minorOf"));
        this.sharing = Objects.requireNonNull(sharing, "sharing");
    }

    /** The node's sharing back end. */
    public NodeSharing sharing() {
        return sharing;
    }

    /**
     * The edits of a placement on a node without a sharing back end, or whose back end needs no container key
     * (MPS).
     *
     * @throws IllegalStateException naming the GPU when one of the placement's GPUs has no known device node
     * @throws io.qgpu.api.InvalidValueException on a HAMi-core node (it needs {@link #edits(Placement, String)})
     */
    public Edits edits(Placement p) {
        return edits(p, null);
    }

    /**
     * The edits of a placement.
     *
     * @param containerKey names the container on the node, unique while it runs (a plain file name, for
     *                     HAMi-core's per-container cache directory); ignored without a back end and by MPS
     * @throws IllegalStateException naming the GPU when one of the placement's GPUs has no known device node
     * @throws io.qgpu.api.InvalidValueException when the back end refuses the placement (a slice below 1 MiB; a
     *                     shared claim on several GPUs under MPS; a key that is not a plain file name)
     */
    public Edits edits(Placement p, String containerKey) {
        Objects.requireNonNull(p, "placement");
        List<DeviceNode> control = new ArrayList<>();
        for (String path : CONTROL_DEVICES) {
            control.add(DeviceNode.rw(path));
        }
        Map<String, String> annotations = new LinkedHashMap<>();
        annotations.put(ANNOTATION_GPUS, String.join(",", p.gpuUuids()));
        annotations.put(ANNOTATION_TENANT, p.tenantId());
        ContainerEdits common = new ContainerEdits(p.environment(), control, List.of(), annotations);
        List<SharingEdits.HostPath> hostPaths = List.of();
        if (sharing.backend() != SharingBackend.NONE) {
            SharingEdits s = sharing.edits(p, containerKey);
            common = common.plus(s.edits()).plus(new ContainerEdits(Map.of(), List.of(), List.of(),
                    Map.of(ANNOTATION_SHARING, s.env().get(SharingEdits.ENV_SHARING))));
            hostPaths = s.hostPaths();
        }
        Map<String, ContainerEdits> perGpu = new LinkedHashMap<>();
        for (String gpu : p.gpuUuids()) {
            Integer minor = minorOf.get(gpu);
            if (minor == null) {
                throw new IllegalStateException("no device node known for GPU " + gpu);
            }
            perGpu.put(gpu, new ContainerEdits(Map.of(), List.of(DeviceNode.rw("/dev/nvidia" + minor)), List.of(), Map.of()));
        }
        return new Edits(common, perGpu, hostPaths);
    }

    /**
     * A placement's edits.
     *
     * @param common          what the placement's container gets once
     * @param perGpu          what it gets for each GPU, in the placement's GPU order
     * @param hostPaths directories and files the node agent creates before the container starts, in order
     *                  ({@link #createHostPaths()}); empty without a sharing back end
     */
    public record Edits(ContainerEdits common, Map<String, ContainerEdits> perGpu, List<SharingEdits.HostPath> hostPaths) {
        public Edits {
            Objects.requireNonNull(common, "edits.common");
            perGpu = Collections.unmodifiableMap(new LinkedHashMap<>(Objects.requireNonNull(perGpu, "edits.perGpu")));
            hostPaths = List.copyOf(Objects.requireNonNull(hostPaths, "edits.hostPaths"));
        }

        /** Edits without host directories. */
        public Edits(ContainerEdits common, Map<String, ContainerEdits> perGpu) {
            this(common, perGpu, List.of());
        }

        /** The {@link SharingEdits.HostDirectory directories} among {@link #hostPaths()}, in order. */
        public List<SharingEdits.HostDirectory> hostDirectories() {
            return SharingEdits.directoriesOf(hostPaths);
        }

        /**
         * Creates {@link #hostPaths()} in order (a fresh directory emptied, a file written unless it holds its
         * content already).
         *
         * @throws UncheckedIOException naming the path when one cannot be prepared
         */
        public void createHostPaths() {
            for (SharingEdits.HostPath d : hostPaths) {
                try {
                    d.create();
                } catch (IOException e) {
                    throw new UncheckedIOException(e.getMessage(), e);
                }
            }
        }

        /** {@link #common()} followed by each GPU's edits. */
        public ContainerEdits all() {
            ContainerEdits e = common;
            for (ContainerEdits g : perGpu.values()) {
                e = e.plus(g);
            }
            return e;
        }
    }
}
