package io.qgpu.kubernetes.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.fabric8.kubernetes.api.model.NodeSelectorBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.CapacityRequestPolicyBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.Device;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAttribute;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAttributeBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceCapacity;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceCapacityBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSliceBuilder;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.Health;
import io.qgpu.api.HostCapacity;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.Node;
import io.qgpu.api.TopologyLevel;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The nodes and problems {@link SliceInventory} reads from ResourceSlices: each rule, each problem's text. */
class SliceInventoryTest {
    static final long GIB = 1L << 30;

    /** A device of driver gpu.qgpu.io, built up attribute by attribute. */
    static final class Dev {
        final String name;
        final Map<String, DeviceAttribute> attrs = new LinkedHashMap<>();
        final Map<String, DeviceCapacity> caps = new LinkedHashMap<>();
        Boolean shared = Boolean.TRUE;

        Dev(String name) {
            this.name = name;
        }

        Dev str(String k, String v) {
            attrs.put(k, new DeviceAttributeBuilder().withString(v).build());
            return this;
        }

        Dev num(String k, long v) {
            attrs.put(k, new DeviceAttributeBuilder().withInt(v).build());
            return this;
        }

        Dev without(String k) {
            attrs.remove(k);
            caps.remove(k);
            return this;
        }

        Dev cap(String k, String value) {
            caps.put(k, new DeviceCapacityBuilder().withValue(new Quantity(value)).build());
            return this;
        }

        Dev cap(String k, DeviceCapacity c) {
            caps.put(k, c);
            return this;
        }

        Dev shared(Boolean s) {
            shared = s;
            return this;
        }

        Device build() {
            return new DeviceBuilder().withName(name).withAttributes(attrs).withCapacity(caps).withAllowMultipleAllocations(shared).build();
        }
    }

    /** A GPU as qgpu's driver publishes it: uuid GPU-&lt;node&gt;-&lt;i&gt;, index i, an H100, 80Gi and 100 cores. */
    static Dev gpu(String node, int i) {
        return new Dev("gpu-" + i).str("uuid", "GPU-" + node + "-" + i).str("productName", "NVIDIA H100 80GB HBM3").num("index", i)
                .cap("memory", "80Gi").cap("cores", "100");
    }

    static ResourceSlice slice(String name, String node, String pool, long generation, long count, Dev... devices) {
        return new ResourceSliceBuilder().withNewMetadata().withName(name).endMetadata()
                .withNewSpec().withDriver("gpu.qgpu.io").withNodeName(node)
                .withNewPool().withName(pool).withGeneration(generation).withResourceSliceCount(count).endPool()
                .withDevices(Arrays.stream(devices).map(Dev::build).toList()).endSpec().build();
    }

    /** The node's one slice, as qgpu's driver publishes it (pool = node, generation 1, one slice). */
    static ResourceSlice slice(String node, Dev... devices) {
        return slice(node + "-gpu.qgpu.io", node, node, 1, 1, devices);
    }

    static DeviceCapacity range(String value, String def, String min, String max, String step) {
        return new DeviceCapacityBuilder().withValue(new Quantity(value)).withRequestPolicy(new CapacityRequestPolicyBuilder()
                .withDefault(def == null ? null : new Quantity(def)).withNewValidRange().withMin(min == null ? null : new Quantity(min))
                .withMax(max == null ? null : new Quantity(max)).withStep(step == null ? null : new Quantity(step)).endValidRange().build())
                .build();
    }

    static DeviceCapacity values(String value, String def, String... valid) {
        return new DeviceCapacityBuilder().withValue(new Quantity(value)).withRequestPolicy(new CapacityRequestPolicyBuilder()
                .withDefault(new Quantity(def)).withValidValues(Arrays.stream(valid).map(Quantity::new).toList()).build()).build();
    }

    static SliceInventory read(ResourceSlice... slices) {
        return SliceInventory.of(List.of(slices));
    }

    @Test
    void aSliceAsTheDriverPublishesItIsANodeForTheLedger() {
        Dev g0 = gpu("node-a", 0).num("numaNode", 0).str("resource.kubernetes.io/pcieRoot", "pci0000:18").str("nvlink", "*:18s")
                .cap("memory", range("79Gi", "79Gi", "1Gi", "79Gi", "1Gi")).cap("cores", range("100", "100", "5", "100", "5"))
                .cap("tenants", values("16", "1", "1"));
        Dev g1 = gpu("node-a", 1).num("numaNode", 1).str("resource.kubernetes.io/pcieRoot", "pci0000:2a").str("nvlink", "*:18s");
        SliceInventory inv = read(slice("node-a", g0, g1));
        assertEquals(List.of(), inv.problems());
        PublishedNode n = inv.node("node-a").orElseThrow();
        assertEquals(List.of(n), inv.nodes());
        Node node = n.node();
        assertEquals(Map.of(), node.labels());
        assertEquals(HostCapacity.untracked(), node.host());
        assertEquals(new GpuDevice("GPU-node-a-0", 0, "NVIDIA H100 80GB HBM3", 79 * GIB, Health.HEALTHY, 0, IsolationPolicy.BEST_EFFORT,
                Optional.empty()), node.gpus().get(0));
        assertEquals(80 * GIB, node.gpus().get(1).memoryBytes());
        assertEquals(new GpuLink.NvLink(18, TopologyLevel.SYSTEM, true), node.topology().link(0, 1));

        PublishedGpu p = n.gpu("GPU-node-a-0").orElseThrow();
        assertEquals(new PublishedGpu("node-a", "gpu-0", "GPU-node-a-0", new CapacityPolicy(79 * GIB, 79 * GIB, List.of(), GIB, 79 * GIB, GIB),
                new CapacityPolicy(100, 100, List.of(), 5, 100, 5), new CapacityPolicy(16, 1, List.of(1L), 0, 16, 0), true), p);
        PublishedGpu q = n.byDevice().get("gpu-1");
        assertEquals(CapacityPolicy.unrestricted(80 * GIB), q.memory());
        assertEquals(CapacityPolicy.unrestricted(100), q.cores());
        assertNull(q.tenants(), "tenants is optional");
    }

    @Test
    void otherDriversSlicesAreIgnored() {
        ResourceSlice theirs = new ResourceSliceBuilder().withNewMetadata().withName("nic").endMetadata().withNewSpec()
                .withDriver("nic.example.com").withNodeName("node-a").withNewPool().withName("node-a").withGeneration(1L)
                .withResourceSliceCount(1L).endPool().withDevices(new Dev("eth0").build()).endSpec().build();
        SliceInventory inv = read(theirs, slice("node-b", gpu("node-b", 0)));
        assertEquals(List.of(), inv.problems());
        assertEquals(List.of("node-b"), inv.nodes().stream().map(PublishedNode::name).toList());
    }

    @Test
    void onlyThePoolsHighestGenerationCountsAndOnlyWhenComplete() {
        // generation 1 had two GPUs; generation 2 (one GPU down) replaces it
        SliceInventory inv = read(slice("old", "node-a", "node-a", 1, 1, gpu("node-a", 0), gpu("node-a", 1)),
                slice("new", "node-a", "node-a", 2, 1, gpu("node-a", 0)));
        assertEquals(List.of(), inv.problems());
        assertEquals(List.of("gpu-0"), inv.node("node-a").orElseThrow().gpus().stream().map(PublishedGpu::device).toList());
        // a pool of two slices, both there: one node with both slices' devices, slices in name order
        SliceInventory two = read(slice("b", "node-a", "node-a", 3, 2, gpu("node-a", 1)), slice("a", "node-a", "node-a", 3, 2, gpu("node-a", 0)));
        assertEquals(List.of(), two.problems());
        assertEquals(List.of("gpu-0", "gpu-1"), two.node("node-a").orElseThrow().gpus().stream().map(PublishedGpu::device).toList());
        // one of two at the highest generation: incomplete, left out (the older, complete generation does not stand in)
        SliceInventory incomplete = read(slice("a", "node-a", "node-a", 3, 2, gpu("node-a", 0)),
                slice("old", "node-a", "node-a", 2, 1, gpu("node-a", 0)));
        assertEquals(List.of(), incomplete.nodes());
        assertEquals(List.of("pool node-a (generation 3) is incomplete: 1 of 2 ResourceSlices (a); left out until the driver has published all"),
                incomplete.problems());
        // slices of one generation that disagree on the count
        SliceInventory disagree = read(slice("a", "node-a", "node-a", 3, 2, gpu("node-a", 0)), slice("b", "node-a", "node-a", 3, 3, gpu("node-a", 1)));
        assertEquals(List.of(), disagree.nodes());
        assertEquals(List.of("pool node-a (generation 3): its ResourceSlices (a, b) give spec.pool.resourceSliceCount 2, 3, not one count; "
                + "left out"), disagree.problems());
    }

    @Test
    void aSliceMustNameItsNodeAndItsPool() {
        ResourceSlice all = new ResourceSliceBuilder(slice("everywhere", null, "shared", 1, 1, gpu("x", 0))).editSpec().withAllNodes(true).endSpec().build();
        ResourceSlice selected = new ResourceSliceBuilder(slice("some", null, "picked", 1, 1, gpu("y", 0))).editSpec()
                .withNodeSelector(new NodeSelectorBuilder().addNewNodeSelectorTerm().addNewMatchExpression().withKey("gpu").withOperator("Exists")
                        .endMatchExpression().endNodeSelectorTerm().build()).endSpec().build();
        ResourceSlice perDevice = new ResourceSliceBuilder(slice("per-device", null, "devices", 1, 1, gpu("z", 0))).editSpec()
                .withPerDeviceNodeSelection(true).endSpec().build();
        ResourceSlice noPool = new ResourceSliceBuilder(slice("nameless", "node-a", "x", 1, 1, gpu("node-a", 0))).editSpec().withPool(null).endSpec().build();
        SliceInventory inv = read(all, selected, perDevice, noPool, slice("node-b", gpu("node-b", 0)));
        assertEquals(List.of("node-b"), inv.nodes().stream().map(PublishedNode::name).toList());
        assertEquals(List.of(
                "ResourceSlice nameless: spec.pool.name is missing; left out",
                "ResourceSlice per-device (pool devices): no spec.nodeName (perDeviceNodeSelection); qgpu's allocator places the GPUs of one node; left out",
                "ResourceSlice some (pool picked): no spec.nodeName (a nodeSelector); qgpu's allocator places the GPUs of one node; left out",
                "ResourceSlice everywhere (pool shared): no spec.nodeName (allNodes); qgpu's allocator places the GPUs of one node; left out"),
                inv.problems());
    }

    @Test
    void aNodeTwoPoolsNameIsLeftOut() {
        SliceInventory inv = read(slice("node-a-gpu.qgpu.io", "node-a", "node-a", 1, 1, gpu("node-a", 0)),
                slice("renamed", "node-a", "node-a-old", 1, 1, gpu("node-a", 0)), slice("node-b", gpu("node-b", 0)));
        assertEquals(List.of("node-b"), inv.nodes().stream().map(PublishedNode::name).toList());
        assertEquals(List.of("node node-a is published by pools node-a and node-a-old of driver gpu.qgpu.io, which publishes one pool per node; "
                + "left out until one remains"), inv.problems());
    }

    @Test
    void severalNodesAtOnceByName() {
        SliceInventory inv = read(slice("node-c", gpu("node-c", 0)), slice("node-a", gpu("node-a", 0), gpu("node-a", 1)), slice("node-b", gpu("node-b", 0)));
        assertEquals(List.of("node-a", "node-b", "node-c"), inv.nodes().stream().map(PublishedNode::name).toList());
        assertEquals(2, inv.node("node-a").orElseThrow().node().gpus().size());
        assertEquals(Optional.empty(), inv.node("node-d"));
    }

    @Test
    void aDeviceNeedsItsUuidMemoryAndCores() {
        SliceInventory inv = read(slice("node-a", gpu("node-a", 0).without("uuid"), gpu("node-a", 1).without("memory"),
                gpu("node-a", 2).without("cores"), gpu("node-a", 3).without("tenants"), gpu("node-a", 4).num("uuid", 4)));
        assertEquals(List.of("gpu-3"), inv.node("node-a").orElseThrow().gpus().stream().map(PublishedGpu::device).toList());
        assertEquals(List.of(
                "ResourceSlice node-a-gpu.qgpu.io device gpu-0: no string attribute uuid; left out",
                "ResourceSlice node-a-gpu.qgpu.io device gpu-1: no capacity memory; left out",
                "ResourceSlice node-a-gpu.qgpu.io device gpu-2: no capacity cores; left out",
                "ResourceSlice node-a-gpu.qgpu.io device gpu-4: no string attribute uuid; left out"), inv.problems());
    }

    @Test
    void quantitiesAreReadExactly() {
        SliceInventory inv = read(slice("node-a", gpu("node-a", 0).cap("memory", "80Gi"), gpu("node-a", 1).cap("memory", "81559Mi"),
                gpu("node-a", 2).cap("memory", "85899345920"), gpu("node-a", 3).cap("memory", "1.5Gi").cap("cores", "1e2")));
        assertEquals(List.of(), inv.problems());
        assertEquals(List.of(80 * GIB, 81_559L << 20, 85_899_345_920L, 3L << 29),
                inv.node("node-a").orElseThrow().gpus().stream().map(g -> g.memory().value()).toList());
        assertEquals(100, inv.node("node-a").orElseThrow().gpus().get(3).cores().value());
    }

    @Test
    void aQuantityThatIsNotAWholeNumberIsAProblemForItsDevice() {
        SliceInventory inv = read(slice("node-a",
                gpu("node-a", 0).cap("memory", "1.5"),
                gpu("node-a", 1).cap("cores", "100m"),
                gpu("node-a", 2).cap("memory", "12x"),
                gpu("node-a", 3).cap("cores", "-5"),
                gpu("node-a", 4).cap("memory", "0"),
                gpu("node-a", 5).cap("memory", "9223372036854775808"),
                gpu("node-a", 6).cap("cores", range("100", "100", "5.5", "100", "5")),
                gpu("node-a", 7).cap("tenants", values("4", "1", "1", "0.5")),
                gpu("node-a", 8)));
        assertEquals(List.of("gpu-8"), inv.node("node-a").orElseThrow().gpus().stream().map(PublishedGpu::device).toList());
        String at = "ResourceSlice node-a-gpu.qgpu.io device ";
        assertEquals(List.of(
                at + "gpu-0: capacity memory.value = 1.5: must be a whole number up to 9223372036854775807 (it is 1.5); left out",
                at + "gpu-1: capacity cores.value = 100m: must be a whole number up to 9223372036854775807 (it is 0.100); left out",
                at + "gpu-2: capacity memory.value = 12x: not a quantity (Character x is neither a decimal digit number, decimal point, "
                        + "nor \"e\" notation exponential mark.); left out",
                at + "gpu-3: capacity cores.value = -5: must not be negative; left out",
                at + "gpu-4: capacity memory = 0: must be above 0 bytes; left out",
                at + "gpu-5: capacity memory.value = 9223372036854775808: must be a whole number up to 9223372036854775807; left out",
                at + "gpu-6: capacity cores.requestPolicy.validRange.min = 5.5: must be a whole number up to 9223372036854775807 (it is 5.5); left out",
                at + "gpu-7: capacity tenants.requestPolicy.validValues[1] = 0.5: must be a whole number up to 9223372036854775807 (it is 0.5); left out"),
                inv.problems());
    }

    @Test
    void eachFormOfRequestPolicyBecomesACapacityPolicy() {
        DeviceCapacity both = new DeviceCapacityBuilder(values("16", "1", "1")).editRequestPolicy().withNewValidRange().withMin(new Quantity("1"))
                .endValidRange().endRequestPolicy().build();
        SliceInventory inv = read(slice("node-a",
                gpu("node-a", 0).cap("cores", range("100", "100", "5", null, null)),
                gpu("node-a", 1).cap("cores", range("100", null, "5", "50", "5")),
                gpu("node-a", 2).cap("cores", values("100", "100", "100", "50")),
                gpu("node-a", 3).cap("cores", new DeviceCapacityBuilder().withValue(new Quantity("100")).withNewRequestPolicy()
                        .withDefault(new Quantity("20")).endRequestPolicy().build()),
                gpu("node-a", 4).cap("tenants", both),
                gpu("node-a", 5).cap("cores", range("100", "100", null, "100", "5")),
                gpu("node-a", 6).cap("cores", range("100", "100", "0", "100", "0"))));
        List<PublishedGpu> gpus = inv.node("node-a").orElseThrow().gpus();
        assertEquals(List.of("gpu-0", "gpu-1", "gpu-2", "gpu-3"), gpus.stream().map(PublishedGpu::device).toList());
        assertEquals(new CapacityPolicy(100, 100, List.of(), 5, 100, 0), gpus.get(0).cores(), "no max: the value; no step: 0");
        assertEquals(new CapacityPolicy(100, 100, List.of(), 5, 50, 5), gpus.get(1).cores(), "no default: the value");
        assertEquals(new CapacityPolicy(100, 100, List.of(50L, 100L), 0, 100, 0), gpus.get(2).cores(), "validValues ascending");
        assertEquals(new CapacityPolicy(100, 20, List.of(), 0, 100, 0), gpus.get(3).cores(), "a default alone");
        String at = "ResourceSlice node-a-gpu.qgpu.io device ";
        assertEquals(List.of(
                at + "gpu-4: capacity tenants.requestPolicy has both validValues and validRange: at most one is allowed; left out",
                at + "gpu-5: capacity cores.requestPolicy.validRange.min is missing; left out",
                at + "gpu-6: capacity cores.requestPolicy.validRange.step = 0: must be above 0; left out"), inv.problems());
    }

    @Test
    void allowMultipleAllocationsIsShared() {
        SliceInventory inv = read(slice("node-a", gpu("node-a", 0).shared(true), gpu("node-a", 1).shared(false), gpu("node-a", 2).shared(null)));
        assertEquals(List.of(true, false, false), inv.node("node-a").orElseThrow().gpus().stream().map(PublishedGpu::shared).toList());
    }

    @Test
    void whatADeviceLeavesOutTakesItsDefault() {
        Dev bare = new Dev("only").str("gpu.qgpu.io/uuid", "GPU-bare").cap("memory", "16Gi").cap("cores", "100");
        SliceInventory inv = read(slice("node-a", gpu("node-a", 0), bare));
        assertEquals(List.of(), inv.problems());
        GpuDevice g = inv.node("node-a").orElseThrow().node().gpus().get(1);
        assertEquals("GPU-bare", g.uuid(), "the attribute qualified with the driver's domain");
        assertEquals(1, g.index(), "its position in the node");
        assertEquals("unknown", g.model());
        assertEquals(-1, g.numaNode());
        assertEquals(new GpuLink.Pcie(TopologyLevel.SYSTEM), inv.node("node-a").orElseThrow().node().topology().link(0, 1));
    }

    @Test
    void aSecondDeviceWithAUuidOrIndexAlreadySeenIsLeftOut() {
        SliceInventory inv = read(slice("node-a", gpu("node-a", 0), gpu("node-a", 1).str("uuid", "GPU-node-a-0"),
                new Dev("gpu-x").str("uuid", "GPU-x").num("index", 0).cap("memory", "1Gi").cap("cores", "100"),
                new Dev("gpu-y").str("uuid", "GPU-y").cap("memory", "1Gi").cap("cores", "100"),
                gpu("node-a", 1).str("uuid", "GPU-z").num("index", -1)));
        assertEquals(List.of("gpu-0", "gpu-y"), inv.node("node-a").orElseThrow().gpus().stream().map(PublishedGpu::device).toList());
        assertEquals(1, inv.node("node-a").orElseThrow().node().gpus().get(1).index(), "gpu-y: its position");
        String at = "ResourceSlice node-a-gpu.qgpu.io device ";
        assertEquals(List.of(
                at + "gpu-1: uuid = GPU-node-a-0: another device of node node-a has it; left out",
                at + "gpu-x: index = 0: another device of node node-a has it; left out",
                at + "gpu-1: attribute index = -1: must be a whole number from 0 to 2147483647; left out"), inv.problems());
    }

    @Test
    void theTopologyComesFromPcieRootNumaAndNvLink() {
        // a DGX-1V-like quad: 0-1 under one root and NV1, 0-3 NV2 across roots on one NUMA node, 2 on another NUMA node
        SliceInventory inv = read(slice("node-a",
                gpu("node-a", 0).num("numaNode", 0).str("resource.kubernetes.io/pcieRoot", "pci0000:18").str("nvlink", "1:1,3:2"),
                gpu("node-a", 1).num("numaNode", 0).str("resource.kubernetes.io/pcieRoot", "pci0000:18").str("nvlink", "0:1"),
                gpu("node-a", 2).num("numaNode", 1).str("resource.kubernetes.io/pcieRoot", "pci0000:86"),
                gpu("node-a", 3).num("numaNode", 0).str("resource.kubernetes.io/pcieRoot", "pci0000:3a").str("nvlink", "0:2")));
        assertEquals(List.of(), inv.problems());
        Node n = inv.node("node-a").orElseThrow().node();
        assertEquals(new GpuLink.NvLink(1, TopologyLevel.HOSTBRIDGE, false), n.topology().link(0, 1));
        assertEquals(new GpuLink.NvLink(2, TopologyLevel.NODE, false), n.topology().link(0, 3));
        assertEquals(new GpuLink.Pcie(TopologyLevel.SYSTEM), n.topology().link(0, 2));
        assertEquals(new GpuLink.Pcie(TopologyLevel.NODE), n.topology().link(1, 3));
        assertEquals(new GpuLink.Pcie(TopologyLevel.SYSTEM), n.topology().link(2, 3));
        // an NVSwitch box: the star covers every other GPU; a GPU left out of the slice is simply not there
        SliceInventory sw = read(slice("node-b", gpu("node-b", 0).str("nvlink", "*:18s"), gpu("node-b", 2).str("nvlink", "*:18s"),
                gpu("node-b", 3).str("nvlink", "*:18s,0:17s")));
        Node b = sw.node("node-b").orElseThrow().node();
        assertEquals(new GpuLink.NvLink(18, TopologyLevel.SYSTEM, true), b.topology().link(0, 1));
        assertEquals(new GpuLink.NvLink(18, TopologyLevel.SYSTEM, true), b.topology().link(1, 2));
        // 3 says 17 lanes to 0, 0 says 18 to 3: the fewer, named
        assertEquals(new GpuLink.NvLink(17, TopologyLevel.SYSTEM, true), b.topology().link(0, 2));
        assertEquals(List.of("ResourceSlice node-b-gpu.qgpu.io device gpu-0 and device gpu-3 disagree on their NVLinks: nvlink of gpu-0 gives "
                + "18 lanes through an NVSwitch to index 3, of gpu-3 17 lanes through an NVSwitch to index 0; taken as 17 lanes through an NVSwitch"),
                sw.problems());
        // one side only: no NVLink
        SliceInventory one = read(slice("node-c", gpu("node-c", 0).str("nvlink", "1:4"), gpu("node-c", 1)));
        assertEquals(new GpuLink.Pcie(TopologyLevel.SYSTEM), one.node("node-c").orElseThrow().node().topology().link(0, 1));
        assertEquals(List.of("ResourceSlice node-c-gpu.qgpu.io device gpu-0 and device gpu-1 disagree on their NVLinks: nvlink of gpu-0 gives "
                + "4 lanes to index 1, of gpu-1 no NVLink to index 0; taken as no NVLink"), one.problems());
    }

    @Test
    void aWrongOptionalAttributeIsNamedAndIgnored() {
        SliceInventory inv = read(slice("node-a",
                gpu("node-a", 0).str("numaNode", "zero").num("resource.kubernetes.io/pcieRoot", 0).str("nvlink", "1:4,1:2"),
                gpu("node-a", 1).num("numaNode", -3).num("nvlink", 4)));
        Node n = inv.node("node-a").orElseThrow().node();
        assertEquals(List.of(-1, -1), n.gpus().stream().map(GpuDevice::numaNode).toList());
        assertEquals(new GpuLink.Pcie(TopologyLevel.SYSTEM), n.topology().link(0, 1));
        String at = "ResourceSlice node-a-gpu.qgpu.io ";
        assertEquals(List.of(
                at + "device gpu-0: attribute numaNode = \"zero\": must be a whole number from 0; ignored (NUMA node unknown)",
                at + "device gpu-0: attribute resource.kubernetes.io/pcieRoot = 0: must be a string naming the PCIe root; ignored (PCIe root unknown)",
                at + "device gpu-0: attribute nvlink = \"1:4,1:2\": entry 2 \"1:2\" names GPU 1 a second time; ignored (no NVLink taken for this GPU)",
                at + "device gpu-1: attribute numaNode = -3: must be a whole number from 0; ignored (NUMA node unknown)",
                at + "device gpu-1: attribute nvlink = 4: must be a string; ignored (no NVLink taken for this GPU)"), inv.problems());
        assertEquals(2, n.gpus().size(), "the GPUs stay");
    }
}
