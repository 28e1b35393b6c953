package io.qgpu.nvml.usage;

import io.qgpu.api.Validate;
import java.util.List;

/**
 * What one tenant's processes use of a GPU, summed.
 *
 * <pre>{@code
 * TenantProcessUsage t = usage.tenants().get("job-a");
 * long bytes = t.usedMemoryBytes();
 * }</pre>
 *
 * @param tenant          the tenant
 * @param pids            its processes on the GPU, sorted
 * @param usedMemoryBytes device memory they hold (processes whose memory is unknown add nothing)
 * @param smUtilPercent   the sum of their SM utilization in the period (can exceed 100 when samples of
 *                        different processes overlap in time; not capped)
 *
 * <p>Thread safety: immutable.
 */
public record TenantProcessUsage(String tenant, List<Long> pids, long usedMemoryBytes, int smUtilPercent) {

    public TenantProcessUsage {
        Validate.notBlank("tenantUsage.tenant", tenant);
        pids = Validate.list("tenantUsage[" + tenant + "].pids", pids);
        Validate.atLeast("tenantUsage[" + tenant + "].usedMemoryBytes", usedMemoryBytes, 0);
        Validate.atLeast("tenantUsage[" + tenant + "].smUtilPercent", smUtilPercent, 0);
    }
}
