package io.qgpu.testkit.property;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.Topology;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.testkit.invariants.SchedulerUnderTest;
import io.qgpu.testkit.machines.Machines;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class TopologyStreamTest {

    static List<Node> cluster() {
        List<Node> nodes = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            nodes.add(Machines.DGX_1V.node("dgx1-" + i));
        }
        for (int i = 0; i < 2; i++) {
            Node.Builder b = Node.builder("a100-" + i).defaultLink(new GpuLink.NvLink(12));
            int[] numa = {3, 3, 1, 1, 7, 7, 5, 5};
            for (int g = 0; g < 8; g++) {
                b.gpu(GpuDevice.builder("GPU-a100-" + i + "-" + g).index(g).model("A100").memoryGiB(80).numaNode(numa[g]).build());
            }
            nodes.add(b.build());
        }
        for (int i = 0; i < 2; i++) {
            nodes.add(Machines.DGX_H100.node("h100-" + i));
        }
        return nodes;
    }

    static SchedulerUnderTest engine(List<Node> nodes) {
        PlacementEngine e = PlacementEngine.create(Ledger.create(GranularityRules.ofDefaults(), nodes));
        return new SchedulerUnderTest() {
            public PlacementResult place(Claim claim) { return e.place(claim); }
            public void release(String tenantId) { e.release(tenantId); }
        };
    }

    @Test
    void printCounts() {
        System.out.println("ALL " + TopologyStream.runSeeds(TopologyStreamTest::engine, cluster(), 1, 10, 2000));
        List<Node> dgx1 = cluster().subList(0, 4);
        System.out.println("DGX1 " + TopologyStream.runSeeds(TopologyStreamTest::engine, dgx1, 1, 10, 2000));
    }
}
