package io.qgpu.kubernetes.dra;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.TopologyLevel;
import io.qgpu.kubernetes.node.dra.DraNames;
import io.qgpu.kubernetes.node.dra.PublishedCapacity;
import io.qgpu.nvml.discovery.NvmlDeviceInfo;
import io.qgpu.nvml.discovery.NvmlInventory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The GPUs this driver publishes: each physical GPU that the node's ledger holds as a device of its own,
 * under its published name {@code gpu-<index>}, with the scheduler's view ({@link GpuDevice}) and NVML's
 * ({@link NvmlDeviceInfo}). A GPU with MIG enabled (whose instances stand in the ledger in its place) is not
 * published.
 *
 * <p>Each GPU also has the link to every other one, as the ledger's node has it ({@link #link}), and the PCIe
 * root it hangs under ({@link Gpu#pcieRoot()}, the {@value DraNames#ATTRIBUTE_PCIE_ROOT} attribute), derived from
 * NVML as {@link DraNames#ATTRIBUTE_PCIE_ROOT} describes: the physical GPUs grouped by their common-ancestor level
 * (a pair at {@code PHB} or closer shares a root, transitively; a pair NVML gives no level for does not), each
 * group named {@code pci<domain>:<bus>} after its GPU with the lowest PCI address. A GPU whose PCI bus id cannot
 * be read ({@code domain:bus:device.function} in hexadecimal) names no group; a group none of whose GPUs' can
 * be read has no root (the attribute is left out).
 *
 * <p>Thread safety: immutable.
 */
final class NodeGpus {
    private static final Pattern BUS_ID = Pattern.compile("([0-9a-fA-F]{1,8}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\\.([0-7])");

    /**
     * One published GPU.
     *
     * @param name     its device name, {@code gpu-<index>}
     * @param device   the ledger's view
     * @param info     NVML's view
     * @param pcieRoot the PCIe root it hangs under ({@code pci0000:18}), empty when not known
     */
    record Gpu(String name, GpuDevice device, NvmlDeviceInfo info, Optional<String> pcieRoot) {
        String uuid() {
            return device.uuid();
        }

        /** The memory capacity published: NVML's total memory, else the ledger's. */
        long memoryBytes() {
            return info.memoryKnown() ? info.memoryTotalBytes() : device.memoryBytes();
        }

        /** Its capacities as published under these rules. */
        PublishedCapacity published(GranularityRules rules) {
            return PublishedCapacity.of(rules, memoryBytes(), rules.maxTenants(device));
        }
    }

    private final Map<String, Gpu> byName;
    private final Map<String, Gpu> byUuid;
    private final Node node;

    NodeGpus(NvmlInventory inv) {
        this.node = inv.node();
        List<Optional<String>> roots = pcieRoots(inv);
        Map<String, GpuDevice> ledgerGpus = new LinkedHashMap<>();
        for (GpuDevice g : inv.node().gpus()) {
            ledgerGpus.put(g.uuid(), g);
        }
        Map<String, Gpu> names = new LinkedHashMap<>();
        Map<String, Gpu> uuids = new LinkedHashMap<>();
        for (int i = 0; i < inv.devices().size(); i++) {
            NvmlDeviceInfo d = inv.devices().get(i);
            GpuDevice g = ledgerGpus.get(d.uuid());
            if (g == null) {
                continue;
            }
            Gpu gpu = new Gpu(DriverNames.deviceName(d.index()), g, d, roots.get(i));
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

    /** The link between two published GPUs, as the ledger's node has it. */
    GpuLink link(Gpu a, Gpu b) {
        return node.topology().link(node.positionOf(a.uuid()), node.positionOf(b.uuid()));
    }

    /** The PCIe root of each physical GPU of the inventory, by position in {@link NvmlInventory#devices()}. */
    private static List<Optional<String>> pcieRoots(NvmlInventory inv) {
        int n = inv.devices().size();
        int[] group = new int[n];
        for (int i = 0; i < n; i++) {
            group[i] = i;
        }
        for (int a = 0; a < n; a++) {
            for (int b = a + 1; b < n; b++) {
                Optional<TopologyLevel> level = inv.pair(a, b).commonAncestor();
                if (level.isPresent() && level.get().nvmlValue() <= TopologyLevel.HOSTBRIDGE.nvmlValue()) {
                    group[find(group, a)] = find(group, b);
                }
            }
        }
        List<long[]> addresses = new ArrayList<>(n);
        for (NvmlDeviceInfo d : inv.devices()) {
            addresses.add(pciAddress(d.pciBusId()));
        }
        List<Optional<String>> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            long[] lowest = null;
            for (int j = 0; j < n; j++) {
                long[] x = addresses.get(j);
                if (x != null && find(group, j) == find(group, i) && (lowest == null || Arrays.compare(x, lowest) < 0)) {
                    lowest = x;
                }
            }
            out.add(lowest == null ? Optional.empty() : Optional.of(String.format(Locale.ROOT,
                    lowest[0] <= 0xffff ? "pci%04x:%02x" : "pci%08x:%02x", lowest[0], lowest[1])));
        }
        return out;
    }

    private static int find(int[] group, int i) {
        while (group[i] != i) {
            group[i] = group[group[i]];
            i = group[i];
        }
        return i;
    }

    /** Domain, bus, device and function of an NVML bus id ({@code 00000000:18:00.0}), or null when it is not one. */
    private static long[] pciAddress(String busId) {
        Matcher m = BUS_ID.matcher(busId);
        if (!m.matches()) {
            return null;
        }
        return new long[] {Long.parseLong(m.group(1), 16), Long.parseLong(m.group(2), 16), Long.parseLong(m.group(3), 16),
                Long.parseLong(m.group(4))};
    }

    /** GPU UUID to the minor number of its {@code /dev/nvidiaN}. */
    Map<String, Integer> minors() {
        Map<String, Integer> m = new LinkedHashMap<>();
        byUuid.forEach((u, g) -> m.put(u, g.info().minorNumber()));
        return m;
    }
}
