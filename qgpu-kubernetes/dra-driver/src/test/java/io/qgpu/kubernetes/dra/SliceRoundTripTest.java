package io.qgpu.kubernetes.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.Device;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAttribute;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Health;
import io.qgpu.api.Node;
import io.qgpu.api.QgpuException;
import io.qgpu.api.Topology;
import io.qgpu.api.TopologyLevel;
import io.qgpu.kubernetes.allocator.CapacityPolicy;
import io.qgpu.kubernetes.allocator.PublishedGpu;
import io.qgpu.kubernetes.allocator.PublishedNode;
import io.qgpu.kubernetes.allocator.SliceInventory;
import io.qgpu.kubernetes.node.AgentChecks;
import io.qgpu.kubernetes.node.AgentStartup;
import io.qgpu.kubernetes.node.FakeNvmlControl;
import io.qgpu.kubernetes.node.dra.DraNames;
import io.qgpu.kubernetes.node.dra.PublishedCapacity;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.NvmlComputeCapability;
import io.qgpu.nvml.NvmlMigMode;
import io.qgpu.nvml.discovery.NvmlDeviceInfo;
import io.qgpu.nvml.discovery.NvmlDiscovery;
import io.qgpu.nvml.discovery.NvmlInventory;
import io.qgpu.nvml.discovery.NvmlPairFacts;
import io.qgpu.testkit.machines.MachineType;
import io.qgpu.testkit.machines.Machines;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The slice this driver publishes, read back by the DRA allocator ({@link SliceInventory}), gives the allocator the
 * node the driver's ledger has: for every machine the repository models (the fake NVML library's, through NVML
 * discovery as the driver runs; the testkit's presets and a 16-GPU NVSwitch box, as NVML would report them) the
 * same GPUs (UUID, index, model, NUMA node), the NVLink lanes of every pair and whether they go through an
 * NVSwitch, and the PCIe level as documented ({@code PHB} or closer becomes {@code PHB}; {@code NODE} and
 * {@code SYS} stay). And under each preset, the capacities' {@link CapacityPolicy} rounds a request to what the
 * node's {@link GranularityRules} accept, as kube-scheduler would ({@link SchedulerModel}).
 */
class SliceRoundTripTest {
    static final FakeNvmlControl FAKE = FakeNvmlControl.load();
    static final String NODE = "node-x";
    static final long MIB = 1L << 20;
    static final long GIB = 1L << 30;

    @AfterEach
    void noSessionLeft() {
        FAKE.fake_nvml_clear_faults();
        assertEquals(0, FAKE.fake_nvml_init_count(), "a test left an NVML session open");
    }

    /** The inventory of a fake NVML machine, as the driver discovers it (changed by {@code tweak} before discovery). */
    static NvmlInventory discover(String machine, Consumer<FakeNvmlControl> tweak) {
        try (Nvml nvml = AgentStartup.openNvml(Optional.of(FakeNvmlControl.path()), Optional.of(machine))) {
            tweak.accept(FAKE);
            return NvmlDiscovery.builder().session(nvml).build().inventory(NODE);
        }
    }

    /**
     * A testkit machine as NVML would report it: one PCI bus per GPU ({@code 0x08 * (i + 1)}), NUMA affinity its
     * NUMA node, each pair's common ancestor the PCIe level of its link, its NVLink lanes direct or through switches.
     */
    static NvmlInventory asNvml(Node node) {
        List<NvmlDeviceInfo> devices = new ArrayList<>();
        for (GpuDevice g : node.gpus()) {
            devices.add(new NvmlDeviceInfo(g.index(), g.uuid(), g.model(), g.memoryBytes(), -1, g.index(),
                    String.format(Locale.ROOT, "00000000:%02X:00.0", 0x08 * (g.index() + 1)), new NvmlComputeCapability(9, 0),
                    NvmlMigMode.NOT_SUPPORTED, -1, g.numaNode() >= 0 ? List.of(g.numaNode()) : List.of(), List.of(), 0, 0, 0,
                    List.of(), Health.HEALTHY));
        }
        List<NvmlPairFacts> pairs = new ArrayList<>();
        int n = node.gpus().size();
        for (int a = 0; a < n; a++) {
            for (int b = a + 1; b < n; b++) {
                GpuLink l = node.topology().link(a, b);
                pairs.add(new NvmlPairFacts(a, b, Optional.of(l.pcieLevel()), l.viaNvSwitch() ? 0 : l.nvLinkLanes(),
                        l.viaNvSwitch() ? l.nvLinkLanes() : 0, l));
            }
        }
        return new NvmlInventory(node, devices, pairs, "test", "test", List.of());
    }

    /** The documented PCIe level the allocator rebuilds from pcieRoot and numaNode: PHB or closer is PHB. */
    static TopologyLevel coarse(TopologyLevel nvml) {
        return nvml.nvmlValue() <= TopologyLevel.HOSTBRIDGE.nvmlValue() ? TopologyLevel.HOSTBRIDGE : nvml;
    }

    /**
     * Publishes these GPUs of the inventory under the rules, reads the slice back, and checks the node the
     * allocator gets against the driver's; returns it.
     */
    static PublishedNode roundTrip(NvmlInventory inv, NodeGpus gpus, List<NodeGpus.Gpu> published, GranularityRules rules) {
        ResourceSlice slice = SlicePublisher.slice(NODE, 7, gpus, published, rules);
        for (Device d : slice.getSpec().getDevices()) {
            assertEquals(List.of(), SchedulerModel.refusedByApiServer(d), d.getName());
            for (Map.Entry<String, DeviceAttribute> a : d.getAttributes().entrySet()) {
                String s = a.getValue().getString();
                assertTrue(s == null || s.length() <= DraNames.MAX_STRING_ATTRIBUTE, d.getName() + " " + a.getKey() + " = " + s);
            }
        }
        SliceInventory read = SliceInventory.of(List.of(slice));
        assertEquals(List.of(), read.problems());
        PublishedNode got = read.node(NODE).orElseThrow();
        Node want = inv.node();
        assertEquals(published.stream().map(NodeGpus.Gpu::uuid).toList(), got.node().gpus().stream().map(GpuDevice::uuid).toList());
        for (int i = 0; i < published.size(); i++) {
            GpuDevice w = published.get(i).device();
            GpuDevice g = got.node().gpus().get(i);
            String at = "GPU " + w.uuid();
            assertEquals(w.index(), g.index(), at);
            assertEquals(w.model(), g.model(), at);
            assertEquals(w.numaNode(), g.numaNode(), at);
            assertEquals(Health.HEALTHY, g.health(), at);
            assertEquals(published.get(i).published(rules).memoryBytes(), g.memoryBytes(), at);
            PublishedGpu p = got.gpus().get(i);
            assertEquals(published.get(i).name(), p.device());
            assertEquals(NODE, p.pool());
            assertTrue(p.shared());
            for (int j = i + 1; j < published.size(); j++) {
                GpuLink wl = want.topology().link(want.positionOf(w.uuid()), want.positionOf(published.get(j).uuid()));
                GpuLink gl = got.node().topology().link(i, j);
                String pair = "pair " + w.index() + "-" + published.get(j).device().index() + ": driver " + GpuLink.format(wl)
                        + ", allocator " + GpuLink.format(gl);
                assertEquals(wl.nvLinkLanes(), gl.nvLinkLanes(), pair);
                assertEquals(wl.viaNvSwitch(), gl.viaNvSwitch(), pair);
                assertEquals(coarse(wl.pcieLevel()), gl.pcieLevel(), pair);
            }
        }
        return got;
    }

    static PublishedNode roundTrip(NvmlInventory inv, GranularityRules rules) {
        NodeGpus gpus = new NodeGpus(inv);
        return roundTrip(inv, gpus, gpus.all(), rules);
    }

    static Stream<String> fakeMachines() {
        return AgentChecks.FAKE_MACHINES.stream();
    }

    @ParameterizedTest
    @MethodSource("fakeMachines")
    void eachFakeNvmlMachineReadsBackAsTheDriverSeesIt(String machine) {
        NvmlInventory inv = discover(machine, f -> { });
        PublishedNode got = roundTrip(inv, GranularityRules.ofDefaults());
        if (machine.equals("a100-mig")) {
            assertEquals(List.of(), got.gpus(), "MIG-enabled GPUs are not published");
        } else {
            assertFalse(got.gpus().isEmpty());
        }
    }

    @Test
    void aGpuLeftOutAndALinkDownReadBackExactly() {
        // dgx-h100 with link 0 of GPU 3 down: 17 lanes between GPU 3 and each other GPU, 18 elsewhere
        NvmlInventory inv = discover("dgx-h100", f -> assertEquals(0, f.fake_nvml_set_link(3, 0, 0)));
        assertEquals(new GpuLink.NvLink(17, TopologyLevel.NODE, true), inv.node().topology().link(0, 3));
        NodeGpus gpus = new NodeGpus(inv);
        List<NodeGpus.Gpu> all = gpus.all();
        roundTrip(inv, gpus, all, GranularityRules.ofDefaults());
        Device gpu0 = SlicePublisher.slice(NODE, 1, gpus, all, GranularityRules.ofDefaults()).getSpec().getDevices().get(0);
        assertEquals("*:18s,3:17s", gpu0.getAttributes().get(DraNames.ATTRIBUTE_NVLINK).getString());
        // GPU 5 unhealthy: left out of the slice, and out of the others' nvlink
        List<NodeGpus.Gpu> healthy = all.stream().filter(g -> g.info().index() != 5).toList();
        PublishedNode got = roundTrip(inv, gpus, healthy, GranularityRules.ofDefaults());
        assertEquals(7, got.node().gpus().size());
    }

    /** The testkit's machine presets, and NVSwitch boxes of 16 GPUs (one of them with a GPU on fewer lanes). */
    static Stream<Node> testkitMachines() {
        List<Node> out = new ArrayList<>();
        for (MachineType t : Machines.all()) {
            out.add(t.node(NODE));
        }
        List<Integer> twoSockets = IntStream.range(0, 16).mapToObj(i -> i / 8).toList();
        MachineType sixteen = new MachineType("nvswitch-16", "HGX-16", Machines.H100_80GB, 80 * GIB, twoSockets,
                Machines.nvSwitch(16, 18, (a, b) -> a / 8 == b / 8 ? TopologyLevel.NODE : TopologyLevel.SYSTEM));
        out.add(sixteen.node(NODE));
        // two GPUs per PCIe switch tree, GPU 9 with two links down
        Topology.Builder degraded = Topology.builder(16);
        for (int a = 0; a < 16; a++) {
            for (int b = a + 1; b < 16; b++) {
                TopologyLevel pcie = a / 2 == b / 2 ? TopologyLevel.MULTIPLE : a / 8 == b / 8 ? TopologyLevel.NODE : TopologyLevel.SYSTEM;
                degraded.link(a, b, new GpuLink.NvLink(a == 9 || b == 9 ? 16 : 18, pcie, true));
            }
        }
        out.add(new MachineType("nvswitch-16-degraded", "HGX-16", Machines.H100_80GB, 80 * GIB, twoSockets, degraded.build()).node(NODE));
        return out.stream();
    }

    @ParameterizedTest
    @MethodSource("testkitMachines")
    void eachTestkitMachineReadsBackAsItsTopology(Node machine) {
        NvmlInventory inv = asNvml(machine);
        PublishedNode got = roundTrip(inv, GranularityRules.ofDefaults());
        assertEquals(machine.gpus().size(), got.gpus().size());
    }

    @Test
    void theDgx1vHybridCubeMeshIsListedPerGpu() {
        NodeGpus gpus = new NodeGpus(asNvml(Machines.DGX_1V.node(NODE)));
        List<Device> devices = SlicePublisher.slice(NODE, 1, gpus, gpus.all(), GranularityRules.ofDefaults()).getSpec().getDevices();
        assertEquals("1:1,2:1,3:2,4:2", devices.get(0).getAttributes().get(DraNames.ATTRIBUTE_NVLINK).getString());
        assertEquals("3:1,4:2,5:1,6:2", devices.get(7).getAttributes().get(DraNames.ATTRIBUTE_NVLINK).getString());
        // PIX pairs share a root, named after the lower bus
        assertEquals("pci0000:08", devices.get(0).getAttributes().get(DraNames.ATTRIBUTE_PCIE_ROOT).getString());
        assertEquals("pci0000:08", devices.get(1).getAttributes().get(DraNames.ATTRIBUTE_PCIE_ROOT).getString());
        assertEquals("pci0000:18", devices.get(2).getAttributes().get(DraNames.ATTRIBUTE_PCIE_ROOT).getString());
    }

    /** Memory requests around each preset's units and an H100's and a T4's capacity. */
    static final long[] MEMORY = {0, 1, MIB - 1, MIB, MIB + 1, 255 * MIB, 256 * MIB, 257 * MIB, 512 * MIB, GIB - 1, GIB, GIB + 1,
            3 * GIB / 2, 10_000 * MIB, 10 * GIB, 15 * GIB + 1, 16 * GIB, 33 * GIB + 7, 79 * GIB, 80 * GIB - 1, 80 * GIB, 80 * GIB + 1};
    /** Compute requests in percent. */
    static final long[] CORES = {0, 1, 2, 3, 5, 7, 33, 50, 99, 100, 101};

    @ParameterizedTest
    @ValueSource(strings = {"qgpu", "hami", "gpu-manager"})
    void theCapacityPoliciesRoundToWhatTheRulesAccept(String preset) {
        GranularityRules rules = GranularityRules.preset(preset);
        for (String machine : List.of("dgx-h100", "t4x4")) {
            NvmlInventory inv = discover(machine, f -> { });
            NodeGpus gpus = new NodeGpus(inv);
            PublishedNode got = roundTrip(inv, gpus, gpus.all(), rules);
            ResourceSlice slice = SlicePublisher.slice(NODE, 1, gpus, gpus.all(), rules);
            Device device = slice.getSpec().getDevices().get(0);
            PublishedGpu gpu = got.gpus().get(0);
            PublishedCapacity published = gpus.all().get(0).published(rules);
            long smallest = Math.max(rules.memoryUnitBytes(), rules.minMemoryBytes());
            for (long m : MEMORY) {
                long rm = gpu.memory().round(m);
                assertEquals(SchedulerModel.amount(device.getCapacity().get(DraNames.CAPACITY_MEMORY), new Quantity(Long.toString(m)))
                        .map(x -> x.longValueExact()).orElse(-1L), rm, preset + " " + machine + " memory " + m);
                if (rm < 0) {
                    assertTrue(m > published.memoryBytes(), "only a request above the capacity gets no amount: " + m);
                    continue;
                }
                assertTrue(rm >= m && rm % rules.memoryUnitBytes() == 0 && rm >= smallest, preset + " memory " + m + " -> " + rm);
                assertTrue(rm == smallest || rm - rules.memoryUnitBytes() < m, "the smallest such amount: " + m + " -> " + rm);
                for (long c : CORES) {
                    long rc = gpu.cores().round(c);
                    assertEquals(SchedulerModel.amount(device.getCapacity().get(DraNames.CAPACITY_CORES), new Quantity(Long.toString(c)))
                            .map(x -> x.longValueExact()).orElse(-1L), rc, preset + " cores " + c);
                    if (rc < 0) {
                        assertTrue(c > 100, "only more than the whole GPU gets no amount: " + c);
                        continue;
                    }
                    assertTrue(rc >= c && (rc == rules.computeUnit() || rc - rules.computeUnit() < c), preset + " cores " + c + " -> " + rc);
                    Claim claim = Claim.builder("c").gpus(1).memoryBytes(rm).compute((int) rc, (int) rc).build();
                    try {
                        rules.validate(claim);
                    } catch (QgpuException e) {
                        throw new AssertionError(preset + ": " + m + " bytes, " + c + " cores rounded to " + rm + ", " + rc
                                + " are refused by the rules: " + e.getMessage(), e);
                    }
                }
            }
            assertEquals(1, gpu.tenants().round(0));
            assertEquals(1, gpu.tenants().round(1));
            assertEquals(-1, gpu.tenants().round(2), "one claim consumes one tenant");
            assertEquals(rules.maxTenants(gpus.all().get(0).device()), gpu.tenants().value());
            assertEquals(published.memoryBytes(), gpu.memory().defaultValue(), "no amount asked: the whole GPU");
            assertEquals(100, gpu.cores().defaultValue());
        }
    }
}
