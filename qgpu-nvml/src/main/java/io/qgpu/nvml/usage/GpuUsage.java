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
 * @param gpuUtilPercent    device SM utilization in the driver's last period, -1 when NVML does not give
 *                          it (MIG-enabled GPUs and MIG instances: {@code NOT_SUPPORTED})
 * @param memoryUtilPercent device memory utilization in the driver's last period, -1 when unknown
 * @param processes         every process that holds memory or ran in the period, by pid
 * @param tenants           per tenant, the sums over its processes
 * @param newestSampleMicros the newest process sample timestamp seen so far on this GPU (0 if none)
 * @param smSampled         whether the driver gives per-process SM samples on this GPU (not on MIG-enabled
 *                          GPUs); when false every process's SM utilization is 0 for want of data
 * @param processesListed   whether NVML listed the compute processes: false when it refused the list
 *                          ({@code NO_PERMISSION}) and no MIG instance list could stand in; then
 *                          {@code processes} holds only MPS clients and processes seen in samples
 *
 * <p>Thread safety: immutable.
 */
public record GpuUsage(String gpuUuid, int gpuUtilPercent, int memoryUtilPercent, List<ProcessUsage> processes,
                       Map<String, TenantProcessUsage> tenants, long newestSampleMicros, boolean smSampled,
                       boolean processesListed) {

    public GpuUsage {
        Validate.notBlank("gpuUsage.gpuUuid", gpuUuid);
        Validate.between("gpuUsage.gpuUtilPercent", gpuUtilPercent, -1, 100);
        Validate.between("gpuUsage.memoryUtilPercent", memoryUtilPercent, -1, 100);
        processes = Validate.list("gpuUsage.processes", processes);
        Validate.notNull("gpuUsage.tenants", tenants);
        tenants = Map.copyOf(tenants);
        Validate.atLeast("gpuUsage.newestSampleMicros", newestSampleMicros, 0);
    }

    /** Whether NVML gave the device utilization. */
    public boolean utilizationKnown() {
        return gpuUtilPercent >= 0;
    }

    /** Processes no tenant claims (the resolver knew none). */
    public List<ProcessUsage> unattributed() {
        return processes.stream().filter(p -> p.tenant().isEmpty()).toList();
    }
}
