package io.qgpu.nvml;

/**
 * The scope of an affinity query ({@code nvmlAffinityScope_t}): the GPU's nearest NUMA node, or its
 * whole processor socket.
 *
 * <pre>{@code
 * List<Integer> cpus = gpu.cpuAffinity(NvmlAffinityScope.NODE);
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public enum NvmlAffinityScope {
    /** {@code NVML_AFFINITY_SCOPE_NODE} (0). */
    NODE(0),
    /** {@code NVML_AFFINITY_SCOPE_SOCKET} (1). */
    SOCKET(1);

    private final int nvmlValue;

    NvmlAffinityScope(int nvmlValue) {
        this.nvmlValue = nvmlValue;
    }

    /** The C value. */
    public int nvmlValue() {
        return nvmlValue;
    }
}
