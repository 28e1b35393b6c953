/**
 * Service provider interfaces between the engines and the GPUs they run on: finding the local GPUs
 * and their links ({@link io.qgpu.api.spi.GpuDiscovery}), hearing of health changes
 * ({@link io.qgpu.api.spi.GpuHealthListener} with {@link io.qgpu.api.spi.GpuHealthEvent}), and reading
 * per-process usage as the driver measured it ({@link io.qgpu.api.spi.ProcessUsageSource} with
 * {@link io.qgpu.api.spi.ProcessUsageSample}). qgpu-nvml implements them over NVML
 * ({@code NvmlDiscovery}, {@code NvmlHealthMonitor}, {@code NvmlUsageSampler}); the testkit's fake
 * machines implement discovery; the runtime gate reads a usage source to correct its books.
 *
 * <pre>{@code
 * GpuHealthListener toLedger = e -> ledger.setHealth(e.gpuUuid(), e.health());
 * GpuHealthEvent lost = GpuHealthEvent.xid("GPU-0b5c...", 79, "Xid 79: GPU has fallen off the bus");
 * }</pre>
 *
 * <p><b>Guarantees.</b> The event and sample records are immutable and validated on construction
 * ({@link io.qgpu.api.InvalidValueException} naming the field). Implementations of the listener and
 * the usage source must be thread-safe, as their Javadoc says; listeners must return quickly.
 * Units: timestamps in microseconds of the driver's clock, utilization in percent, memory in bytes.
 *
 * <p>docs/nvml.md in the repository describes the NVML implementations.
 */
@NullMarked
package io.qgpu.api.spi;

import org.jspecify.annotations.NullMarked;
