package io.qgpu.benchmarks;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.Node;
import java.util.LinkedHashMap;
import java.util.Map;

/** The node the agents' benchmarks answer on: eight 80 GiB H100s on NVLink, {@code GPU-<i>} at {@code /dev/nvidia<i>}. */
public final class AgentNode {
    private AgentNode() {
    }

    /** The node. */
    public static Node h100x8(String name) {
        Node.Builder b = Node.builder(name).defaultLink(new GpuLink.NvLink(18));
        for (int g = 0; g < 8; g++) {
            b.gpu(GpuDevice.builder("GPU-" + g).index(g).model("H100").memoryGiB(80).build());
        }
        return b.build();
    }

    /** Each GPU's minor number (its index). */
    public static Map<String, Integer> minors(Node node) {
        Map<String, Integer> out = new LinkedHashMap<>();
        node.gpus().forEach(g -> out.put(g.uuid(), g.index()));
        return out;
    }
}
