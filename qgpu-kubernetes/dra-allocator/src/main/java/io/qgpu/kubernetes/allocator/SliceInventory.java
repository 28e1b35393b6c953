package io.qgpu.kubernetes.allocator;

import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.CapacityRequestPolicy;
import io.fabric8.kubernetes.api.model.resource.v1.CapacityRequestPolicyRange;
import io.fabric8.kubernetes.api.model.resource.v1.Device;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAttribute;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceCapacity;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSliceSpec;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.Topology;
import io.qgpu.api.TopologyLevel;
import io.qgpu.kubernetes.node.dra.DraNames;
import io.qgpu.kubernetes.node.dra.NvLinkAttribute;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * The nodes the ResourceSlices of driver {@value DraNames#DRIVER} publish, as the ledger and the placement engine
 * take them ({@link PublishedNode}: a qgpu {@link Node} and the published GPUs behind it), and what is wrong with
 * the slices, in words a person can act on (each problem names the slice, the device, the attribute or capacity
 * and the value).
 *
 * <p><b>Which slices count.</b> Slices of other drivers are ignored. The slices are grouped by
 * {@code spec.pool.name}; of a pool, only the slices of its highest {@code spec.pool.generation} count (older ones
 * are being replaced), and the pool is used only when it has {@code resourceSliceCount} of them: an incomplete pool
 * is left out and named. A slice must name its node ({@code spec.nodeName}); a slice for a node selector, for all
 * nodes or with per-device node selection is left out and named. qgpu's driver publishes one pool per node, named
 * after it: a node that two pools name is left out and named (the allocator does not merge them, as the same GPUs
 * could be counted twice; it waits until the driver has removed the other pool).
 *
 * <p><b>The GPUs.</b> Each device of the node's slices (slices by name, devices in slice order) is one GPU:
 * <ul>
 *   <li>{@value DraNames#ATTRIBUTE_UUID} (string) and the capacities {@value DraNames#CAPACITY_MEMORY} (bytes) and
 *       {@value DraNames#CAPACITY_CORES} (percent) are required; {@value DraNames#CAPACITY_TENANTS} is optional.
 *       Each capacity's value and {@code requestPolicy} ({@code default}, {@code validValues},
 *       {@code validRange {min, max, step}}) become a {@link CapacityPolicy}; quantities are read exactly
 *       ({@code 80Gi}, {@code 81559Mi}, {@code 85899345920}) and must be whole numbers, not negative
 *       ({@code memory} above 0). A device missing any of these, or with a value that is not such a number, is left
 *       out and named. {@code allowMultipleAllocations} says whether it may be shared.</li>
 *   <li>The qgpu GPU: the UUID; the {@value DraNames#ATTRIBUTE_INDEX} attribute (else its position in the node);
 *       model {@value DraNames#ATTRIBUTE_PRODUCT_NAME} (else {@code unknown}); memory the {@code memory}
 *       capacity's value; healthy (the driver publishes healthy GPUs only); {@value DraNames#ATTRIBUTE_NUMA_NODE}
 *       (else -1); the default isolation policy, open to both priority classes. A second device with a UUID or an
 *       index already seen on the node is left out and named.</li>
 *   <li>The topology, for each pair: NVLink when the {@value DraNames#ATTRIBUTE_NVLINK} attributes say so
 *       ({@link NvLinkAttribute}: the lanes, through an NVSwitch or not; where the two GPUs' attributes disagree,
 *       the fewer lanes, and the disagreement is named), else PCIe. The PCIe level, under an NVLink too, is
 *       coarser than NVML's: the same {@value DraNames#ATTRIBUTE_PCIE_ROOT} is {@code PHB}
 *       ({@link TopologyLevel#HOSTBRIDGE}), else the same NUMA node {@code NODE}, else {@code SYS}; {@code PIX} and
 *       {@code PXB} are not published. An optional attribute with a wrong type or value ({@code numaNode},
 *       {@code pcieRoot}, {@code nvlink}) is named and ignored; the GPU stays.</li>
 *   <li>No labels, and host CPU and memory not tracked ({@link io.qgpu.api.HostCapacity#untracked()}).</li>
 * </ul>
 * An attribute may also be written with the driver's domain ({@code gpu.qgpu.io/uuid}), as the API allows.
 *
 * <pre>{@code
 * SliceInventory inv = SliceInventory.of(client.resources(ResourceSlice.class).list().getItems());
 * inv.nodes();      // [PublishedNode[node=Node[name=node-a, ...], gpus=[...]], ...], by node name
 * inv.problems();   // ["pool node-b (generation 3) is incomplete: 1 of 2 ResourceSlices (b-0); left out until ...", ...]
 * }</pre>
 *
 * <p>Thread safety: {@link #of} is a pure function of the slices; the result is immutable.
 */
public final class SliceInventory {
    private final List<PublishedNode> nodes;
    private final List<String> problems;

    private SliceInventory(List<PublishedNode> nodes, List<String> problems) {
        this.nodes = List.copyOf(nodes);
        this.problems = List.copyOf(problems);
    }

    /** The nodes published, by name. */
    public List<PublishedNode> nodes() {
        return nodes;
    }

    /** The node with this name, if its slices publish it. */
    public Optional<PublishedNode> node(String name) {
        return nodes.stream().filter(n -> n.name().equals(name)).findFirst();
    }

    /** What is wrong with the slices, each naming the slice (or pool or node), the device, the field and the value. */
    public List<String> problems() {
        return problems;
    }

    /** Reads the nodes the slices of driver {@value DraNames#DRIVER} among {@code slices} publish. */
    public static SliceInventory of(Collection<ResourceSlice> slices) {
        List<String> problems = new ArrayList<>();
        Map<String, List<ResourceSlice>> pools = new TreeMap<>();
        for (ResourceSlice s : slices) {
            ResourceSliceSpec spec = s.getSpec();
            if (spec == null || !DraNames.DRIVER.equals(spec.getDriver())) {
                continue;
            }
            if (spec.getPool() == null || spec.getPool().getName() == null || spec.getPool().getName().isBlank()) {
                problems.add("ResourceSlice " + name(s) + ": spec.pool.name is missing; left out");
                continue;
            }
            pools.computeIfAbsent(spec.getPool().getName(), k -> new ArrayList<>()).add(s);
        }
        // node -> pool -> the pool's slices for that node, complete pools only
        Map<String, Map<String, List<ResourceSlice>>> byNode = new TreeMap<>();
        pools.forEach((pool, all) -> {
            long generation = all.stream().mapToLong(SliceInventory::generation).max().orElse(0);
            List<ResourceSlice> current = all.stream().filter(s -> generation(s) == generation)
                    .sorted(Comparator.comparing(SliceInventory::name)).toList();
            List<String> counts = current.stream().map(s -> String.valueOf(s.getSpec().getPool().getResourceSliceCount()))
                    .distinct().sorted().toList();
            String names = String.join(", ", current.stream().map(SliceInventory::name).toList());
            if (counts.size() != 1 || counts.contains("null")) {
                problems.add("pool " + pool + " (generation " + generation + "): its ResourceSlices (" + names
                        + ") give spec.pool.resourceSliceCount " + String.join(", ", counts) + ", not one count; left out");
                return;
            }
            long count = current.get(0).getSpec().getPool().getResourceSliceCount();
            if (current.size() != count) {
                problems.add("pool " + pool + " (generation " + generation + ") is incomplete: " + current.size() + " of " + count
                        + " ResourceSlices (" + names + "); left out until the driver has published all");
                return;
            }
            for (ResourceSlice s : current) {
                String node = s.getSpec().getNodeName();
                if (node == null || node.isBlank()) {
                    problems.add("ResourceSlice " + name(s) + " (pool " + pool + "): no spec.nodeName (" + selection(s.getSpec())
                            + "); qgpu's allocator places the GPUs of one node; left out");
                    continue;
                }
                byNode.computeIfAbsent(node, k -> new TreeMap<>()).computeIfAbsent(pool, k -> new ArrayList<>()).add(s);
            }
        });
        List<PublishedNode> nodes = new ArrayList<>();
        byNode.forEach((node, poolsOfNode) -> {
            if (poolsOfNode.size() > 1) {
                problems.add("node " + node + " is published by pools " + String.join(" and ", poolsOfNode.keySet()) + " of driver "
                        + DraNames.DRIVER + ", which publishes one pool per node; left out until one remains");
                return;
            }
            Map.Entry<String, List<ResourceSlice>> only = poolsOfNode.entrySet().iterator().next();
            node(node, only.getKey(), only.getValue(), problems).ifPresent(nodes::add);
        });
        return new SliceInventory(nodes, problems);
    }

    /** A GPU read from its device, before the node is built. */
    private record Read(PublishedGpu published, GpuDevice gpu, String where, Optional<String> pcieRoot,
                        Optional<NvLinkAttribute> nvlink) {
    }

    private static Optional<PublishedNode> node(String node, String pool, List<ResourceSlice> slices, List<String> problems) {
        List<Read> gpus = new ArrayList<>();
        Set<String> uuids = new HashSet<>();
        Set<Integer> indices = new HashSet<>();
        for (ResourceSlice s : slices) {
            List<Device> devices = s.getSpec().getDevices() == null ? List.of() : s.getSpec().getDevices();
            for (Device d : devices) {
                String where = "ResourceSlice " + name(s) + " device " + d.getName();
                try {
                    Read r = device(pool, name(s), d, gpus.size(), problems);
                    if (!uuids.add(r.gpu().uuid())) {
                        throw new Refused(DraNames.ATTRIBUTE_UUID + " = " + r.gpu().uuid() + ": another device of node " + node + " has it");
                    }
                    if (!indices.add(r.gpu().index())) {
                        uuids.remove(r.gpu().uuid());
                        throw new Refused(DraNames.ATTRIBUTE_INDEX + " = " + r.gpu().index() + ": another device of node " + node + " has it");
                    }
                    gpus.add(r);
                } catch (Refused e) {
                    problems.add(where + ": " + e.getMessage() + "; left out");
                }
            }
        }
        Topology.Builder topology = Topology.builder(gpus.size());
        for (int a = 0; a < gpus.size(); a++) {
            for (int b = a + 1; b < gpus.size(); b++) {
                topology.link(a, b, link(gpus.get(a), gpus.get(b), problems));
            }
        }
        try {
            Node n = new Node(node, Map.of(), gpus.stream().map(Read::gpu).toList(), topology.build());
            return Optional.of(new PublishedNode(n, gpus.stream().map(Read::published).toList()));
        } catch (InvalidValueException e) {
            problems.add("node " + node + " (pool " + pool + "): " + e.getMessage() + "; left out");
            return Optional.empty();
        }
    }

    private static Read device(String pool, String slice, Device d, int position, List<String> problems) {
        String where = "ResourceSlice " + slice + " device " + d.getName();
        Map<String, DeviceAttribute> attrs = d.getAttributes() == null ? Map.of() : d.getAttributes();
        String uuid = attribute(attrs, DraNames.ATTRIBUTE_UUID).map(DeviceAttribute::getString)
                .orElseThrow(() -> new Refused("no string attribute " + DraNames.ATTRIBUTE_UUID));
        int index = position;
        Optional<DeviceAttribute> ia = attribute(attrs, DraNames.ATTRIBUTE_INDEX);
        if (ia.isPresent()) {
            Long v = ia.get().getInt();
            if (v == null || v < 0 || v > Integer.MAX_VALUE) {
                throw new Refused("attribute " + DraNames.ATTRIBUTE_INDEX + " = " + value(ia.get()) + ": must be a whole number from 0 to "
                        + Integer.MAX_VALUE);
            }
            index = v.intValue();
        }
        String model = attribute(attrs, DraNames.ATTRIBUTE_PRODUCT_NAME).map(DeviceAttribute::getString).orElse("unknown");
        Map<String, DeviceCapacity> capacity = d.getCapacity() == null ? Map.of() : d.getCapacity();
        CapacityPolicy memory = capacity(capacity, DraNames.CAPACITY_MEMORY)
                .orElseThrow(() -> new Refused("no capacity " + DraNames.CAPACITY_MEMORY));
        if (memory.value() < 1) {
            throw new Refused("capacity " + DraNames.CAPACITY_MEMORY + " = " + memory.value() + ": must be above 0 bytes");
        }
        CapacityPolicy cores = capacity(capacity, DraNames.CAPACITY_CORES)
                .orElseThrow(() -> new Refused("no capacity " + DraNames.CAPACITY_CORES));
        CapacityPolicy tenants = capacity(capacity, DraNames.CAPACITY_TENANTS).orElse(null);
        int numa = -1;
        Optional<DeviceAttribute> na = attribute(attrs, DraNames.ATTRIBUTE_NUMA_NODE);
        if (na.isPresent()) {
            Long v = na.get().getInt();
            if (v == null || v < 0 || v > Integer.MAX_VALUE) {
                problems.add(where + ": attribute " + DraNames.ATTRIBUTE_NUMA_NODE + " = " + value(na.get())
                        + ": must be a whole number from 0; ignored (NUMA node unknown)");
            } else {
                numa = v.intValue();
            }
        }
        Optional<String> root = Optional.empty();
        Optional<DeviceAttribute> ra = Optional.ofNullable(attrs.get(DraNames.ATTRIBUTE_PCIE_ROOT));
        if (ra.isPresent()) {
            root = Optional.ofNullable(ra.get().getString()).filter(r -> !r.isBlank());
            if (root.isEmpty()) {
                problems.add(where + ": attribute " + DraNames.ATTRIBUTE_PCIE_ROOT + " = " + value(ra.get())
                        + ": must be a string naming the PCIe root; ignored (PCIe root unknown)");
            }
        }
        Optional<NvLinkAttribute> nvlink = Optional.empty();
        Optional<DeviceAttribute> la = attribute(attrs, DraNames.ATTRIBUTE_NVLINK);
        if (la.isPresent() && la.get().getString() == null) {
            problems.add(where + ": attribute " + DraNames.ATTRIBUTE_NVLINK + " = " + value(la.get())
                    + ": must be a string; ignored (no NVLink taken for this GPU)");
        } else if (la.isPresent()) {
            try {
                nvlink = Optional.of(NvLinkAttribute.parse(d.getName(), index, la.get().getString()));
            } catch (NvLinkAttribute.InvalidException e) {
                problems.add("ResourceSlice " + slice + " " + e.getMessage() + "; ignored (no NVLink taken for this GPU)");
            }
        }
        GpuDevice gpu;
        try {
            gpu = GpuDevice.builder(uuid).index(index).model(model).memoryBytes(memory.value()).numaNode(numa).build();
        } catch (InvalidValueException e) {
            throw new Refused(e.getMessage());
        }
        return new Read(new PublishedGpu(pool, d.getName(), uuid, memory, cores, tenants, Boolean.TRUE.equals(d.getAllowMultipleAllocations())),
                gpu, where, root, nvlink);
    }

    /** The link between two GPUs of a node, from their attributes. */
    private static GpuLink link(Read a, Read b, List<String> problems) {
        TopologyLevel pcie;
        if (a.pcieRoot().isPresent() && a.pcieRoot().equals(b.pcieRoot())) {
            pcie = TopologyLevel.HOSTBRIDGE;
        } else if (a.gpu().numaNode() >= 0 && a.gpu().numaNode() == b.gpu().numaNode()) {
            pcie = TopologyLevel.NODE;
        } else {
            pcie = TopologyLevel.SYSTEM;
        }
        Optional<NvLinkAttribute.Lanes> ab = a.nvlink().flatMap(n -> n.to(b.gpu().index()));
        Optional<NvLinkAttribute.Lanes> ba = b.nvlink().flatMap(n -> n.to(a.gpu().index()));
        Optional<NvLinkAttribute.Lanes> lanes = ab;
        if (!ab.equals(ba)) {
            lanes = ab.isEmpty() || ba.isEmpty() ? Optional.empty()
                    : ab.get().lanes() <= ba.get().lanes() ? ab : ba;
            problems.add(a.where() + " and device " + b.published().device() + " disagree on their NVLinks: "
                    + DraNames.ATTRIBUTE_NVLINK + " of " + a.published().device() + " gives " + lanesText(ab) + " to index "
                    + b.gpu().index() + ", of " + b.published().device() + " " + lanesText(ba) + " to index " + a.gpu().index()
                    + "; taken as " + lanesText(lanes));
        }
        return lanes.<GpuLink>map(l -> new GpuLink.NvLink(l.lanes(), pcie, l.nvSwitch())).orElseGet(() -> new GpuLink.Pcie(pcie));
    }

    private static String lanesText(Optional<NvLinkAttribute.Lanes> l) {
        return l.map(x -> x.lanes() + (x.nvSwitch() ? " lanes through an NVSwitch" : " lanes")).orElse("no NVLink");
    }

    /** An attribute by its name, or by its name qualified with the driver's domain. */
    private static Optional<DeviceAttribute> attribute(Map<String, DeviceAttribute> attrs, String name) {
        DeviceAttribute a = attrs.get(name);
        return Optional.ofNullable(a != null ? a : attrs.get(DraNames.DRIVER + "/" + name));
    }

    /** A capacity by its name (or qualified with the driver's domain) with its request policy. */
    private static Optional<CapacityPolicy> capacity(Map<String, DeviceCapacity> capacity, String name) {
        DeviceCapacity c = capacity.containsKey(name) ? capacity.get(name) : capacity.get(DraNames.DRIVER + "/" + name);
        if (c == null) {
            return Optional.empty();
        }
        String at = "capacity " + name;
        long value = whole(at + ".value", c.getValue());
        CapacityRequestPolicy p = c.getRequestPolicy();
        if (p == null) {
            return Optional.of(CapacityPolicy.unrestricted(value));
        }
        long def = p.getDefault() == null ? value : whole(at + ".requestPolicy.default", p.getDefault());
        boolean values = p.getValidValues() != null && !p.getValidValues().isEmpty();
        CapacityRequestPolicyRange range = p.getValidRange();
        if (values && range != null) {
            throw new Refused(at + ".requestPolicy has both validValues and validRange: at most one is allowed");
        }
        if (values) {
            List<Long> valid = new ArrayList<>();
            for (int i = 0; i < p.getValidValues().size(); i++) {
                valid.add(whole(at + ".requestPolicy.validValues[" + i + "]", p.getValidValues().get(i)));
            }
            valid.sort(Comparator.naturalOrder());
            return Optional.of(new CapacityPolicy(value, def, valid, 0, value, 0));
        }
        if (range == null) {
            return Optional.of(new CapacityPolicy(value, def, List.of(), 0, value, 0));
        }
        if (range.getMin() == null) {
            throw new Refused(at + ".requestPolicy.validRange.min is missing");
        }
        long min = whole(at + ".requestPolicy.validRange.min", range.getMin());
        long max = range.getMax() == null ? value : whole(at + ".requestPolicy.validRange.max", range.getMax());
        long step = range.getStep() == null ? 0 : whole(at + ".requestPolicy.validRange.step", range.getStep());
        if (range.getStep() != null && step == 0) {
            throw new Refused(at + ".requestPolicy.validRange.step = " + range.getStep() + ": must be above 0");
        }
        return Optional.of(new CapacityPolicy(value, def, List.of(), min, max, step));
    }

    /** A quantity that must be a whole number, not negative, that fits a long. */
    private static long whole(String at, Quantity q) {
        if (q == null) {
            throw new Refused(at + " is missing");
        }
        BigDecimal n;
        try {
            n = q.getNumericalAmount();
        } catch (IllegalArgumentException | ArithmeticException e) {
            throw new Refused(at + " = " + q + ": not a quantity (" + e.getMessage() + ")");
        }
        if (n.signum() < 0) {
            throw new Refused(at + " = " + q + ": must not be negative");
        }
        try {
            return n.longValueExact();
        } catch (ArithmeticException e) {
            throw new Refused(at + " = " + q + ": must be a whole number up to " + Long.MAX_VALUE
                    + (n.stripTrailingZeros().scale() > 0 ? " (it is " + n.toPlainString() + ")" : ""));
        }
    }

    private static String value(DeviceAttribute a) {
        if (a.getString() != null) {
            return "\"" + a.getString() + "\"";
        }
        Object v = a.getInt() != null ? a.getInt() : a.getBool() != null ? a.getBool() : a.getVersion() != null ? "version " + a.getVersion() : null;
        return String.valueOf(v);
    }

    private static long generation(ResourceSlice s) {
        Long g = s.getSpec().getPool().getGeneration();
        return g == null ? 0 : g;
    }

    private static String name(ResourceSlice s) {
        return s.getMetadata() == null ? "(unnamed)" : Objects.toString(s.getMetadata().getName(), "(unnamed)");
    }

    private static String selection(ResourceSliceSpec spec) {
        if (Boolean.TRUE.equals(spec.getAllNodes())) {
            return "allNodes";
        }
        if (spec.getNodeSelector() != null) {
            return "a nodeSelector";
        }
        if (Boolean.TRUE.equals(spec.getPerDeviceNodeSelection())) {
            return "perDeviceNodeSelection";
        }
        return "no node selection at all";
    }

    /** Why a device is left out. */
    private static final class Refused extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Refused(String why) {
            super(why, null, false, false);
        }
    }
}
