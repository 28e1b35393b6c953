package io.qgpu.kubernetes.dra;

import io.qgpu.api.GpuDevice;
import io.qgpu.nvml.discovery.NvmlDeviceInfo;
import io.qgpu.nvml.discovery.NvmlInventory;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The GPUs this driver publishes: each physical GPU that the node's ledger holds as a device of its own,
 * under its published name {@code gpu-<index>}, with the scheduler's view ({@link GpuDevice}) and NVML's
 * ({@link NvmlDeviceInfo}). A GPU with MIG enabled (whose instances stand in the ledger in its place) is not
 * published.
 *
 * <p>Thread safety: immutable.
 */
final class NodeGpus {
    /** One published GPU. */
    record Gpu(String name, GpuDevice device, NvmlDeviceInfo info) {
        String uuid() {
            return device.uuid();
        }

        /** The memory capacity published: NVML's total memory, else the ledger's. */
        long memoryBytes() {
            return info.memoryKnown() ? info.memoryTotalBytes() : device.memoryBytes();
        }
    }

    private final Map<String, Gpu> byName;
    private final Map<String, Gpu> byUuid;

    NodeGpus(NvmlInventory inv) {
        Map<String, GpuDevice> ledgerGpus = new LinkedHashMap<>();
        for (GpuDevice g : inv.node().gpus()) {
            ledgerGpus.put(g.uuid(), g);
        }
        Map<String, Gpu> names = new LinkedHashMap<>();
        Map<String, Gpu> uuids = new LinkedHashMap<>();
        for (NvmlDeviceInfo d : inv.devices()) {
            GpuDevice g = ledgerGpus.get(d.uuid());
            if (g == null) {
                continue;
            }
            Gpu gpu = new Gpu(DriverNames.deviceName(d.index()), g, d);
            names.put(gpu.name(), gpu);
            uuids.put(gpu.uuid(), gpu);
        }
        this.byName = Collections.unmodifiableMap(names);
        this.byUuid = Collections.unmodifiableMap(uuids);
    }

    /** Every published GPU in index order. */
    List<Gpu> all() {
        return List.copyOf(byName.values());
    }

    Optional<Gpu> byName(String name) {
        return Optional.ofNullable(byName.get(name));
    }

    Optional<Gpu> byUuid(String uuid) {
        return Optional.ofNullable(byUuid.get(uuid));
    }

    /** GPU UUID to the minor number of its {@code /dev/nvidiaN}. */
    Map<String, Integer> minors() {
        Map<String, Integer> m = new LinkedHashMap<>();
        byUuid.forEach((u, g) -> m.put(u, g.info().minorNumber()));
        return m;
    }
}
