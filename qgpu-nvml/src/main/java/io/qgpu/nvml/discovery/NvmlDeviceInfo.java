package io.qgpu.nvml.discovery;

import io.qgpu.api.Health;
import io.qgpu.api.Validate;
import io.qgpu.nvml.NvmlComputeCapability;
import io.qgpu.nvml.NvmlMigMode;

/**
 * What NVML says about one GPU beyond the scheduler's {@link io.qgpu.api.GpuDevice}: the facts an
 * operator or a device plugin needs (device node, PCI address, compute capability, MIG, NVLinks).
 *
 * <pre>{@code
 * NvmlInventory inv = discovery.inventory("node-a");
 * for (NvmlDeviceInfo d : inv.devices()) {
 *     System.out.println("/dev/nvidia" + d.minorNumber() + " " + d.pciBusId() + " sm_" + d.computeCapability());
 * }
 * }</pre>
 *
 * @param index             NVML index
 * @param uuid              {@code GPU-...}
 * @param name              product name
 * @param memoryTotalBytes  installed device memory
 * @param memoryReservedBytes memory the driver keeps
 * @param minorNumber       {@code N} of {@code /dev/nvidiaN}
 * @param pciBusId          PCI bus id, for example {@code 00000000:18:00.0}
 * @param computeCapability CUDA compute capability
 * @param migMode           MIG mode, current and pending
 * @param numaNode          nearest NUMA node, or -1 when unknown
 * @param activeNvLinks     NVLinks that are up, to GPUs and switches together
 * @param nvSwitchLinks     of those, the links that end on something other than a GPU of this machine
 *                          (an NVSwitch)
 * @param health            the session's health view at discovery time
 *
 * <p>Thread safety: immutable.
 */
public record NvmlDeviceInfo(int index, String uuid, String name, long memoryTotalBytes, long memoryReservedBytes,
                             int minorNumber, String pciBusId, NvmlComputeCapability computeCapability,
                             NvmlMigMode migMode, int numaNode, int activeNvLinks, int nvSwitchLinks,
                             Health health) {

    public NvmlDeviceInfo {
        Validate.atLeast("nvmlDeviceInfo.index", index, 0);
        Validate.notBlank("nvmlDeviceInfo.uuid", uuid);
        Validate.notBlank("nvmlDeviceInfo[" + uuid + "].name", name);
        Validate.atLeast("nvmlDeviceInfo[" + uuid + "].memoryTotalBytes", memoryTotalBytes, 1);
        Validate.atLeast("nvmlDeviceInfo[" + uuid + "].memoryReservedBytes", memoryReservedBytes, 0);
        Validate.atLeast("nvmlDeviceInfo[" + uuid + "].minorNumber", minorNumber, 0);
        Validate.notBlank("nvmlDeviceInfo[" + uuid + "].pciBusId", pciBusId);
        Validate.notNull("nvmlDeviceInfo[" + uuid + "].computeCapability", computeCapability);
        Validate.notNull("nvmlDeviceInfo[" + uuid + "].migMode", migMode);
        Validate.atLeast("nvmlDeviceInfo[" + uuid + "].numaNode", numaNode, -1);
        Validate.atLeast("nvmlDeviceInfo[" + uuid + "].activeNvLinks", activeNvLinks, 0);
        Validate.between("nvmlDeviceInfo[" + uuid + "].nvSwitchLinks", nvSwitchLinks, 0, activeNvLinks);
        Validate.notNull("nvmlDeviceInfo[" + uuid + "].health", health);
    }
}
