package io.qgpu.nvml;

/**
 * Device memory as {@code nvmlDeviceGetMemoryInfo_v2} reports it, in bytes.
 *
 * <pre>{@code
 * NvmlMemory m = gpu.memory();
 * long usable = m.total() - m.reserved();
 * }</pre>
 *
 * @param total    all installed memory
 * @param reserved memory the driver and firmware keep
 * @param free     memory free for allocation
 * @param used     memory allocated
 *
 * <p>Thread safety: immutable.
 */
public record NvmlMemory(long total, long reserved, long free, long used) {
}
