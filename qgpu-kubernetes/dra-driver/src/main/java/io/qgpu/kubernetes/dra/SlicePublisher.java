package io.qgpu.kubernetes.dra;

import io.fabric8.kubernetes.api.model.resource.v1.Device;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAttribute;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAttributeBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.NonDeletingOperation;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Health;
import io.qgpu.kubernetes.node.dra.DraNames;
import io.qgpu.kubernetes.node.dra.NvLinkAttribute;
import io.qgpu.kubernetes.node.dra.PublishedCapacity;
import io.qgpu.kubernetes.node.dra.PublishedSlice;
import io.qgpu.kubernetes.node.reconcile.NodeResource;
import io.qgpu.nvml.NvmlMigMode;
import io.qgpu.nvml.discovery.NvmlDeviceInfo;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's GPUs as one {@code resource.k8s.io/v1} ResourceSlice on the API server, as a {@link NodeResource} of
 * the driver's reconciler (key: the slice's name): driver {@value DraNames#DRIVER}, {@code nodeName} and pool
 * name = the node, one slice in the pool (complete), one device per healthy GPU named {@code gpu-<index>} with
 * attributes {@code uuid}, {@code productName}, {@code index}, {@code minor}, {@code computeCapability} (a
 * version such as {@code 9.0.0}), {@code migEnabled} and {@code numaNode} (where NVML knows it),
 * {@value DraNames#ATTRIBUTE_PCIE_ROOT} (where known, {@link NodeGpus}) and {@value DraNames#ATTRIBUTE_NVLINK}
 * (the GPU's NVLinks to the other healthy GPUs, {@link NvLinkAttribute}; left out without any), the capacities
 * {@value DraNames#CAPACITY_MEMORY} (bytes, rounded down to the rules' memory unit),
 * {@value DraNames#CAPACITY_CORES} (100) and {@value DraNames#CAPACITY_TENANTS} (the rules' tenant limit),
 * each with a {@code requestPolicy} derived from the node's granularity rules ({@link PublishedCapacity}), and
 * {@code allowMultipleAllocations: true}.
 *
 * <p>Desired: this driver's one slice ({@link DriverNames#sliceName}); present: every slice of this driver and
 * node on the API server, so one left by an earlier run under another name is removed. {@link #ensure} reads
 * the slice from the API server and writes it (create or update) when it is missing or its devices are not
 * those of the healthy GPUs now; the pool's generation grows with every change of the devices, and starts
 * above any generation this node's slices had. A GPU that turns unhealthy ({@link #setHealth}) is taken out and
 * put back when healthy: the change is recorded here and published by the reconciler's next pass, which the
 * caller triggers; a write that fails (the API server down for longer than the client's retries, a 4xx, a
 * conflict) is retried by the reconciler with back-off until the slice is right.
 *
 * <p>Thread safety: thread-safe (serialised on this object).
 */
final class SlicePublisher implements NodeResource<String> {
    private static final Logger LOG = LoggerFactory.getLogger(SlicePublisher.class);

    private final KubernetesClient client;
    private final String node;
    private final NodeGpus gpus;
    private final GranularityRules rules;
    private final Set<String> unhealthy = new LinkedHashSet<>();
    private long generation;

    /**
     * @param rules the node's granularity rules ({@code --rules}): the capacities' request policies follow from them
     */
    SlicePublisher(KubernetesClient client, String node, NodeGpus gpus, GranularityRules rules) {
        this.client = client;
        this.node = node;
        this.gpus = gpus;
        this.rules = rules;
    }

    @Override
    public String kind() {
        return "resource-slice";
    }

    @Override
    public Set<String> desired() {
        return Set.of(DriverNames.sliceName(node));
    }

    /** The names of this driver's slices of this node on the API server; raises their generations' floor. */
    @Override
    public synchronized Set<String> present() {
        Set<String> out = new LinkedHashSet<>();
        for (ResourceSlice s : client.resources(ResourceSlice.class).list().getItems()) {
            if (s.getSpec() == null || !DraNames.DRIVER.equals(s.getSpec().getDriver()) || !node.equals(s.getSpec().getNodeName())) {
                continue;
            }
            generation = Math.max(generation, generationOf(s));
            out.add(s.getMetadata().getName());
        }
        return out;
    }

    /** Publishes the slice when the API server's differs from the healthy GPUs now. */
    @Override
    public synchronized void ensure(String name) {
        ResourceSlice want = build(generation);
        ResourceSlice have = client.resources(ResourceSlice.class).withName(name).get();
        if (have != null) {
            generation = Math.max(generation, generationOf(have));
            if (have.getSpec() != null && sameDevices(have, want) && DraNames.DRIVER.equals(have.getSpec().getDriver())
                    && node.equals(have.getSpec().getNodeName())) {
                return;
            }
        }
        long next = generation + 1;
        ResourceSlice s = build(next);
        if (have != null) {
            s.getMetadata().setResourceVersion(have.getMetadata().getResourceVersion());
        }
        client.resources(ResourceSlice.class).resource(s).createOr(NonDeletingOperation::update);
        generation = next;
        LOG.info("published ResourceSlice {}: {} device(s), pool generation {}", name, s.getSpec().getDevices().size(), generation);
    }

    /** Deletes a slice of this driver and node left under another name. */
    @Override
    public void remove(String name) {
        LOG.info("removing ResourceSlice {}, left by an earlier run on this node", name);
        client.resources(ResourceSlice.class).withName(name).delete();
    }

    /**
     * Records a GPU's health: an unhealthy GPU is left out of the slice from the next pass on, a healthy one put
     * back.
     *
     * @return whether the slice's devices change (the caller triggers a pass)
     */
    synchronized boolean setHealth(String uuid, Health health) {
        boolean changed = health == Health.HEALTHY ? unhealthy.remove(uuid) : unhealthy.add(uuid);
        if (changed && gpus.byUuid(uuid).isPresent()) {
            LOG.info("GPU {} is {}: the slice is published again", uuid, health);
            return true;
        }
        return false;
    }

    /** The slice as it should be now. */
    synchronized ResourceSlice slice() {
        return build(generation);
    }


    private static long generationOf(ResourceSlice s) {
        return s.getSpec() != null && s.getSpec().getPool() != null && s.getSpec().getPool().getGeneration() != null
                ? s.getSpec().getPool().getGeneration() : 0L;
    }


    private static boolean sameDevices(ResourceSlice have, ResourceSlice want) {
        return java.util.Objects.equals(have.getSpec().getDevices(), want.getSpec().getDevices())
                && have.getSpec().getPool() != null && java.util.Objects.equals(have.getSpec().getPool().getName(), want.getSpec().getPool().getName());
    }

    private ResourceSlice build(long gen) {
        return slice(node, gen, gpus, gpus.all().stream().filter(g -> !unhealthy.contains(g.uuid())).toList(), rules);
    }

    /**
     * The slice of a node that publishes these of its GPUs, at this pool generation.
     *
     * @param published the GPUs published (the healthy ones), in index order
     */
    static ResourceSlice slice(String node, long gen, NodeGpus gpus, List<NodeGpus.Gpu> published, GranularityRules rules) {
        return PublishedSlice.of(node, gen, published.stream().map(g -> device(g, gpus, published, rules)).toList());
    }

    private static Device device(NodeGpus.Gpu g, NodeGpus gpus, List<NodeGpus.Gpu> published, GranularityRules rules) {
        NvmlDeviceInfo d = g.info();
        Map<String, DeviceAttribute> attrs = new LinkedHashMap<>();
        attrs.put(DraNames.ATTRIBUTE_UUID, new DeviceAttributeBuilder().withString(d.uuid()).build());
        attrs.put(DraNames.ATTRIBUTE_PRODUCT_NAME, new DeviceAttributeBuilder().withString(d.name()).build());
        attrs.put(DraNames.ATTRIBUTE_INDEX, new DeviceAttributeBuilder().withInt((long) d.index()).build());
        attrs.put(DraNames.ATTRIBUTE_MINOR, new DeviceAttributeBuilder().withInt((long) d.minorNumber()).build());
        attrs.put(DraNames.ATTRIBUTE_COMPUTE_CAPABILITY, new DeviceAttributeBuilder()
                .withVersion(d.computeCapability().major() + "." + d.computeCapability().minor() + ".0").build());
        if (d.migMode().current() != NvmlMigMode.State.NOT_SUPPORTED) {
            attrs.put(DraNames.ATTRIBUTE_MIG_ENABLED, new DeviceAttributeBuilder().withBool(d.migMode().current() == NvmlMigMode.State.ENABLED).build());
        }
        if (g.device().numaNode() >= 0) {
            attrs.put(DraNames.ATTRIBUTE_NUMA_NODE, new DeviceAttributeBuilder().withInt((long) g.device().numaNode()).build());
        }
        g.pcieRoot().ifPresent(r -> attrs.put(DraNames.ATTRIBUTE_PCIE_ROOT, new DeviceAttributeBuilder().withString(r).build()));
        nvLinks(g, gpus, published).ifPresent(v -> attrs.put(DraNames.ATTRIBUTE_NVLINK, new DeviceAttributeBuilder().withString(v).build()));
        return new DeviceBuilder().withName(g.name()).withAttributes(attrs).withCapacity(g.published(rules).toSlice())
                .withAllowMultipleAllocations(true).build();
    }

    /** The {@value DraNames#ATTRIBUTE_NVLINK} attribute of a GPU among the published ones; empty without NVLink to them. */
    private static Optional<String> nvLinks(NodeGpus.Gpu g, NodeGpus gpus, List<NodeGpus.Gpu> published) {
        List<Integer> peers = new ArrayList<>();
        Map<Integer, NvLinkAttribute.Lanes> links = new LinkedHashMap<>();
        for (NodeGpus.Gpu o : published) {
            if (o == g) {
                continue;
            }
            peers.add(o.info().index());
            GpuLink l = gpus.link(g, o);
            if (l.nvLinkLanes() > 0) {
                links.put(o.info().index(), new NvLinkAttribute.Lanes(l.nvLinkLanes(), l.viaNvSwitch()));
            }
        }
        try {
            return NvLinkAttribute.format(g.info().index(), peers, links);
        } catch (IllegalArgumentException e) {
            LOG.warn("{} is published without its {} attribute: {}", g.name(), DraNames.ATTRIBUTE_NVLINK, e.getMessage());
            return Optional.empty();
        }
    }
}
