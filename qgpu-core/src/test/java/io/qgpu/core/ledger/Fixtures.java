package io.qgpu.core.ledger;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.Slice;
import io.qgpu.api.TopologyLevel;
import java.util.ArrayList;
import java.util.List;

/** Small nodes for ledger tests. */
final class Fixtures {
    private Fixtures() {
    }

    static final long GIB = GpuDevice.GIB;

    /** {@code gpus} x 16 GiB T4 on PCIe. UUIDs {@code <name>-g<i>}. */
    static Node t4Node(String name, int gpus) {
        Node.Builder b = Node.builder(name).label("pool", "t4").defaultLink(new GpuLink.Pcie(TopologyLevel.HOSTBRIDGE));
        for (int i = 0; i < gpus; i++) {
            b.gpu(GpuDevice.builder(name + "-g" + i).index(i).model("Tesla T4").memoryGiB(16).numaNode(i / 2).build());
        }
        return b.build();
    }

    /** {@code gpus} x 80 GiB H100 on NVSwitch. */
    static Node h100Node(String name, int gpus) {
        Node.Builder b = Node.builder(name).label("pool", "h100").defaultLink(new GpuLink.NvLink(18));
        for (int i = 0; i < gpus; i++) {
            b.gpu(GpuDevice.builder(name + "-g" + i).index(i).model("NVIDIA H100 80GB HBM3").memoryGiB(80).build());
        }
        return b.build();
    }

    static Claim claim(String id, long gib, int request, int limit) {
        return Claim.builder(id).memoryGiB(gib).compute(request, limit).build();
    }

    /** A placement of {@code claim} on the named GPUs (exclusive claims get the whole 16/80 GiB device). */
    static Placement on(Claim claim, Node node, int... positions) {
        List<Slice> slices = new ArrayList<>();
        for (int p : positions) {
            GpuDevice g = node.gpus().get(p);
            long mem = claim.exclusive() ? g.memoryBytes() : claim.memoryPerGpuBytes();
            slices.add(new Slice(g.uuid(), mem, claim.computeRequest(), claim.computeLimit()));
        }
        return new Placement(claim, node.name(), slices);
    }
}
