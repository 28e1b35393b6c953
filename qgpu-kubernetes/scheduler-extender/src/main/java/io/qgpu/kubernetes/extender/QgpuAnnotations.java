package io.qgpu.kubernetes.extender;

import java.util.List;
import java.util.Set;

/**
 * The extended resources, annotations and labels this extender reads and writes. The README of the
 * module documents each with an example; this class is the single source of their names.
 *
 * <h2>Pod: what it asks for (read by filter, prioritize and bind)</h2>
 * <ul>
 *   <li>resource {@value #GPU}: number of GPUs (default 1 when {@value #GPU_MEMORY} is set);</li>
 *   <li>resource {@value #GPU_MEMORY}: GiB of device memory on each GPU; without it the pod gets
 *       whole GPUs, exclusively;</li>
 *   <li>resource {@value #GPU_CORE}: guaranteed compute per GPU in percent (default 0);</li>
 *   <li>annotation {@value #GPU_CORE_LIMIT}: maximum compute per GPU in percent (default 100);</li>
 *   <li>annotation {@value #PRIORITY}: {@code online} or {@code offline} (default offline);</li>
 *   <li>annotations {@value #AFFINITY}, {@value #ANTI_AFFINITY}, {@value #EXCLUSION}: Gemini's
 *       locality labels;</li>
 *   <li>annotations {@value #GPU_MODEL}, {@value #GPU_MODEL_EXCLUDE}, {@value #GPU_UUID},
 *       {@value #GPU_UUID_EXCLUDE}: comma-separated GPU selectors;</li>
 *   <li>annotations {@value #NODE_POLICY}, {@value #GPU_POLICY}: {@code binpack} or {@code spread}.</li>
 * </ul>
 *
 * <h2>Pod: the decision (written by bind)</h2>
 * {@value #PLACEMENT} (the placement as {@code QgpuJson.writePlacement} writes it, the source of truth
 * read back on start-up), {@value #VISIBLE_DEVICES} (comma-separated GPU UUIDs), {@value #NODE}
 * and {@value #ENV} (the container environment as a JSON object).
 *
 * <h2>Node</h2>
 * {@value #INVENTORY}: the node's GPUs as {@code QgpuJson.writeNode} writes them.
 *
 * <p>Thread safety: constants only.
 */
public final class QgpuAnnotations {

    /** Prefix of every name below. */
    public static final String PREFIX = "qgpu.io/";

    public static final String GPU = "qgpu.io/gpu";
    public static final String GPU_MEMORY = "qgpu.io/gpu-memory";
    public static final String GPU_CORE = "qgpu.io/gpu-core";

    public static final String GPU_CORE_LIMIT = "qgpu.io/gpu-core-limit";
    public static final String PRIORITY = "qgpu.io/priority";
    public static final String AFFINITY = "qgpu.io/affinity";
    public static final String ANTI_AFFINITY = "qgpu.io/anti-affinity";
    public static final String EXCLUSION = "qgpu.io/exclusion";
    public static final String GPU_MODEL = "qgpu.io/gpu-model";
    public static final String GPU_MODEL_EXCLUDE = "qgpu.io/gpu-model-exclude";
    public static final String GPU_UUID = "qgpu.io/gpu-uuid";
    public static final String GPU_UUID_EXCLUDE = "qgpu.io/gpu-uuid-exclude";
    public static final String NODE_POLICY = "qgpu.io/node-policy";
    public static final String GPU_POLICY = "qgpu.io/gpu-policy";

    public static final String PLACEMENT = "qgpu.io/placement";
    public static final String VISIBLE_DEVICES = "qgpu.io/visible-devices";
    public static final String NODE = "qgpu.io/node";
    public static final String ENV = "qgpu.io/env";

    public static final String INVENTORY = "qgpu.io/inventory";

    /** The extended resources a pod may request. */
    public static final List<String> RESOURCES = List.of(GPU, GPU_MEMORY, GPU_CORE);

    /** The pod annotations the extender reads. */
    public static final List<String> POD_INPUTS = List.of(GPU_CORE_LIMIT, PRIORITY, AFFINITY, ANTI_AFFINITY, EXCLUSION,
            GPU_MODEL, GPU_MODEL_EXCLUDE, GPU_UUID, GPU_UUID_EXCLUDE, NODE_POLICY, GPU_POLICY);

    /** The pod annotations the extender writes at bind. */
    public static final List<String> POD_OUTPUTS = List.of(PLACEMENT, VISIBLE_DEVICES, NODE, ENV);

    static final Set<String> KNOWN_POD_KEYS;

    static {
        java.util.HashSet<String> s = new java.util.HashSet<>(POD_INPUTS);
        s.addAll(POD_OUTPUTS);
        KNOWN_POD_KEYS = Set.copyOf(s);
    }

    private QgpuAnnotations() {
    }
}
