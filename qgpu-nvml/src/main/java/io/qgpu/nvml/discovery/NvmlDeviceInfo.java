package io.qgpu.nvml.discovery;

import io.qgpu.api.Health;
import io.qgpu.api.Validate;
import io.qgpu.nvml.NvmlComputeCapability;
import io.qgpu.nvml.NvmlMigMode;
import java.util.List;

/**
 * What NVML says about one physical GPU beyond the scheduler's {@link io.qgpu.api.GpuDevice}: the facts an
 * operator or a device plugin needs (device node, PCI address, compute capability, MIG and its instances,
 * NUMA and CPU affinity, NVLinks).
 *
 * <pre>{@code
 * NvmlInventory inv = discovery.inventory("node-a");
 * for (NvmlDeviceInfo d : inv.devices()) {
 *     log.info("{}", "/dev/nvidia" + d.minorNumber() + " " + d.pciBusId() + " CPUs " + d.cpuAffinityText());
 * }
 * }</pre>
 *
 * @param index               NVML index
 * @param uuid                {@code GPU-...}
 * @param name                product name
 * @param memoryTotalBytes    installed device memory, or -1 when NVML refuses to say (a MIG-enabled GPU seen
 *                            from a container: {@code NO_PERMISSION})
 * @param memoryReservedBytes memory the driver keeps, or -1 when unknown
 * @param minorNumber         {@code N} of {@code /dev/nvidiaN}
 * @param pciBusId            PCI bus id, for example {@code 00000000:18:00.0}
 * @param computeCapability   CUDA compute capability
 * @param migMode             MIG mode, current and pending
 * @param gpuNumaNode         the GPU's own NUMA node id where its memory is a NUMA node (Grace Hopper),
 *                            else -1 (x86: {@code nvmlDeviceGetNumaNodeId} is not supported)
 * @param numaAffinity        the NUMA nodes of CPU memory nearest the GPU ({@code nvmlDeviceGetMemoryAffinity},
 *                            node scope), ascending; empty when unknown
 * @param cpuAffinity         the CPUs nearest the GPU ({@code nvmlDeviceGetCpuAffinityWithinScope}, node
 *                            scope), ascending; empty when unknown
 * @param activeNvLinks       NVLinks that are up, whatever their far end
 * @param nvSwitchLinks       of those, the links whose remote device type is an NVSwitch
 * @param unknownNvLinks      of those, the links whose far end NVML cannot identify (as in some VMs); they
 *                            count for no pair
 * @param migInstances        the MIG instances of this GPU, by slot (empty when MIG is off)
 * @param health              the session's health view at discovery time
 *
 * <p>Thread safety: immutable.
 */
public record NvmlDeviceInfo(int index, String uuid, String name, long memoryTotalBytes, long memoryReservedBytes,
                             int minorNumber, String pciBusId, NvmlComputeCapability computeCapability,
                             NvmlMigMode migMode, int gpuNumaNode, List<Integer> numaAffinity,
                             List<Integer> cpuAffinity, int activeNvLinks, int nvSwitchLinks, int unknownNvLinks,
                             List<MigInstance> migInstances, Health health) {

    public NvmlDeviceInfo {
        Validate.atLeast("nvmlDeviceInfo.index", index, 0);
        Validate.notBlank("nvmlDeviceInfo.uuid", uuid);
        String at = "nvmlDeviceInfo[" + uuid + "].";
        Validate.notBlank(at + "name", name);
        if (memoryTotalBytes != -1) {
            Validate.atLeast(at + "memoryTotalBytes", memoryTotalBytes, 1);
        }
        Validate.atLeast(at + "memoryReservedBytes", memoryReservedBytes, -1);
        Validate.atLeast(at + "minorNumber", minorNumber, 0);
        Validate.notBlank(at + "pciBusId", pciBusId);
        Validate.notNull(at + "computeCapability", computeCapability);
        Validate.notNull(at + "migMode", migMode);
        Validate.atLeast(at + "gpuNumaNode", gpuNumaNode, -1);
        numaAffinity = Validate.list(at + "numaAffinity", numaAffinity);
        cpuAffinity = Validate.list(at + "cpuAffinity", cpuAffinity);
        Validate.atLeast(at + "activeNvLinks", activeNvLinks, 0);
        Validate.between(at + "nvSwitchLinks", nvSwitchLinks, 0, activeNvLinks);
        Validate.between(at + "unknownNvLinks", unknownNvLinks, 0, activeNvLinks - nvSwitchLinks);
        migInstances = Validate.list(at + "migInstances", migInstances);
        Validate.notNull(at + "health", health);
    }

    /** Whether NVML gave the memory size. */
    public boolean memoryKnown() {
        return memoryTotalBytes > 0;
    }

    /**
     * The NUMA node the scheduler model records ({@link io.qgpu.api.GpuDevice#numaNode()}): the nearest CPU
     * memory node (the lowest of {@link #numaAffinity()}), else -1.
     */
    public int numaNode() {
        return numaAffinity.isEmpty() ? -1 : numaAffinity.get(0);
    }

    /** {@link #cpuAffinity()} as {@code nvidia-smi topo -m} prints it ({@code 0-23,48-71}), or {@code N/A}. */
    public String cpuAffinityText() {
        return ranges(cpuAffinity);
    }

    /** {@link #numaAffinity()} as {@code nvidia-smi topo -m} prints it ({@code 0}, {@code 0-1}), or {@code N/A}. */
    public String numaAffinityText() {
        return ranges(numaAffinity);
    }

    /** Ascending numbers as ranges: {@code [0,1,2,5]} is {@code 0-2,5}; empty is {@code N/A}. */
    static String ranges(List<Integer> ascending) {
        if (ascending.isEmpty()) {
            return "N/A";
        }
        StringBuilder sb = new StringBuilder();
        int i = 0;
        while (i < ascending.size()) {
            int j = i;
            while (j + 1 < ascending.size() && ascending.get(j + 1) == ascending.get(j) + 1) {
                j++;
            }
            if (sb.length() > 0) {
                sb.append(',');
            }
            sb.append(ascending.get(i));
            if (j > i) {
                sb.append('-').append(ascending.get(j));
            }
            i = j + 1;
        }
        return sb.toString();
    }
}
