package io.qgpu.testkit.machines;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Health;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.Node;
import io.qgpu.api.PriorityClass;
import io.qgpu.json.Inventory;
import io.qgpu.json.QgpuJson;
import io.qgpu.core.ledger.Ledger;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class FakeClusterTest {

    private static Inventory mixed() {
        return FakeCluster.builder()
                .rules(GranularityRules.hami())
                .nodes(Machines.DGX_H100, 2, g -> g.prefix("train").label("pool", "train"))
                .nodes(Machines.GN7_20XLARGE320, 3, g -> g.isolation(IsolationPolicy.BURST_SHARE).unhealthyGpus(3))
                .nodes(Machines.DGX_1V, 1, g -> g.reservedFor(PriorityClass.ONLINE))
                .nodes(Machines.PCIE_4X_T4, 1)
                .unhealthy("train-1", 5)
                .build();
    }

    @Test
    void buildsNamedLabelledNodesWithHealthPolicyAndReservations() {
        Inventory inv = mixed();
        assertEquals("hami", inv.rules().name());
        assertEquals(List.of("train-0", "train-1", "gn7-4xt4-0", "gn7-4xt4-1", "gn7-4xt4-2", "dgx-1v-0", "pcie-4xt4-0"),
                inv.nodes().stream().map(Node::name).toList());
        Node train1 = inv.nodes().get(1);
        assertEquals("train", train1.labels().get("pool"));
        for (GpuDevice g : train1.gpus()) {
            assertEquals(g.index() == 5 ? Health.UNHEALTHY : Health.HEALTHY, g.health());
        }
        Node gn7 = inv.nodes().get(3);
        assertEquals("burst-share", gn7.labels().get(Machines.LABEL_QGPU_POLICY));
        for (GpuDevice g : gn7.gpus()) {
            assertEquals(IsolationPolicy.BURST_SHARE, g.isolationPolicy());
            assertEquals(g.index() == 3, !g.healthy());
        }
        for (GpuDevice g : inv.nodes().get(5).gpus()) {
            assertEquals(Optional.of(PriorityClass.ONLINE), g.reservedFor());
        }
        assertTrue(inv.nodes().get(6).gpus().stream().allMatch(GpuDevice::healthy));
        assertTrue(inv.nodes().get(6).gpus().stream().allMatch(g -> g.reservedFor().isEmpty()));
    }

    @Test
    void theSameCallsGiveEqualInventories() {
        assertEquals(mixed(), mixed());
    }

    @Test
    void namesCountOnPerPrefixAcrossCalls() {
        Inventory inv = FakeCluster.builder().nodes(Machines.GN7_2XLARGE32, 2).nodes(Machines.GN7_2XLARGE32, 1)
                .nodes(Machines.GN7_2XLARGE32, 1, g -> g.prefix("x")).build();
        assertEquals(List.of("gn7-1xt4-0", "gn7-1xt4-1", "gn7-1xt4-2", "x-0"), inv.nodes().stream().map(Node::name).toList());
        assertEquals(FakeCluster.of(Machines.DGX_H100, Machines.PCIE_4X_T4).nodes().stream().map(Node::name).toList(),
                List.of("dgx-h100-0", "pcie-4xt4-0"));
    }

    @Test
    void inventoriesRoundTripThroughQgpuJson() {
        Inventory inv = mixed();
        String json = QgpuJson.writeInventory(inv);
        assertEquals(inv, QgpuJson.readInventory(json));
        assertEquals(json, QgpuJson.writeInventory(QgpuJson.readInventory(json)), "writing is stable");
        for (MachineType t : Machines.all()) {
            Node n = t.node(t.name() + "-0");
            assertEquals(n, QgpuJson.readNode(QgpuJson.writeNode(n)), t.name());
        }
    }

    @Test
    void aLedgerCanBeBuiltOverTheCluster() {
        Ledger ledger = FakeCluster.builder().nodes(Machines.DGX_1V, 2).buildLedger();
        assertEquals(2, ledger.nodes().size());
        assertEquals(0, ledger.size());
    }

    @Test
    void badSettingsAreRefusedNamingFieldAndValue() {
        InvalidValueException unknownNode = assertThrows(InvalidValueException.class,
                () -> FakeCluster.builder().nodes(Machines.DGX_H100, 1).unhealthy("dgx-h100-7", 0).build());
        assertEquals("cluster.unhealthy.node", unknownNode.field());
        assertEquals("dgx-h100-7", unknownNode.value());

        InvalidValueException badIndex = assertThrows(InvalidValueException.class,
                () -> FakeCluster.builder().nodes(Machines.GN7_2XLARGE32, 1).unhealthy("gn7-1xt4-0", 3).build());
        assertEquals("cluster.unhealthy[gn7-1xt4-0].gpuIndex", badIndex.field());

        InvalidValueException groupIndex = assertThrows(InvalidValueException.class,
                () -> FakeCluster.builder().nodes(Machines.GN7_2XLARGE32, 1, g -> g.unhealthyGpus(1)));
        assertTrue(groupIndex.field().contains("unhealthyGpus"), groupIndex.field());

        InvalidValueException duplicate = assertThrows(InvalidValueException.class,
                () -> FakeCluster.builder().nodes(Machines.GN7_2XLARGE32, 1).node(Machines.DGX_1V.node("gn7-1xt4-0")));
        assertEquals("cluster.nodes.name", duplicate.field());

        InvalidValueException count = assertThrows(InvalidValueException.class,
                () -> FakeCluster.builder().nodes(Machines.GN7_2XLARGE32, -1));
        assertEquals("cluster.nodes[gn7-1xt4].count", count.field());

        assertThrows(InvalidValueException.class, () -> FakeCluster.builder().rules(null));
        assertThrows(InvalidValueException.class,
                () -> FakeCluster.builder().nodes(Machines.GN7_2XLARGE32, 1, g -> g.label("", "x")));
    }

    @Test
    void aClusterWithoutUnhealthySettingsIsAllHealthy() {
        Inventory inv = FakeCluster.of(Machines.DGX_H100);
        assertFalse(inv.nodes().get(0).gpus().stream().anyMatch(g -> !g.healthy()));
        assertEquals(GranularityRules.ofDefaults(), inv.rules());
    }
}
