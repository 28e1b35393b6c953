package io.qgpu.testkit.machines;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Topology;
import io.qgpu.api.TopologyLevel;
import io.qgpu.api.Validate;
import java.util.List;

/**
 * Preset machine types, modelled on real hardware.
 *
 * <table>
 *   <caption>Presets</caption>
 *   <tr><th>constant</th><th>GPUs</th><th>links</th></tr>
 *   <tr><td>{@link #DGX_H100}</td><td>8 x H100 80 GB</td><td>every pair NV18 through NVSwitch; PCIe NODE within a socket, SYS across; NUMA 0 for GPUs 0-3, 1 for 4-7</td></tr>
 *   <tr><td>{@link #DGX_A100}</td><td>8 x A100 SXM4 80 GB</td><td>every pair NV12 through NVSwitch; PCIe PXB for the pairs 0-1, 2-3, 4-5, 6-7 (one PCIe switch), SYS otherwise; NUMA 3, 3, 1, 1, 7, 7, 5, 5</td></tr>
 *   <tr><td>{@link #DGX_1V}</td><td>8 x V100 SXM2 32 GB</td><td>hybrid cube-mesh NVLink (NV1/NV2 as on a DGX-1V), other pairs SYS; PCIe PIX for 0-1, 2-3, 4-5, 6-7, NODE within a quad, SYS across</td></tr>
 *   <tr><td>{@link #PCIE_4X_T4}</td><td>4 x T4 16 GB</td><td>PCIe only: 0-1 PHB, 2-3 NODE, across the two NUMA nodes SYS</td></tr>
 *   <tr><td>{@code GN7_*}</td><td>1, 2, 4 x T4 16 GB</td><td>Tencent Cloud GN7 (T4) instances, PCIe</td></tr>
 *   <tr><td>{@code GN10XP_*}</td><td>1, 2, 4, 8 x V100 SXM2 32 GB</td><td>Tencent Cloud GN10Xp (V100 NVLink) instances</td></tr>
 * </table>
 *
 * <p>Seed 002 (Tencent Cloud's qGPU guide) limits qGPU to CVM machine types with V100 and T4 cards;
 * the GN7 and GN10Xp presets are those families at their 1/2/4(/8)-GPU sizes. Their instance names
 * follow Tencent Cloud's published specifications at the time of writing; the PCIe levels inside a
 * cloud VM are our choice (cloud VMs usually report {@code PHB} within a socket and {@code SYS}
 * across), and the 2- and 4-GPU GN10Xp sizes take GPUs 0-1 and 0-3 of the hybrid cube mesh.
 *
 * <p>DGX-1V lane counts: each V100 has six NVLinks. Within each quad (0-3, 4-7) every pair is
 * linked, and GPU i is linked to GPU i+4. The double links (NV2) are 0-3, 1-2, 2-3 (and 4-7, 5-6,
 * 6-7) and the cross-quad pairs 0-4 and 1-5; the single links (NV1) are 0-1, 0-2, 1-3 (4-5, 4-6,
 * 5-7) and the cross-quad pairs 2-6 and 3-7, so each GPU has exactly six lanes. This is the matrix
 * {@code nvidia-smi topo -m} prints on a DGX-1 with V100 and what NCCL's topology dump of such a
 * machine shows (for example NVIDIA/nccl issue 671).
 *
 * <p>PCIe under the NVLinks (what NVML's common-ancestor query answers for each pair): on the DGX-1V
 * two GPUs share each PCIe switch (0-1, 2-3, 4-5, 6-7: {@code PIX}), each quad hangs off one CPU
 * ({@code NODE} inside a quad) and the quads meet across the sockets ({@code SYS}). On the DGX A100
 * two GPUs share each PCIe switch tree ({@code PXB}) and each such pair has its own NUMA node (the
 * NUMA numbers are those the machine reports in its NPS4 setting), so other pairs are {@code SYS}.
 * On the DGX H100 every GPU has its own PCIe switch: {@code NODE} within a socket, {@code SYS}
 * across. These levels are our model of the published block diagrams; a real machine's NVML
 * answers win where they differ.
 *
 * <pre>{@code
 * Node dgx = Machines.DGX_1V.node("dgx1-0");
 * dgx.topology().link(0, 3);              // NvLink[lanes=2, pcie=NODE, nvSwitch=false]
 * dgx.topology().link(0, 5);              // Pcie[level=SYSTEM]
 * MachineType t = Machines.byName("gn7-4xt4");
 * }</pre>
 *
 * <p>Thread safety: immutable constants.
 */
public final class Machines {

    /** Node label holding the preset name, for example {@code dgx-h100}. */
    public static final String LABEL_MACHINE = "qgpu.io/machine";
    /** Node label holding the instance type (the well-known Kubernetes label). */
    public static final String LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type";
    /** Node label with the qGPU isolation policy, as Tencent Cloud's TKE sets it (seed 002). */
    public static final String LABEL_QGPU_POLICY = "tke.cloud.tencent.com/qgpu-schedule-policy";

    /** Product name of the H100 SXM5 80 GB as NVML reports it. */
    public static final String H100_80GB = "NVIDIA H100 80GB HBM3";
    /** Product name of the V100 SXM2 32 GB as NVML reports it. */
    public static final String V100_SXM2_32GB = "Tesla V100-SXM2-32GB";
    /** Product name of the T4 as NVML reports it. */
    public static final String T4 = "Tesla T4";

    private static final GpuLink SYS = new GpuLink.Pcie(TopologyLevel.SYSTEM);
    private static final GpuLink NODE = new GpuLink.Pcie(TopologyLevel.NODE);
    private static final GpuLink PHB = new GpuLink.Pcie(TopologyLevel.HOSTBRIDGE);

    /** Product name of the A100 SXM4 80 GB as NVML reports it. */
    public static final String A100_80GB = "NVIDIA A100-SXM4-80GB";

    /**
     * DGX H100: 8 x H100 80 GB, all pairs NV18 through NVSwitch; PCIe NODE within a socket, SYS
     * across; NUMA 0 for GPUs 0-3, 1 for 4-7.
     */
    public static final MachineType DGX_H100 = new MachineType("dgx-h100", "DGX-H100", H100_80GB,
            80 * GpuDevice.GIB, List.of(0, 0, 0, 0, 1, 1, 1, 1),
            nvSwitch(8, 18, (a, b) -> a / 4 == b / 4 ? TopologyLevel.NODE : TopologyLevel.SYSTEM));

    /**
     * DGX A100: 8 x A100 SXM4 80 GB, all pairs NV12 through NVSwitch; PCIe PXB for 0-1, 2-3, 4-5, 6-7,
     * SYS otherwise; NUMA nodes 3, 3, 1, 1, 7, 7, 5, 5.
     */
    public static final MachineType DGX_A100 = new MachineType("dgx-a100", "DGX-A100", A100_80GB,
            80 * GpuDevice.GIB, List.of(3, 3, 1, 1, 7, 7, 5, 5),
            nvSwitch(8, 12, (a, b) -> a / 2 == b / 2 ? TopologyLevel.MULTIPLE : TopologyLevel.SYSTEM));

    /** DGX-1 with V100: 8 x V100 SXM2 32 GB in a hybrid cube mesh, NUMA 0 for GPUs 0-3, 1 for 4-7. */
    public static final MachineType DGX_1V = new MachineType("dgx-1v", "DGX-1V", V100_SXM2_32GB,
            32 * GpuDevice.GIB, List.of(0, 0, 0, 0, 1, 1, 1, 1), hybridCubeMesh(8));

    /**
     * A two-socket PCIe server with 4 x T4 16 GB: GPUs 0 and 1 behind one host bridge of NUMA node 0
     * ({@code PHB}), GPUs 2 and 3 on different host bridges of NUMA node 1 ({@code NODE}), and every
     * pair across the sockets {@code SYS}.
     */
    public static final MachineType PCIE_4X_T4 = new MachineType("pcie-4xt4", "PCIe-4xT4", T4,
            16 * GpuDevice.GIB, List.of(0, 0, 1, 1),
            Topology.builder(4).defaultLink(SYS).link(0, 1, PHB).link(2, 3, NODE).build());

    /** Tencent Cloud GN7.2XLARGE32: 1 x T4. */
    public static final MachineType GN7_2XLARGE32 = gn7("gn7-1xt4", "GN7.2XLARGE32", 1);
    /** Tencent Cloud GN7.10XLARGE160: 2 x T4. */
    public static final MachineType GN7_10XLARGE160 = gn7("gn7-2xt4", "GN7.10XLARGE160", 2);
    /** Tencent Cloud GN7.20XLARGE320: 4 x T4 over two sockets. */
    public static final MachineType GN7_20XLARGE320 = gn7("gn7-4xt4", "GN7.20XLARGE320", 4);

    /** Tencent Cloud GN10Xp.2XLARGE40: 1 x V100 SXM2 32 GB. */
    public static final MachineType GN10XP_2XLARGE40 = gn10xp("gn10xp-1xv100", "GN10Xp.2XLARGE40", 1);
    /** Tencent Cloud GN10Xp.5XLARGE80: 2 x V100 SXM2 32 GB (NV1). */
    public static final MachineType GN10XP_5XLARGE80 = gn10xp("gn10xp-2xv100", "GN10Xp.5XLARGE80", 2);
    /** Tencent Cloud GN10Xp.10XLARGE160: 4 x V100 SXM2 32 GB (one quad of the cube mesh). */
    public static final MachineType GN10XP_10XLARGE160 = gn10xp("gn10xp-4xv100", "GN10Xp.10XLARGE160", 4);
    /** Tencent Cloud GN10Xp.20XLARGE320: 8 x V100 SXM2 32 GB, hybrid cube mesh like a DGX-1V. */
    public static final MachineType GN10XP_20XLARGE320 = gn10xp("gn10xp-8xv100", "GN10Xp.20XLARGE320", 8);

    private static final List<MachineType> ALL = List.of(DGX_H100, DGX_A100, DGX_1V, PCIE_4X_T4,
            GN7_2XLARGE32, GN7_10XLARGE160, GN7_20XLARGE320,
            GN10XP_2XLARGE40, GN10XP_5XLARGE80, GN10XP_10XLARGE160, GN10XP_20XLARGE320);

    private Machines() {
    }

    /** Every preset, smallest-first within a family. */
    public static List<MachineType> all() {
        return ALL;
    }

    /** The preset with this {@link MachineType#name()}; an unknown name is refused, naming the known ones. */
    public static MachineType byName(String name) {
        Validate.notNull("machine", name);
        for (MachineType t : ALL) {
            if (t.name().equals(name)) {
                return t;
            }
        }
        throw new InvalidValueException("machine", name, "must be one of "
                + ALL.stream().map(MachineType::name).toList());
    }

    /**
     * An NVSwitch machine: every pair of {@code size} GPUs {@code lanes} NVLinks through the switch,
     * over the PCIe level {@code pcie(a, b)}.
     */
    public static Topology nvSwitch(int size, int lanes, java.util.function.BiFunction<Integer, Integer, TopologyLevel> pcie) {
        Topology.Builder t = Topology.builder(size);
        for (int a = 0; a < size; a++) {
            for (int b = a + 1; b < size; b++) {
                t.link(a, b, new GpuLink.NvLink(lanes, pcie.apply(a, b), true));
            }
        }
        return t.build();
    }

    /**
     * The DGX-1V hybrid cube-mesh links of GPUs {@code 0..size-1} (size 1 to 8); pairs without
     * NVLink are {@code SYS} across the quads and cannot occur inside one. Under the NVLinks: PCIe
     * {@code PIX} for the pairs sharing a switch (0-1, 2-3, 4-5, 6-7), {@code NODE} within a quad,
     * {@code SYS} across.
     */
    public static Topology hybridCubeMesh(int size) {
        Validate.between("hybridCubeMesh.size", size, 1, 8);
        int[][] lanes = new int[8][8];
        int[][] pairs = {
                {0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {1, 2, 2}, {1, 3, 1}, {2, 3, 2},   // quad 0-3
                {4, 5, 1}, {4, 6, 1}, {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2},   // quad 4-7
                {0, 4, 2}, {1, 5, 2}, {2, 6, 1}, {3, 7, 1}};                        // i <-> i+4
        for (int[] p : pairs) {
            lanes[p[0]][p[1]] = p[2];
            lanes[p[1]][p[0]] = p[2];
        }
        Topology.Builder t = Topology.builder(size).defaultLink(SYS);
        for (int a = 0; a < size; a++) {
            for (int b = a + 1; b < size; b++) {
                if (lanes[a][b] > 0) {
                    TopologyLevel pcie = a / 2 == b / 2 ? TopologyLevel.SINGLE
                            : a / 4 == b / 4 ? TopologyLevel.NODE : TopologyLevel.SYSTEM;
                    t.link(a, b, new GpuLink.NvLink(lanes[a][b], pcie, false));
                }
            }
        }
        return t.build();
    }

    private static MachineType gn7(String name, String instance, int gpus) {
        List<Integer> numa = gpus == 4 ? List.of(0, 0, 1, 1) : java.util.Collections.nCopies(gpus, 0);
        Topology.Builder t = Topology.builder(gpus).defaultLink(gpus == 4 ? SYS : PHB);
        if (gpus == 4) {
            t.link(0, 1, PHB).link(2, 3, PHB);
        }
        return new MachineType(name, instance, T4, 16 * GpuDevice.GIB, numa, t.build());
    }

    private static MachineType gn10xp(String name, String instance, int gpus) {
        List<Integer> numa = gpus == 8 ? List.of(0, 0, 0, 0, 1, 1, 1, 1) : java.util.Collections.nCopies(gpus, 0);
        return new MachineType(name, instance, V100_SXM2_32GB, 32 * GpuDevice.GIB, numa, hybridCubeMesh(gpus));
    }
}
