package io.qgpu.nvml.usage;

import io.qgpu.api.Validate;
import java.util.List;
import java.util.Map;

/**
 * A usage snapshot of one GPU: device utilization, every process and the per-tenant sums.
 *
 * <pre>{@code
 * GpuUsage u = sampler.sample("GPU-0b5c...");
 * u.gpuUtilPercent();
 * u.tenants().get("job-a").smUtilPercent();
 * }</pre>
 *
 * @param gpuUuid           the GPU
 * @param gpuUtilPercent    device SM utilization in the driver's last period
 * @param memoryUtilPercent device memory utilization in the driver's last period
 * @param processes         every process that holds memory or ran in the period, by pid
 * @param tenants           per tenant, the sums over its processes
 * @param newestSampleMicros the newest process sample timestamp seen so far on this GPU (0 if none)
 * @param smSampled         whether the driver gives per-process SM samples on this GPU (not on MIG-enabled
 *                          GPUs); when false every process's SM utilization is 0 for want of data
 *
 * <p>Thread safety: immutable.
 */
public record GpuUsage(String gpuUuid, int gpuUtilPercent, int memoryUtilPercent, List<ProcessUsage> processes,
                       Map<String, TenantUsage> tenants, long newestSampleMicros, boolean smSampled) {

    public GpuUsage {
        Validate.notBlank("gpuUsage.gpuUuid", gpuUuid);
        Validate.between("gpuUsage.gpuUtilPercent", gpuUtilPercent, 0, 100);
        Validate.between("gpuUsage.memoryUtilPercent", memoryUtilPercent, 0, 100);
        processes = Validate.list("gpuUsage.processes", processes);
        Validate.notNull("gpuUsage.tenants", tenants);
        tenants = Map.copyOf(tenants);
        Validate.atLeast("gpuUsage.newestSampleMicros", newestSampleMicros, 0);
    }

    /** Processes no tenant claims (the resolver knew none). */
    public List<ProcessUsage> unattributed() {
        return processes.stream().filter(p -> p.tenant().isEmpty()).toList();
    }
}
