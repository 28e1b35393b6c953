package io.qgpu.nvml;

/**
 * Device utilization over the driver's last sample period ({@code nvmlDeviceGetUtilizationRates}).
 *
 * <pre>{@code
 * int busy = gpu.utilization().gpuPercent();
 * }</pre>
 *
 * @param gpuPercent    share of the period in which one or more kernels ran, 0..100
 * @param memoryPercent share of the period in which device memory was read or written, 0..100
 *
 * <p>Thread safety: immutable.
 */
public record NvmlUtilization(int gpuPercent, int memoryPercent) {
}
