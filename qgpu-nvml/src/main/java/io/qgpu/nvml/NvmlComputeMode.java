package io.qgpu.nvml;

/**
 * A GPU's compute mode ({@code nvmlComputeMode_t}): which processes may hold a CUDA context on it. MPS wants
 * {@link #EXCLUSIVE_PROCESS}, so that the MPS server is the one process on the GPU and every other CUDA process
 * reaches it only through the server. A value this binding does not know is {@link #UNRECOGNIZED}.
 *
 * <pre>{@code
 * NvmlComputeMode before = gpu.computeMode();          // DEFAULT
 * gpu.setComputeMode(NvmlComputeMode.EXCLUSIVE_PROCESS);
 * NvmlComputeMode.of(3);                               // EXCLUSIVE_PROCESS
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public enum NvmlComputeMode {
    /** Any number of processes, each with its own contexts (NVML's {@code NVML_COMPUTEMODE_DEFAULT}, 0). */
    DEFAULT(0),
    /** One context of one thread at a time; deprecated by NVIDIA (1). */
    EXCLUSIVE_THREAD(1),
    /** No CUDA context may be created (2). */
    PROHIBITED(2),
    /** One process at a time, which may use any number of threads and contexts (3). */
    EXCLUSIVE_PROCESS(3),
    /** A value NVML returned that this binding does not know; never set. */
    UNRECOGNIZED(-1);

    private final int nvmlValue;

    NvmlComputeMode(int nvmlValue) {
        this.nvmlValue = nvmlValue;
    }

    /** The C value; -1 for {@link #UNRECOGNIZED}. */
    public int nvmlValue() {
        return nvmlValue;
    }

    /** Maps a C value; never fails: values outside 0..3 give {@link #UNRECOGNIZED}. */
    public static NvmlComputeMode of(int nvmlValue) {
        for (NvmlComputeMode m : values()) {
            if (m != UNRECOGNIZED && m.nvmlValue == nvmlValue) {
                return m;
            }
        }
        return UNRECOGNIZED;
    }
}
