package io.qgpu.kubernetes.node.dra;

import io.fabric8.kubernetes.api.model.resource.v1.Device;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAttribute;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAttributeBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClass;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClassBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSliceBuilder;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A node's ResourceSlice as qgpu's DRA driver publishes it: driver {@value DraNames#DRIVER}, {@code nodeName} and
 * pool name = the node, one slice in the pool ({@link DraNames#sliceName}), the devices given.
 *
 * <p>{@link #of(Node, GranularityRules)} writes the whole slice from what a qgpu {@link Node} knows, for whatever
 * stands in for the driver without NVML (a trace replay through the DRA allocator, a benchmark): per GPU a device
 * {@code gpu-<index>} ({@link DraNames#deviceName}) with {@value DraNames#ATTRIBUTE_UUID}, {@value DraNames#ATTRIBUTE_INDEX},
 * {@value DraNames#ATTRIBUTE_PRODUCT_NAME} (the model) and {@value DraNames#ATTRIBUTE_NUMA_NODE} (where known), the
 * capacities of {@link PublishedCapacity} from the GPU's memory and the rules' tenant limit, and
 * {@code allowMultipleAllocations}. NVML's attributes (minor number, compute capability, MIG mode), the PCIe root
 * and the NVLink attribute are the driver's own (it reads them from NVML) and are not written here.
 * {@link #deviceClass()} is the DeviceClass of the driver's deploy files, which claims of these devices name.
 *
 * <pre>{@code
 * ResourceSlice s = PublishedSlice.of(node, GranularityRules.ofDefaults());
 * s.getMetadata().getName();                    // "node-a-gpu.qgpu.io"
 * s.getSpec().getDevices().get(0).getName();    // "gpu-0"
 * }</pre>
 *
 * <p>Thread safety: stateless.
 */
public final class PublishedSlice {
    private PublishedSlice() {
    }

    /**
     * The slice of a node with these devices.
     *
     * @param generation the pool's generation
     */
    public static ResourceSlice of(String node, long generation, List<Device> devices) {
        return new ResourceSliceBuilder().withNewMetadata().withName(DraNames.sliceName(node)).endMetadata()
                .withNewSpec().withDriver(DraNames.DRIVER).withNodeName(node)
                .withNewPool().withName(node).withGeneration(generation).withResourceSliceCount(1L).endPool()
                .withDevices(devices).endSpec().build();
    }

    /**
     * The DeviceClass {@value DraNames#DEVICE_CLASS} as the DRA driver's {@code deploy/deviceclass.yaml} creates it:
     * every device of driver {@value DraNames#DRIVER}, no configuration.
     */
    public static DeviceClass deviceClass() {
        return new DeviceClassBuilder().withNewMetadata().withName(DraNames.DEVICE_CLASS).endMetadata()
                .withNewSpec().addNewSelector().withNewCel().withExpression("device.driver == \"" + DraNames.DRIVER + "\"").endCel()
                .endSelector().endSpec().build();
    }

    /** The slice of a qgpu node under these rules (generation 1), from what the node knows. */
    public static ResourceSlice of(Node node, GranularityRules rules) {
        return of(node.name(), 1, node.gpus().stream().map(g -> device(g, rules)).toList());
    }

    private static Device device(GpuDevice g, GranularityRules rules) {
        Map<String, DeviceAttribute> attrs = new LinkedHashMap<>();
        attrs.put(DraNames.ATTRIBUTE_UUID, new DeviceAttributeBuilder().withString(g.uuid()).build());
        attrs.put(DraNames.ATTRIBUTE_PRODUCT_NAME, new DeviceAttributeBuilder().withString(g.model()).build());
        attrs.put(DraNames.ATTRIBUTE_INDEX, new DeviceAttributeBuilder().withInt((long) g.index()).build());
        if (g.numaNode() >= 0) {
            attrs.put(DraNames.ATTRIBUTE_NUMA_NODE, new DeviceAttributeBuilder().withInt((long) g.numaNode()).build());
        }
        PublishedCapacity capacity = PublishedCapacity.of(rules, g.memoryBytes(), rules.maxTenants(g));
        return new DeviceBuilder().withName(DraNames.deviceName(g.index())).withAttributes(attrs).withCapacity(capacity.toSlice())
                .withAllowMultipleAllocations(true).build();
    }
}
