/**
 * GPU usage through NVML, mapped to tenants: device utilization, each process's memory and SM
 * utilization, and per-tenant sums. {@link io.qgpu.nvml.usage.NvmlUsageSampler} samples a GPU into a
 * {@link io.qgpu.nvml.usage.GpuUsage} of {@link io.qgpu.nvml.usage.ProcessUsage}s, with a
 * {@link io.qgpu.nvml.usage.TenantResolver} that says which tenant a process belongs to; it is also the
 * {@link io.qgpu.api.spi.ProcessUsageSource} the runtime gate corrects its books with. For monitoring
 * (the CLI reads it) and for the gate.
 *
 * <pre>{@code
 * NvmlUsageSampler sampler = NvmlUsageSampler.builder(nvml)
 *         .tenants(TenantResolver.of(Map.of(4242L, "job-a")))
 *         .build();
 * GpuUsage u = sampler.sample(gpuUuid);       // the period since the previous call for this GPU
 * u.tenants().get("job-a").usedMemoryBytes();
 * }</pre>
 *
 * <p><b>Guarantees.</b> Each period of a GPU is reported once: {@code sample} calls for one GPU are
 * serialized, different GPUs are sampled in parallel, and the sampler is thread-safe. Where NVML gives no
 * utilization (MIG) the device figure is -1 and {@code smSampled()} says the per-process figures are
 * missing; process samples above 100% are skipped. An unknown GPU throws
 * {@link io.qgpu.api.InvalidValueException}, other NVML failures {@link io.qgpu.nvml.NvmlException}. The
 * usage records are immutable. Memory in bytes, utilization in percent, timestamps in microseconds.
 *
 * <p>docs/nvml.md in the repository, section "Usage sampling".
 */
@NullMarked
package io.qgpu.nvml.usage;

import org.jspecify.annotations.NullMarked;
