package io.qgpu.nvml.discovery;

import static io.qgpu.nvml.discovery.NvLinkAsserts.assertNvLink;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.Health;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.Node;
import io.qgpu.api.TopologyLevel;
import io.qgpu.api.spi.GpuHealthEvent;
import io.qgpu.nvml.FakeNvmlTestBase;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.NvmlComputeCapability;
import io.qgpu.nvml.NvmlException;
import io.qgpu.nvml.NvmlMigMode;
import io.qgpu.nvml.NvmlReturn;
import io.qgpu.nvml.internal.FakeNvml;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Discovery of the fake machines: devices, NVML facts and the link of every pair. */
class NvmlDiscoveryTest extends FakeNvmlTestBase {

    private static NvmlInventory inventory() {
        try (NvmlDiscovery d = NvmlDiscovery.builder().libraryPath(FakeNvml.path()).build()) {
            return d.inventory("node-a");
        }
    }

    @Test
    void dgxH100IsEightGpusAllOnNvSwitch() {
        NvmlInventory inv = inventory();
        Node node = inv.node();
        assertEquals("node-a", node.name());
        assertEquals(Map.of(), node.labels());
        assertEquals(8, node.gpus().size());
        for (int i = 0; i < 8; i++) {
            GpuDevice g = node.gpus().get(i);
            assertEquals(i, g.index());
            assertEquals("NVIDIA H100 80GB HBM3", g.model());
            assertEquals(80 * GpuDevice.GIB, g.memoryBytes());
            assertEquals(i < 4 ? 0 : 1, g.numaNode());
            assertEquals(Health.HEALTHY, g.health());
            assertEquals(IsolationPolicy.BEST_EFFORT, g.isolationPolicy());
            NvmlDeviceInfo info = inv.devices().get(i);
            assertEquals(g.uuid(), info.uuid());
            assertEquals(i, info.minorNumber());
            assertEquals(new NvmlComputeCapability(9, 0), info.computeCapability());
            assertEquals(NvmlMigMode.State.DISABLED, info.migMode().current());
            assertEquals(18, info.activeNvLinks());
            assertEquals(18, info.nvSwitchLinks());
            assertEquals(512L << 20, info.memoryReservedBytes());
        }
        assertEquals("00000000:18:00.0", inv.devices().get(0).pciBusId());
        assertEquals("00000000:DB:00.0", inv.devices().get(7).pciBusId());
        for (int a = 0; a < 8; a++) {
            for (int b = a + 1; b < 8; b++) {
                assertNvLink(18, true, inv, a, b, inv.link(a, b), a + "-" + b);
            }
        }
        assertEquals("580.65.06", inv.driverVersion());
        assertEquals("13.580.65.06", inv.nvmlVersion());
        assertEquals(List.of(), inv.unreachable());
        assertEquals(8, node.gpus().stream().map(GpuDevice::uuid).distinct().count());
    }

    @Test
    void t4x4IsPcieAcrossTwoNumaNodes() {
        FakeNvml.machine(FAKE, "t4x4");
        NvmlInventory inv = inventory();
        assertEquals(4, inv.node().gpus().size());
        assertEquals(List.of(0, 0, 1, 1), inv.node().gpus().stream().map(GpuDevice::numaNode).toList());
        assertEquals(16 * GpuDevice.GIB, inv.node().gpus().get(3).memoryBytes());
        assertEquals(new GpuLink.Pcie(TopologyLevel.HOSTBRIDGE), inv.link(0, 1));
        assertEquals(new GpuLink.Pcie(TopologyLevel.HOSTBRIDGE), inv.link(2, 3));
        for (int[] p : new int[][] {{0, 2}, {0, 3}, {1, 2}, {1, 3}}) {
            assertEquals(new GpuLink.Pcie(TopologyLevel.SYSTEM), inv.link(p[0], p[1]));
        }
        NvmlDeviceInfo t4 = inv.devices().get(0);
        assertEquals(NvmlMigMode.NOT_SUPPORTED, t4.migMode());
        assertEquals(new NvmlComputeCapability(7, 5), t4.computeCapability());
        assertEquals(0, t4.activeNvLinks());
    }

    @Test
    void directNvLinkBridgesCountLanesToTheirPeer() {
        FakeNvml.machine(FAKE, "a100-bridged");
        NvmlInventory inv = inventory();
        assertNvLink(12, false, inv, 0, 1, inv.link(0, 1));
        assertNvLink(12, false, inv, 2, 3, inv.link(2, 3));
        // the bridged pair still knows where it meets on PCIe (the tie-break between equal NVLink pairs)
        assertEquals(io.qgpu.api.TopologyLevel.HOSTBRIDGE, inv.link(0, 1).pcieLevel());
        assertEquals(new GpuLink.Pcie(TopologyLevel.SYSTEM), inv.link(1, 2));
        assertEquals(0, inv.devices().get(0).nvSwitchLinks(), "the remote is a GPU, not a switch");
        assertEquals(12, inv.devices().get(0).activeNvLinks());
        // a link down on one side only: the pair counts the lanes both sides agree on
        FAKE.fake_nvml_set_link(1, 0, 0);
        FAKE.fake_nvml_set_link(1, 1, 0);
        assertNvLink(10, false, inventory(), 0, 1, inventory().link(0, 1));
    }

    @Test
    void nvSwitchLanesAreTheSmallerSwitchLinkCount() {
        FAKE.fake_nvml_set_link(3, 0, 0);
        FAKE.fake_nvml_set_link(3, 17, 0);
        NvmlInventory inv = inventory();
        assertNvLink(16, true, inv, 3, 5, inv.link(3, 5));
        assertNvLink(16, true, inv, 0, 3, inv.link(0, 3));
        assertNvLink(18, true, inv, 0, 5, inv.link(0, 5));
        // all links of GPU 4 down: it falls back to PCIe
        for (int l = 0; l < 18; l++) {
            FAKE.fake_nvml_set_link(4, l, 0);
        }
        NvmlInventory without4 = inventory();
        assertEquals(new GpuLink.Pcie(TopologyLevel.SYSTEM), without4.link(0, 4));
        assertEquals(new GpuLink.Pcie(TopologyLevel.NODE), without4.link(4, 5));
        assertEquals("SYS", without4.link(0, 4).label());
    }

    @Test
    void gpuNumaIdIsUnknownWithoutTheOptionalSymbolWhileTheAffinityStays() {
        FakeNvml old = FakeNvml.control(FakeNvml.oldPath());
        FakeNvml.machine(old, "dgx-h100");
        try (NvmlDiscovery d = NvmlDiscovery.builder().libraryPath(FakeNvml.oldPath()).build()) {
            NvmlInventory inv = d.inventory("old");
            assertTrue(inv.devices().stream().allMatch(g -> g.gpuNumaNode() == -1));
            assertEquals(List.of(0, 0, 0, 0, 1, 1, 1, 1), inv.node().gpus().stream().map(GpuDevice::numaNode).toList(),
                    "the NUMA node comes from the memory affinity");
        }
    }

    @Test
    void lostGpuIsLeftOutAndReportedUnhealthy() {
        List<GpuHealthEvent> events = new ArrayList<>();
        try (Nvml nvml = open()) {
            nvml.addHealthListener(events::add);
            String uuid5 = nvml.device(5).uuid();
            FAKE.fake_nvml_gpu_lost_after(5, 0);
            NvmlInventory inv = NvmlDiscovery.builder().session(nvml).build().inventory("n");
            assertEquals(7, inv.node().gpus().size());
            assertEquals(-1, inv.node().positionOf(uuid5));
            assertEquals(1, inv.unreachable().size());
            assertTrue(inv.unreachable().get(0).contains("index 5"), inv.unreachable().toString());
            assertEquals(List.of(0, 1, 2, 3, 4, 6, 7), inv.node().gpus().stream().map(GpuDevice::index).toList());
            assertNvLink(18, true, inv, 4, 5, inv.link(4, 5), "positions 4 and 5 are GPUs 4 and 6");
            assertEquals(1, events.size());
            assertEquals(uuid5, events.get(0).gpuUuid());
            assertEquals(Health.UNHEALTHY, nvml.health(uuid5));
        }
    }

    @Test
    void gpuLostWhileLinkingIsDroppedAndLinksRedone() {
        FakeNvml.machine(FAKE, "t4x4");
        try (Nvml nvml = open()) {
            // 12 device calls per GPU while reading facts (UUID, index, name, memory, minor, PCI, CC, MIG,
            // NUMA id, memory affinity, CPU affinity, NVLink state = 12): lost on its first topology query
            FAKE.fake_nvml_gpu_lost_after(2, 12);
            NvmlInventory inv = NvmlDiscovery.builder().session(nvml).build().inventory("n");
            assertEquals(List.of(0, 1, 3), inv.node().gpus().stream().map(GpuDevice::index).toList());
            assertEquals(new GpuLink.Pcie(TopologyLevel.SYSTEM), inv.link(1, 2));
            assertEquals(1, inv.unreachable().size(), inv.unreachable().toString());
            assertTrue(inv.unreachable().get(0).contains("GPU_IS_LOST"), inv.unreachable().toString());
            assertEquals(1, nvml.unhealthyGpus().size());
        }
    }

    @Test
    void unhealthyGpusAreDiscoveredUnhealthy() {
        try (Nvml nvml = open()) {
            String uuid = nvml.device(1).uuid();
            nvml.reportHealth(GpuHealthEvent.xid(uuid, 79, "Xid 79"));
            Node node = NvmlDiscovery.builder().session(nvml).isolationPolicy(IsolationPolicy.FIXED_SHARE).build()
                    .discover("n");
            assertEquals(Health.UNHEALTHY, node.gpu(uuid).orElseThrow().health());
            assertEquals(Health.HEALTHY, node.gpus().get(0).health());
            assertEquals(IsolationPolicy.FIXED_SHARE, node.gpus().get(0).isolationPolicy());
        }
    }

    @Test
    void otherFailuresFailTheDiscovery() {
        FAKE.fake_nvml_set_fault("nvmlDeviceGetCudaComputeCapability", NvmlReturn.UNKNOWN.code(), 3, 1);
        try (NvmlDiscovery d = NvmlDiscovery.builder().libraryPath(FakeNvml.path()).build()) {
            NvmlException e = assertThrows(NvmlException.class, () -> d.discover("n"));
            assertEquals(NvmlReturn.UNKNOWN, e.result());
            assertTrue(e.gpu().orElseThrow().startsWith("GPU-"));
        }
    }

    @Test
    void builderRefusesBadInput() {
        try (Nvml nvml = open()) {
            InvalidValueException both = assertThrows(InvalidValueException.class,
                    () -> NvmlDiscovery.builder().session(nvml).libraryPath(FakeNvml.path()).build());
            assertEquals("discovery.libraryPath", both.field());
            NvmlDiscovery d = NvmlDiscovery.builder().session(nvml).build();
            assertEquals("discovery.nodeName", assertThrows(InvalidValueException.class, () -> d.discover(" ")).field());
            d.close();
            assertEquals(8, nvml.deviceCount(), "a discovery does not close a session it was given");
        }
    }


}
