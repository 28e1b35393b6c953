package io.qgpu.nvml.discovery;

import static io.qgpu.nvml.discovery.NvLinkAsserts.assertNvLink;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.Node;
import io.qgpu.api.TopologyLevel;
import io.qgpu.nvml.FakeNvmlTestBase;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.NvmlMigMode;
import io.qgpu.nvml.internal.FakeNvml;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Discovery on the fake machines that behave as real ones do: MIG seen from a container, NVLinks to GPUs
 * the process does not see, VMs whose NVLink remote side and PCIe topology NVML cannot give, and x86
 * NUMA. Each test fails on the discovery before these fixes (dropped MIG GPUs, NV12 toward a hidden GPU,
 * a failed VM discovery, NUMA -1 on x86).
 */
class RealMachineDiscoveryTest extends FakeNvmlTestBase {
    private static final long MIB = 1L << 20;

    private static NvmlInventory inventory(boolean migAsDevices) {
        try (Nvml nvml = open()) {
            return NvmlDiscovery.builder().session(nvml).migInstancesAsDevices(migAsDevices).build().inventory("n");
        }
    }

    @Test
    void migGpusSeenFromAContainerAreKeptAndTheirInstancesAreDevices() {
        FakeNvml.machine(FAKE, "a100-mig");
        NvmlInventory inv = inventory(true);
        assertEquals(List.of(), inv.unreachable());
        assertEquals(2, inv.devices().size());
        NvmlDeviceInfo gpu0 = inv.devices().get(0);
        assertFalse(gpu0.memoryKnown(), "NO_PERMISSION for the parent's memory");
        assertEquals(-1, gpu0.memoryTotalBytes());
        assertEquals(NvmlMigMode.State.ENABLED, gpu0.migMode().current());
        assertEquals(List.of(2, 3, 9, 10), gpu0.migInstances().stream().map(MigInstance::gpuInstanceId).toList());
        assertEquals(List.of(0, 1, 2, 3), gpu0.migInstances().stream().map(MigInstance::slot).toList());
        assertEquals(1, inv.devices().get(1).migInstances().size());

        Node node = inv.node();
        assertEquals(5, node.gpus().size(), "4 + 1 instances, no parent");
        assertTrue(node.gpus().stream().allMatch(g -> g.uuid().startsWith("MIG-")));
        assertEquals(List.of("NVIDIA A100-SXM4-80GB MIG 3g.40gb", "NVIDIA A100-SXM4-80GB MIG 2g.20gb",
                "NVIDIA A100-SXM4-80GB MIG 1g.10gb", "NVIDIA A100-SXM4-80GB MIG 1g.10gb",
                "NVIDIA A100-SXM4-80GB MIG 7g.80gb"), node.gpus().stream().map(GpuDevice::model).toList());
        assertEquals(List.of(40192 * MIB, 19968 * MIB, 9856 * MIB, 9856 * MIB, 81152 * MIB),
                node.gpus().stream().map(GpuDevice::memoryBytes).toList());
        assertEquals(List.of(2, 3, 4, 5, 6), node.gpus().stream().map(GpuDevice::index).toList(),
                "instances are numbered after the GPUs");
        for (int a = 0; a < 5; a++) {
            for (int b = a + 1; b < 5; b++) {
                assertEquals(new GpuLink.Pcie(TopologyLevel.SYSTEM), inv.link(a, b), "no P2P between MIG instances");
            }
        }
        MigInstance first = inv.migInstance(node.gpus().get(0).uuid()).orElseThrow();
        assertEquals(gpu0.uuid(), first.parentUuid());
        assertEquals(2, first.nodeIndex());
        assertEquals(gpu0, inv.deviceOf(node.gpus().get(3)).orElseThrow());
        // the physical pair keeps its raw facts: 12 switch links each
        assertNvLink(12, true, inv, 0, 1, inv.gpuLink(0, 1));
        assertEquals(Optional.of(TopologyLevel.MULTIPLE), inv.pair(0, 1).commonAncestor());
        assertEquals(12, inv.pair(0, 1).switchNvLinks());
    }

    @Test
    void migGpusAsParentsCarryTheSumOfTheirInstancesWhenTheMemoryIsRefused() {
        FakeNvml.machine(FAKE, "a100-mig");
        NvmlInventory inv = inventory(false);
        assertEquals(2, inv.node().gpus().size());
        assertEquals((40192 + 19968 + 2 * 9856) * MIB, inv.node().gpus().get(0).memoryBytes());
        assertEquals(81152 * MIB, inv.node().gpus().get(1).memoryBytes());
        assertEquals(-1, inv.devices().get(0).migInstances().get(0).nodeIndex());
        // a privileged process reads the parent itself
        FAKE.fake_nvml_set_container_view(0);
        NvmlInventory root = inventory(false);
        assertEquals(80L << 30, root.node().gpus().get(0).memoryBytes());
        assertTrue(root.devices().get(0).memoryKnown());
    }

    @Test
    void aBridgeToAGpuThisProcessDoesNotSeeIsNoLink() {
        FakeNvml.machine(FAKE, "a100-bridged");
        FAKE.fake_nvml_set_visible(0b0101); // a container given GPUs 0 and 2 of the box
        NvmlInventory inv = inventory(true);
        assertEquals(2, inv.devices().size());
        assertEquals(List.of(0, 1), inv.node().gpus().stream().map(GpuDevice::index).toList());
        assertEquals(new GpuLink.Pcie(TopologyLevel.SYSTEM), inv.link(0, 1), "was NV12 when such links counted as switch links");
        NvmlDeviceInfo d = inv.devices().get(0);
        assertEquals(12, d.activeNvLinks());
        assertEquals(0, d.nvSwitchLinks());
        assertEquals(0, d.unknownNvLinks());
        assertEquals(0, inv.pair(0, 1).directNvLinks());
    }

    @Test
    void vmLinksWhoseRemoteIsUnknownCountForNothingAndTheTopologyFallsBackToSys() {
        FakeNvml.machine(FAKE, "h100-vm");
        NvmlInventory inv = inventory(true);
        assertEquals(4, inv.node().gpus().size());
        assertEquals(List.of(), inv.unreachable());
        for (NvmlDeviceInfo d : inv.devices()) {
            assertEquals(18, d.activeNvLinks());
            assertEquals(18, d.unknownNvLinks());
            assertEquals(0, d.nvSwitchLinks());
            assertEquals(-1, d.numaNode());
            assertEquals("N/A", d.cpuAffinityText());
            assertEquals("N/A", d.numaAffinityText());
        }
        for (NvmlPairFacts p : inv.pairs()) {
            assertEquals(Optional.empty(), p.commonAncestor(), "NOT_SUPPORTED");
            assertEquals(new GpuLink.Pcie(TopologyLevel.SYSTEM), p.link());
        }
    }

    @Test
    void anUnknownRemoteTypeValueIsAnUnknownLinkNotASwitch() {
        for (int l = 0; l < 18; l++) {
            FAKE.fake_nvml_set_link_remote_type(0, l, 0xFF);
        }
        NvmlInventory inv = inventory(true);
        assertEquals(18, inv.devices().get(0).unknownNvLinks());
        assertEquals(0, inv.devices().get(0).nvSwitchLinks());
        assertEquals(new GpuLink.Pcie(TopologyLevel.NODE), inv.link(0, 1));
        assertEquals(new GpuLink.Pcie(TopologyLevel.SYSTEM), inv.link(0, 4));
        assertNvLink(18, true, inv, 1, 2, inv.link(1, 2));
    }

    @Test
    void aGpuLinkCountsTowardTheVisiblePeerAtItsFarEnd() {
        // GPU 0 of the DGX gets one direct link to GPU 3 (bus 0x5d) besides its 17 switch links
        FAKE.fake_nvml_set_link_remote_type(0, 0, 0);
        FAKE.fake_nvml_set_link_remote(0, 0, 0x5d);
        FAKE.fake_nvml_set_link_remote_type(3, 0, 0);
        FAKE.fake_nvml_set_link_remote(3, 0, 0x18);
        NvmlInventory inv = inventory(true);
        assertEquals(1, inv.pair(0, 3).directNvLinks());
        assertEquals(17, inv.pair(0, 3).switchNvLinks());
        assertNvLink(18, true, inv, 0, 3, inv.link(0, 3));
        assertNvLink(17, true, inv, 0, 1, inv.link(0, 1));
    }

    @Test
    void x86NumaComesFromTheMemoryAffinityAndTheGpuNumaIdStaysApart() {
        FakeNvml.machine(FAKE, "x86-numa");
        NvmlInventory inv = inventory(true);
        assertEquals(List.of(0, 0, 1, 1), inv.node().gpus().stream().map(GpuDevice::numaNode).toList(),
                "was -1 everywhere from nvmlDeviceGetNumaNodeId");
        assertTrue(inv.devices().stream().allMatch(d -> d.gpuNumaNode() == -1));
        assertEquals(List.of(0), inv.devices().get(1).numaAffinity());
        assertEquals("0-23,48-71", inv.devices().get(0).cpuAffinityText());
        assertEquals("24-47,72-95", inv.devices().get(3).cpuAffinityText());
        assertEquals(48, inv.devices().get(3).cpuAffinity().size());
        assertEquals("PIX", inv.link(0, 1).label());
        assertEquals("NODE", inv.link(2, 3).label());
        assertEquals("SYS", inv.link(1, 2).label());
    }

    @Test
    void rangesArePrintedAsNvidiaSmiDoes() {
        assertEquals("N/A", NvmlDeviceInfo.ranges(List.of()));
        assertEquals("0", NvmlDeviceInfo.ranges(List.of(0)));
        assertEquals("0-2,5,7-8", NvmlDeviceInfo.ranges(List.of(0, 1, 2, 5, 7, 8)));
    }


}
