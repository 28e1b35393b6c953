package io.qgpu.testkit.machines;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.Node;
import io.qgpu.api.Topology;
import io.qgpu.api.TopologyLevel;
import io.qgpu.api.spi.GpuDiscovery;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class MachinesTest {

    private static final Pattern NVML_UUID = Pattern.compile("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");

    @Test
    void dgxH100HasEightH100sAllPairsNv18AndTwoNumaNodes() {
        Node n = Machines.DGX_H100.node("dgx");
        assertEquals(8, n.gpus().size());
        for (GpuDevice g : n.gpus()) {
            assertEquals(Machines.H100_80GB, g.model());
            assertEquals(80 * GpuDevice.GIB, g.memoryBytes());
            assertEquals(g.index() < 4 ? 0 : 1, g.numaNode());
        }
        for (int a = 0; a < 8; a++) {
            for (int b = a + 1; b < 8; b++) {
                // NVSwitch; PCIe: each GPU behind its own switch, NODE within a socket, SYS across
                assertEquals(new GpuLink.NvLink(18, a / 4 == b / 4 ? TopologyLevel.NODE : TopologyLevel.SYSTEM, true),
                        n.topology().link(a, b), a + "-" + b);
            }
        }
    }

    @Test
    void dgxA100HasNv12ThroughNvSwitchPcieSwitchPairsAndFourNumaNodes() {
        Node n = Machines.DGX_A100.node("a100");
        int[] numa = {3, 3, 1, 1, 7, 7, 5, 5};
        for (GpuDevice g : n.gpus()) {
            assertEquals(numa[g.index()], g.numaNode());
        }
        for (int a = 0; a < 8; a++) {
            for (int b = a + 1; b < 8; b++) {
                GpuLink l = n.topology().link(a, b);
                assertEquals(12, l.nvLinkLanes());
                assertTrue(l.viaNvSwitch());
                assertEquals(a / 2 == b / 2 ? TopologyLevel.MULTIPLE : TopologyLevel.SYSTEM, l.pcieLevel(), a + "-" + b);
            }
        }
    }

    @Test
    void dgx1vNvLinksCarryTheirPcieLevel() {
        Node n = Machines.DGX_1V.node("d");
        assertEquals(TopologyLevel.SINGLE, n.topology().link(0, 1).pcieLevel());    // one PCIe switch
        assertEquals(TopologyLevel.NODE, n.topology().link(0, 3).pcieLevel());      // same quad, same CPU
        assertEquals(TopologyLevel.SYSTEM, n.topology().link(0, 4).pcieLevel());    // across the sockets
        assertEquals(2, n.topology().link(0, 4).nvLinkLanes());
        assertEquals(0, n.topology().link(0, 5).nvLinkLanes());
    }

    @Test
    void dgx1vIsAHybridCubeMeshWithSixLanesPerGpu() {
        Topology t = Machines.DGX_1V.topology();
        String[] expected = {
                // as nvidia-smi topo -m prints it on a DGX-1 with V100 (row GPUi, columns GPU0..7)
                "X   NV1 NV1 NV2 NV2 SYS SYS SYS",
                "NV1 X   NV2 NV1 SYS NV2 SYS SYS",
                "NV1 NV2 X   NV2 SYS SYS NV1 SYS",
                "NV2 NV1 NV2 X   SYS SYS SYS NV1",
                "NV2 SYS SYS SYS X   NV1 NV1 NV2",
                "SYS NV2 SYS SYS NV1 X   NV2 NV1",
                "SYS SYS NV1 SYS NV1 NV2 X   NV2",
                "SYS SYS SYS NV1 NV2 NV1 NV2 X  "};
        for (int a = 0; a < 8; a++) {
            String[] row = expected[a].trim().split("\\s+");
            int lanes = 0;
            for (int b = 0; b < 8; b++) {
                if (a != b) {
                    assertEquals(row[b], t.link(a, b).label(), "GPU" + a + "-GPU" + b);
                    if (t.link(a, b) instanceof GpuLink.NvLink nv) {
                        lanes += nv.lanes();
                    }
                }
            }
            assertEquals(6, lanes, "a V100 has six NVLinks; GPU" + a);
        }
        // within each quad all pairs linked, plus i <-> i+4
        for (int a = 0; a < 8; a++) {
            for (int b = a + 1; b < 8; b++) {
                boolean linked = (a / 4 == b / 4) || b == a + 4;
                assertEquals(linked, t.link(a, b) instanceof GpuLink.NvLink, a + "-" + b);
            }
        }
        assertEquals(Machines.V100_SXM2_32GB, Machines.DGX_1V.model());
        assertEquals(32, Machines.DGX_1V.memoryGiB());
    }

    @Test
    void pcieT4NodeHasHostBridgeNodeAndSystemLevels() {
        Topology t = Machines.PCIE_4X_T4.topology();
        assertEquals(new GpuLink.Pcie(TopologyLevel.HOSTBRIDGE), t.link(0, 1));
        assertEquals(new GpuLink.Pcie(TopologyLevel.NODE), t.link(2, 3));
        for (int a : new int[] {0, 1}) {
            for (int b : new int[] {2, 3}) {
                assertEquals(new GpuLink.Pcie(TopologyLevel.SYSTEM), t.link(a, b));
            }
        }
        assertEquals(List.of(0, 0, 1, 1), Machines.PCIE_4X_T4.numaNodes());
        assertEquals(16, Machines.PCIE_4X_T4.memoryGiB());
        assertEquals(Machines.T4, Machines.PCIE_4X_T4.model());
    }

    @Test
    void seed002MachineTypesAreTheV100AndT4CloudInstances() {
        assertEquals(List.of(1, 2, 4), List.of(Machines.GN7_2XLARGE32.gpuCount(), Machines.GN7_10XLARGE160.gpuCount(),
                Machines.GN7_20XLARGE320.gpuCount()));
        assertEquals(List.of(1, 2, 4, 8), List.of(Machines.GN10XP_2XLARGE40.gpuCount(),
                Machines.GN10XP_5XLARGE80.gpuCount(), Machines.GN10XP_10XLARGE160.gpuCount(),
                Machines.GN10XP_20XLARGE320.gpuCount()));
        for (MachineType t : List.of(Machines.GN7_2XLARGE32, Machines.GN7_10XLARGE160, Machines.GN7_20XLARGE320)) {
            assertEquals(Machines.T4, t.model());
            assertEquals(16, t.memoryGiB());
            assertTrue(t.instanceType().startsWith("GN7."), t.instanceType());
        }
        for (MachineType t : List.of(Machines.GN10XP_2XLARGE40, Machines.GN10XP_5XLARGE80,
                Machines.GN10XP_10XLARGE160, Machines.GN10XP_20XLARGE320)) {
            assertEquals(Machines.V100_SXM2_32GB, t.model());
            assertEquals(32, t.memoryGiB());
            assertTrue(t.instanceType().startsWith("GN10Xp."), t.instanceType());
        }
        assertEquals(Machines.DGX_1V.topology(), Machines.GN10XP_20XLARGE320.topology());
        assertEquals(new GpuLink.NvLink(1, TopologyLevel.SINGLE, false), Machines.GN10XP_5XLARGE80.topology().link(0, 1));
        // seed 002: at most memory / 4 GiB tenants per card, e.g. 8 on a 32 GiB V100
        assertEquals(8, io.qgpu.api.GranularityRules.ofDefaults().maxTenants(Machines.GN10XP_2XLARGE40.node("v").gpus().get(0)));
        assertEquals(4, io.qgpu.api.GranularityRules.ofDefaults().maxTenants(Machines.GN7_2XLARGE32.node("t").gpus().get(0)));
    }

    @Test
    void nodesCarryLabelsAndDeterministicNvmlStyleUuids() {
        Node a = Machines.GN7_20XLARGE320.node("n1", IsolationPolicy.FIXED_SHARE, Map.of("pool", "infer"));
        Node b = Machines.GN7_20XLARGE320.node("n1", IsolationPolicy.FIXED_SHARE, Map.of("pool", "infer"));
        assertEquals(a, b, "same name, same node");
        assertEquals("gn7-4xt4", a.labels().get(Machines.LABEL_MACHINE));
        assertEquals("GN7.20XLARGE320", a.labels().get(Machines.LABEL_INSTANCE_TYPE));
        assertEquals("fixed-share", a.labels().get(Machines.LABEL_QGPU_POLICY));
        assertEquals("infer", a.labels().get("pool"));
        Set<String> uuids = new HashSet<>();
        for (GpuDevice g : a.gpus()) {
            assertTrue(NVML_UUID.matcher(g.uuid()).matches(), g.uuid());
            assertEquals(IsolationPolicy.FIXED_SHARE, g.isolationPolicy());
            uuids.add(g.uuid());
        }
        assertEquals(4, uuids.size());
        assertEquals(FakeUuids.gpu("n1", 2), a.gpus().get(2).uuid());
        assertNotEquals(FakeUuids.gpu("n1", 2), FakeUuids.gpu("n2", 2));
        assertEquals("GPU-", FakeUuids.gpu("x", 0).substring(0, 4));
    }

    @Test
    void presetsHaveUniqueNamesAndAreFoundByName() {
        Set<String> names = new HashSet<>();
        for (MachineType t : Machines.all()) {
            assertTrue(names.add(t.name()), "duplicate preset " + t.name());
            assertEquals(t, Machines.byName(t.name()));
            assertEquals(t.gpuCount(), t.node("x").gpus().size());
        }
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> Machines.byName("dgx-2"));
        assertEquals("machine", e.field());
        assertTrue(e.getMessage().contains("dgx-h100"), e.getMessage());
    }

    @Test
    void badMachineTypesAreRefusedNamingTheField() {
        Topology two = Topology.uniform(2, new GpuLink.NvLink(2));
        InvalidValueException size = assertThrows(InvalidValueException.class,
                () -> new MachineType("m", "M", "Tesla T4", GpuDevice.GIB, List.of(0, 0, 0), two));
        assertEquals("machineType[m].topology.size", size.field());
        InvalidValueException mem = assertThrows(InvalidValueException.class,
                () -> new MachineType("m", "M", "Tesla T4", 0, List.of(0, 0), two));
        assertEquals("machineType[m].memoryBytes", mem.field());
        assertThrows(InvalidValueException.class, () -> FakeUuids.gpu("n", -1));
        assertThrows(InvalidValueException.class, () -> Machines.hybridCubeMesh(9));
    }

    @Test
    void fakeDiscoveryReportsTheMachineWithoutLabels() {
        GpuDiscovery d = Machines.DGX_1V.discovery();
        Node n = d.discover("self");
        assertEquals(Map.of(), n.labels());
        assertEquals(Machines.DGX_1V.topology(), n.topology());
        assertEquals(Machines.DGX_1V.node("self").gpus(), n.gpus());
        d.close();
        IllegalStateException closed = assertThrows(IllegalStateException.class, () -> d.discover("self"));
        assertTrue(closed.getMessage().contains("closed"));
        assertInstanceOf(FakeGpuDiscovery.class, d);
    }
}
