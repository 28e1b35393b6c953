package io.qgpu.core.placement;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Slice;
import io.qgpu.api.TopologyLevel;
import java.util.ArrayList;
import java.util.List;

/** Node fixtures for placement tests (qgpu-core cannot use the testkit, which depends on it). */
final class Nodes {
    private Nodes() {
    }

    static final long GIB = GpuDevice.GIB;

    /**
     * A DGX-1 (V100) hybrid cube-mesh, as {@code nvidia-smi topo -m} prints it: GPUs 0-3 all
     * NVLink-connected, 4-7 likewise, plus i &lt;-&gt; i+4; pairs with 2 or 1 lanes; the remaining
     * pairs cross the CPU sockets (SYS).
     */
    static Node dgx1(String name) {
        Node.Builder b = Node.builder(name).label("pool", "v100").defaultLink(new GpuLink.Pcie(TopologyLevel.SYSTEM));
        for (int i = 0; i < 8; i++) {
            b.gpu(GpuDevice.builder(name + "-g" + i).index(i).model("Tesla V100-SXM2-32GB").memoryGiB(32).numaNode(i / 4).build());
        }
        int[][] nv = {
                {0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2},
                {1, 2, 2}, {1, 3, 1}, {1, 5, 2},
                {2, 3, 2}, {2, 6, 1},
                {3, 7, 1},
                {4, 5, 1}, {4, 6, 1}, {4, 7, 2},
                {5, 6, 2}, {5, 7, 1},
                {6, 7, 2}};
        for (int[] l : nv) {
            b.link(l[0], l[1], new GpuLink.NvLink(l[2]));
        }
        return b.build();
    }

    /** {@code gpus} x 80 GiB H100, every pair NV18 through NVSwitch. */
    static Node nvswitch(String name, int gpus) {
        Node.Builder b = Node.builder(name).label("pool", "h100").defaultLink(new GpuLink.NvLink(18));
        for (int i = 0; i < gpus; i++) {
            b.gpu(GpuDevice.builder(name + "-g" + i).index(i).model("NVIDIA H100 80GB HBM3").memoryGiB(80).build());
        }
        return b.build();
    }

    /** {@code gpus} x 16 GiB T4 on PCIe: pairs under one switch (PIX), across the host bridge (PHB). */
    static Node t4(String name, int gpus) {
        Node.Builder b = Node.builder(name).label("pool", "t4").defaultLink(new GpuLink.Pcie(TopologyLevel.HOSTBRIDGE));
        for (int i = 0; i < gpus; i++) {
            b.gpu(GpuDevice.builder(name + "-g" + i).index(i).model("Tesla T4").memoryGiB(16).build());
        }
        for (int i = 0; i + 1 < gpus; i += 2) {
            b.link(i, i + 1, new GpuLink.Pcie(TopologyLevel.SINGLE));
        }
        return b.build();
    }

    static Claim claim(String id, long gib, int request, int limit) {
        return Claim.builder(id).memoryGiB(gib).compute(request, limit).build();
    }

    static Claim online(String id, long gib, int request) {
        return Claim.builder(id).memoryGiB(gib).compute(request, 100).priority(PriorityClass.ONLINE).build();
    }

    static Claim exclusive(String id, int gpus) {
        return Claim.builder(id).gpus(gpus).exclusive().build();
    }

    /** A placement of {@code claim} on the GPUs at {@code positions} of {@code node}. */
    static Placement on(Claim claim, Node node, int... positions) {
        List<Slice> slices = new ArrayList<>();
        for (int p : positions) {
            GpuDevice g = node.gpus().get(p);
            long mem = claim.exclusive() ? g.memoryBytes() : claim.memoryPerGpuBytes();
            slices.add(new Slice(g.uuid(), mem, claim.computeRequest(), claim.computeLimit()));
        }
        return new Placement(claim, node.name(), slices);
    }

    /** Positions of the placement's GPUs on {@code node}, ascending. */
    static int[] positions(Placement p, Node node) {
        return p.gpuUuids().stream().mapToInt(node::positionOf).sorted().toArray();
    }
}
