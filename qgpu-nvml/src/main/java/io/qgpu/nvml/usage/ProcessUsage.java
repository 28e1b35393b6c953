package io.qgpu.nvml.usage;

import io.qgpu.api.Validate;
import java.util.Optional;

/**
 * One process on a GPU in a {@link GpuUsage} snapshot.
 *
 * <pre>{@code
 * usage.processes().forEach(p -> log.info("{}", p.pid() + " " + p.tenant().orElse("?") + " " + p.smUtilPercent() + "%"));
 * }</pre>
 *
 * @param pid             process id
 * @param tenant          its tenant, if the resolver knows it
 * @param usedMemoryBytes device memory it holds, or -1 when unknown (not running any more, or the
 *                        driver cannot tell)
 * @param smUtilPercent   its SM utilization in the newest sample of the period, 0 if it had none
 * @param memUtilPercent  its memory utilization in the newest sample of the period, 0 if it had none
 * @param sampled         whether the driver sampled it in the period (it ran kernels)
 * @param migInstance     the UUID ({@code MIG-...}) of the MIG instance it runs on, when the GPU is
 *                        MIG-enabled and the instance is known
 * @param mps             whether NVML lists it as an MPS client (it runs through the MPS server)
 *
 * <p>Thread safety: immutable.
 */
public record ProcessUsage(long pid, Optional<String> tenant, long usedMemoryBytes, int smUtilPercent,
                           int memUtilPercent, boolean sampled, Optional<String> migInstance, boolean mps) {

    public ProcessUsage {
        Validate.atLeast("processUsage.pid", pid, 0);
        Validate.notNull("processUsage.tenant", tenant);
        Validate.atLeast("processUsage.usedMemoryBytes", usedMemoryBytes, -1);
        Validate.between("processUsage.smUtilPercent", smUtilPercent, 0, 100);
        Validate.between("processUsage.memUtilPercent", memUtilPercent, 0, 100);
        Validate.notNull("processUsage.migInstance", migInstance);
    }
}
