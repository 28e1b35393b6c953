package io.qgpu.nvml;

/**
 * A compute process running on a GPU ({@code nvmlProcessInfo_t}).
 *
 * <pre>{@code
 * for (NvmlProcess p : gpu.runningComputeProcesses()) {
 *     if (p.usedMemoryKnown()) { ... p.usedMemoryBytes() ... }
 * }
 * }</pre>
 *
 * @param pid               the process id
 * @param usedMemoryBytes   device memory it holds, or -1 when the driver cannot tell (for example in
 *                          a container without the right PID namespace)
 * @param gpuInstanceId     its MIG GPU instance, or {@code 0xFFFFFFFFL} when MIG is off
 * @param computeInstanceId its MIG compute instance, or {@code 0xFFFFFFFFL} when MIG is off
 *
 * <p>Thread safety: immutable.
 */
public record NvmlProcess(long pid, long usedMemoryBytes, long gpuInstanceId, long computeInstanceId) {

    /** Whether {@link #usedMemoryBytes()} is known. */
    public boolean usedMemoryKnown() {
        return usedMemoryBytes >= 0;
    }
}
