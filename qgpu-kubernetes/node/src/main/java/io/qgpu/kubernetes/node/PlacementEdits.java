package io.qgpu.kubernetes.node;

import io.qgpu.api.Placement;
import io.qgpu.kubernetes.node.ContainerEdits.DeviceNode;
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
 * <li>annotations: {@value #ANNOTATION_GPUS} (the UUIDs, comma-separated) and {@value #ANNOTATION_TENANT}.</li>
 * </ul>
 *
 * <p>It is split into what belongs to the placement as a whole ({@link Edits#common()}) and what to each GPU
 * ({@link Edits#perGpu()}), because a CDI spec carries the first once and the second per device;
 * {@link Edits#all()} joins them. A node agent that enforces the limits through a sharing engine adds that
 * engine's edits to these (the back end is a further input of this mapping, by design the only place
 * where container edits are decided).
 *
 * <pre>{@code
 * PlacementEdits mapping = new PlacementEdits(Map.of("GPU-a0", 0));
 * ContainerEdits e = mapping.edits(placement).all();
 * e.env().get("NVIDIA_VISIBLE_DEVICES");   // "GPU-a0"
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

    private final Map<String, Integer> minorOf;

    /** @param minorOf GPU UUID to the minor number {@code N} of its {@code /dev/nvidiaN} */
    public PlacementEdits(Map<String, Integer> minorOf) {
        this.minorOf = Map.copyOf(Objects.requireNonNull(minorOf, "minorOf"));
    }

    /**
     * The edits of a placement.
     *
     * @throws IllegalStateException naming the GPU when one of the placement's GPUs has no known device node
     */
    public Edits edits(Placement p) {
        Objects.requireNonNull(p, "placement");
        List<DeviceNode> control = new ArrayList<>();
        for (String path : CONTROL_DEVICES) {
            control.add(DeviceNode.rw(path));
        }
        Map<String, String> annotations = new LinkedHashMap<>();
        annotations.put(ANNOTATION_GPUS, String.join(",", p.gpuUuids()));
        annotations.put(ANNOTATION_TENANT, p.tenantId());
        ContainerEdits common = new ContainerEdits(p.environment(), control, List.of(), annotations);
        Map<String, ContainerEdits> perGpu = new LinkedHashMap<>();
        for (String gpu : p.gpuUuids()) {
            Integer minor = minorOf.get(gpu);
            if (minor == null) {
                throw new IllegalStateException("no device node known for GPU " + gpu);
            }
            perGpu.put(gpu, new ContainerEdits(Map.of(), List.of(DeviceNode.rw("/dev/nvidia" + minor)), List.of(), Map.of()));
        }
        return new Edits(common, perGpu);
    }

    /**
     * A placement's edits.
     *
     * @param common what the placement's container gets once
     * @param perGpu what it gets for each GPU, in the placement's GPU order
     */
    public record Edits(ContainerEdits common, Map<String, ContainerEdits> perGpu) {
        public Edits {
            Objects.requireNonNull(common, "edits.common");
            perGpu = Collections.unmodifiableMap(new LinkedHashMap<>(Objects.requireNonNull(perGpu, "edits.perGpu")));
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
