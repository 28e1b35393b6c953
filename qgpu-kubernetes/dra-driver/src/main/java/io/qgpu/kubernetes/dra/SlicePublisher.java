package io.qgpu.kubernetes.dra;

import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.Device;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAttribute;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAttributeBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceCapacity;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceCapacityBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSliceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.NonDeletingOperation;
import io.qgpu.api.Health;
import io.qgpu.nvml.NvmlMigMode;
import io.qgpu.nvml.discovery.NvmlDeviceInfo;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes the node's GPUs as one {@code resource.k8s.io/v1} ResourceSlice through the API server:
 * driver {@value DriverNames#DRIVER}, {@code nodeName} and pool name = the node, one slice in the pool
 * (complete), one device per healthy GPU named {@code gpu-<index>} with attributes {@code uuid},
 * {@code productName}, {@code index}, {@code minor}, {@code computeCapability} (a version such as
 * {@code 9.0.0}), {@code migEnabled} and {@code numaNode} (where NVML knows it), capacity
 * {@value DriverNames#CAPACITY_MEMORY} (the GPU's total memory as NVML reports it, in bytes) and
 * {@value DriverNames#CAPACITY_CORES} (100), and {@code allowMultipleAllocations: true}.
 *
 * <p>On {@link #start()} it removes every other slice of this driver and node (a previous run's, under
 * another name) and writes its own, so a restart leaves exactly one. A GPU that turns unhealthy is taken
 * out of the slice, and put back when healthy; each change publishes the pool with a higher generation.
 *
 * <p>Thread safety: thread-safe (serialised on this object).
 */
final class SlicePublisher {
    private static final Logger LOG = LoggerFactory.getLogger(SlicePublisher.class);

    private final KubernetesClient client;
    private final String node;
    private final NodeGpus gpus;
    private final Set<String> unhealthy = new LinkedHashSet<>();
    private long generation;

    SlicePublisher(KubernetesClient client, String node, NodeGpus gpus) {
        this.client = client;
        this.node = node;
        this.gpus = gpus;
    }

    /** Removes other slices of this driver and node, and publishes. */
    synchronized void start() {
        String mine = DriverNames.sliceName(node);
        for (ResourceSlice s : client.resources(ResourceSlice.class).list().getItems()) {
            if (s.getSpec() == null || !DriverNames.DRIVER.equals(s.getSpec().getDriver()) || !node.equals(s.getSpec().getNodeName())) {
                continue;
            }
            if (s.getSpec().getPool() != null && s.getSpec().getPool().getGeneration() != null) {
                generation = Math.max(generation, s.getSpec().getPool().getGeneration());
            }
            if (!mine.equals(s.getMetadata().getName())) {
                LOG.info("removing ResourceSlice {}, left by an earlier run on this node", s.getMetadata().getName());
                client.resources(ResourceSlice.class).withName(s.getMetadata().getName()).delete();
            }
        }
        publish();
    }

    /** Takes a GPU out of the slice (unhealthy) or puts it back (healthy); republishes on a change. */
    synchronized void setHealth(String uuid, Health health) {
        boolean changed = health == Health.HEALTHY ? unhealthy.remove(uuid) : unhealthy.add(uuid);
        if (changed && gpus.byUuid(uuid).isPresent()) {
            LOG.info("GPU {} is {}: publishing the slice again", uuid, health);
            publish();
        }
    }

    /** The slice as last published. */
    synchronized ResourceSlice slice() {
        return build();
    }

    private void publish() {
        generation++;
        ResourceSlice s = build();
        client.resources(ResourceSlice.class).resource(s).createOr(NonDeletingOperation::update);
        LOG.info("published ResourceSlice {}: {} device(s), pool generation {}", s.getMetadata().getName(),
                s.getSpec().getDevices().size(), generation);
    }

    private ResourceSlice build() {
        List<Device> devices = gpus.all().stream().filter(g -> !unhealthy.contains(g.uuid())).map(SlicePublisher::device).toList();
        return new ResourceSliceBuilder()
                .withMetadata(new ObjectMetaBuilder().withName(DriverNames.sliceName(node)).build())
                .withNewSpec().withDriver(DriverNames.DRIVER).withNodeName(node)
                .withNewPool().withName(node).withGeneration(generation).withResourceSliceCount(1L).endPool()
                .withDevices(devices).endSpec().build();
    }

    private static Device device(NodeGpus.Gpu g) {
        NvmlDeviceInfo d = g.info();
        Map<String, DeviceAttribute> attrs = new LinkedHashMap<>();
        attrs.put("uuid", new DeviceAttributeBuilder().withString(d.uuid()).build());
        attrs.put("productName", new DeviceAttributeBuilder().withString(d.name()).build());
        attrs.put("index", new DeviceAttributeBuilder().withInt((long) d.index()).build());
        attrs.put("minor", new DeviceAttributeBuilder().withInt((long) d.minorNumber()).build());
        attrs.put("computeCapability", new DeviceAttributeBuilder()
                .withVersion(d.computeCapability().major() + "." + d.computeCapability().minor() + ".0").build());
        if (d.migMode().current() != NvmlMigMode.State.NOT_SUPPORTED) {
            attrs.put("migEnabled", new DeviceAttributeBuilder().withBool(d.migMode().current() == NvmlMigMode.State.ENABLED).build());
        }
        if (g.device().numaNode() >= 0) {
            attrs.put("numaNode", new DeviceAttributeBuilder().withInt((long) g.device().numaNode()).build());
        }
        Map<String, DeviceCapacity> capacity = new LinkedHashMap<>();
        capacity.put(DriverNames.CAPACITY_MEMORY, new DeviceCapacityBuilder().withValue(new Quantity(Long.toString(g.memoryBytes()))).build());
        capacity.put(DriverNames.CAPACITY_CORES, new DeviceCapacityBuilder().withValue(new Quantity("100")).build());
        return new DeviceBuilder().withName(g.name()).withAttributes(attrs).withCapacity(capacity)
                .withAllowMultipleAllocations(true).build();
    }
}
