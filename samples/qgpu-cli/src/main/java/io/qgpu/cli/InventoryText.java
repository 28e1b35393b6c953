package io.qgpu.cli;

import io.qgpu.api.GpuDevice;
import io.qgpu.nvml.discovery.MigInstance;
import io.qgpu.nvml.discovery.NvmlDeviceInfo;
import io.qgpu.nvml.discovery.NvmlInventory;
import java.io.PrintStream;
import java.util.List;
import java.util.Locale;

/**
 * The text form of {@code qgpu inventory}: a GPU table, the MIG instances, and a topology matrix with the
 * CPU Affinity, NUMA Affinity and GPU NUMA ID columns of {@code nvidia-smi topo -m}.
 */
final class InventoryText {
    private static final String MATRIX_TAIL = "%-15s %-15s %s";

    private InventoryText() {
    }

    static void print(NvmlInventory inv, PrintStream out) {
        out.printf("node %s   driver %s   NVML %s%n%n", inv.node().name(), inv.driverVersion(), inv.nvmlVersion());
        String fmt = "%-4s %-40s %-24s %10s  %-16s %5s %4s %-13s %4s %6s %-9s%n";
        out.printf(fmt, "GPU", "UUID", "NAME", "MEMORY", "PCI BUS ID", "MINOR", "CC", "MIG", "NUMA", "NVLINK", "HEALTH");
        for (NvmlDeviceInfo d : inv.devices()) {
            String mig = switch (d.migMode().current()) {
                case NOT_SUPPORTED -> "n/a";
                case DISABLED -> d.migMode().pending() == d.migMode().current() ? "disabled" : "disabled*";
                case ENABLED -> d.migMode().pending() == d.migMode().current() ? "enabled" : "enabled*";
            };
            out.printf(fmt, d.index(), d.uuid(), d.name(), d.memoryKnown() ? gib(d.memoryTotalBytes()) : "N/A",
                    d.pciBusId(), d.minorNumber(), d.computeCapability(), mig,
                    d.numaNode() < 0 ? "N/A" : Integer.toString(d.numaNode()), d.activeNvLinks(), d.health());
        }
        List<MigInstance> instances = inv.migInstances();
        if (!instances.isEmpty()) {
            out.println();
            String mfmt = "%-7s %-40s %-34s %10s %4s %4s %6s%n";
            out.printf(mfmt, "MIG", "UUID", "NAME", "MEMORY", "GI", "CI", "DEVICE");
            for (MigInstance m : instances) {
                out.printf(mfmt, m.parentIndex() + "/" + m.slot(), m.uuid(), m.name(), gib(m.memoryTotalBytes()),
                        m.gpuInstanceId(), m.computeInstanceId(), m.nodeIndex() < 0 ? "-" : Integer.toString(m.nodeIndex()));
            }
        }
        if (!inv.unreachable().isEmpty()) {
            out.println();
            inv.unreachable().forEach(u -> out.println("unreachable: " + u));
        }
        out.println();
        matrix(inv, out);
        out.println();
        out.println("Legend:");
        out.println("  X    = the GPU itself");
        out.println("  NV#  = NVLink with # lanes (through NVSwitches on switched systems)");
        out.println("  PSB  = PCIe, same board");
        out.println("  PIX  = PCIe, behind one PCIe switch");
        out.println("  PXB  = PCIe, across several PCIe switches, no host bridge");
        out.println("  PHB  = PCIe, through a host bridge (the CPU)");
        out.println("  NODE = PCIe and the link between host bridges of one NUMA node");
        out.println("  SYS  = PCIe and the interconnect between NUMA nodes (QPI/UPI/Infinity Fabric),");
        out.println("         or a pair whose PCIe path NVML does not give (as in some VMs)");
        out.println("  CPU Affinity, NUMA Affinity = the CPUs and NUMA nodes nearest the GPU");
        out.println("  GPU NUMA ID = the GPU's own NUMA node, where its memory is one (N/A on x86)");
        long unknown = inv.devices().stream().mapToInt(NvmlDeviceInfo::unknownNvLinks).sum();
        if (unknown > 0) {
            out.println("  (" + unknown + " active NVLinks lead to a remote side NVML cannot identify; they count for no pair)");
        }
    }

    private static void matrix(NvmlInventory inv, PrintStream out) {
        int n = inv.devices().size();
        StringBuilder head = new StringBuilder(String.format("%-7s", ""));
        for (NvmlDeviceInfo d : inv.devices()) {
            head.append(String.format("%-7s", "GPU" + d.index()));
        }
        out.println(head.append(String.format(MATRIX_TAIL, "CPU Affinity", "NUMA Affinity", "GPU NUMA ID")));
        for (int a = 0; a < n; a++) {
            NvmlDeviceInfo d = inv.devices().get(a);
            StringBuilder row = new StringBuilder(String.format("%-7s", "GPU" + d.index()));
            for (int b = 0; b < n; b++) {
                row.append(String.format("%-7s", a == b ? " X" : inv.gpuLink(a, b).label()));
            }
            row.append(String.format(MATRIX_TAIL, d.cpuAffinityText(), d.numaAffinityText(),
                    d.gpuNumaNode() < 0 ? "N/A" : Integer.toString(d.gpuNumaNode())));
            out.println(row.toString().stripTrailing());
        }
    }

    private static String gib(long bytes) {
        return String.format(Locale.ROOT, "%.1f GiB", bytes / (double) GpuDevice.GIB);
    }
}
