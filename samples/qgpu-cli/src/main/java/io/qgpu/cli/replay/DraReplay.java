package io.qgpu.cli.replay;

import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClass;
import io.fabric8.kubernetes.api.model.resource.v1.ExactDeviceRequestBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.qgpu.api.Claim;
import io.qgpu.api.Node;
import io.qgpu.api.PlacementResult;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.kubernetes.allocator.ClaimPriority;
import io.qgpu.kubernetes.allocator.DraAllocator;
import io.qgpu.kubernetes.allocator.PublishedNode;
import io.qgpu.kubernetes.allocator.SliceInventory;
import io.qgpu.kubernetes.node.dra.DraNames;
import io.qgpu.kubernetes.node.dra.GpuConfigs;
import io.qgpu.kubernetes.node.dra.PublishedCapacity;
import io.qgpu.kubernetes.node.dra.PublishedSlice;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The {@code dra-allocator} policy of {@link TraceReplay}: each pod of the trace through the DRA allocator's own
 * decision path ({@link DraAllocator}), with the API server left out and everything else as in a cluster.
 *
 * <ul>
 *   <li><b>The nodes</b> ({@link TraceMapping#nodes}) become ResourceSlices as qgpu's DRA driver publishes them
 *       under the replay's rules ({@link TraceMapping#RULES}), written by {@link PublishedSlice}: one slice per node
 *       (pool = node name, one slice in the pool), one device {@code gpu-<index>} per GPU with the attributes
 *       {@code uuid}, {@code index} and {@code productName} (the trace's model), the capacities {@code memory},
 *       {@code cores} and {@code tenants} with their request policies from the rules ({@link PublishedCapacity}, the
 *       driver's derivation) and {@code allowMultipleAllocations}. The trace gives no NUMA node, PCIe root, NVLink,
 *       minor number or compute capability, so the slices carry none: the allocator reads every pair of a node's
 *       GPUs as PCIe across the system ({@code SYS}), where the library's replay takes them as PCIe within a NUMA
 *       node; all pairs alike either way, so neither prefers one GPU set of a node to another. The allocator reads them back with {@link SliceInventory#of}, as
 *       from the API server; the nodes' host CPU and memory, which slices do not publish, are put back on the
 *       nodes read ({@link #published}), so that CPU and memory count as in the library's replay.</li>
 *   <li><b>A GPU pod</b> becomes a ResourceClaim of device class {@value DraNames#DEVICE_CLASS} ({@link #claim}):
 *       one request of {@code num_gpu} devices; a share asks {@code capacity.requests} {@code memory} and
 *       {@code cores} as {@link TraceMapping#claim} maps the pod, whole GPUs ask no capacity; the pod's
 *       {@code gpu_spec} is the selector {@code device.attributes["gpu.qgpu.io"].productName in [...]}; its priority
 *       ({@code online}, as every trace pod) is a {@code GpuConfig} in the claim's {@code spec.devices.config},
 *       read by the allocator's {@link ClaimPriority}. The allocator decides it with the pod's CPU and memory
 *       ({@link DraAllocator#decide(List, Function, io.qgpu.api.HostRequest)}); an {@code Allocate} is "written":
 *       the allocation is put in the claim's status and the claim fed back with {@link DraAllocator#claimChanged},
 *       as the informer would bring it.</li>
 *   <li><b>A pod without GPU</b> goes through {@link DraAllocator#placeHostOnly}.</li>
 * </ul>
 * The engine is the caller's (over the allocator's ledger), so a replay of this path and of the library's
 * {@code fragmentation-sample} run the same engine configuration.
 *
 * <p>Thread safety: not thread-safe; a replay runs on one thread.
 */
public final class DraReplay {
    /** The namespace of the replay's claims. */
    static final String NAMESPACE = "replay";
    /** The request name of a pod's claim. */
    static final String REQUEST = "gpu";

    /** The DeviceClass the DRA driver's deploy files create: every device of the driver. */
    private static final DeviceClass DEVICE_CLASS = PublishedSlice.deviceClass();
    private static final Function<String, Optional<DeviceClass>> CLASSES =
            n -> n.equals(DraNames.DEVICE_CLASS) ? Optional.of(DEVICE_CLASS) : Optional.empty();

    private final DraAllocator allocator;

    private DraReplay(DraAllocator allocator) {
        this.allocator = allocator;
    }

    /**
     * An allocator over the trace's nodes, read from their slices.
     *
     * @param nodes    the trace's nodes as the library's replay maps them ({@link TraceMapping#nodes})
     * @param engineOf the placement engine over the allocator's ledger
     */
    public static DraReplay create(List<Node> nodes, Function<Ledger, PlacementEngine> engineOf) {
        DraAllocator a = DraAllocator.create(Set.of(DraNames.DEVICE_CLASS), TraceMapping.RULES, new ClaimPriority(), engineOf);
        a.inventory(published(nodes));
        return new DraReplay(a);
    }

    /**
     * Places one pod, as {@link TraceMapping#claim} maps it: a GPU pod through {@link DraAllocator#decide} and the
     * allocation fed back, a host-only pod through {@link DraAllocator#placeHostOnly}.
     *
     * @return whether it was placed
     */
    public boolean place(Claim pod) {
        if (pod.hostOnly()) {
            return allocator.placeHostOnly(pod.tenantId(), pod.host()) instanceof PlacementResult.Placed;
        }
        ResourceClaim rc = claim(pod);
        if (!(allocator.decide(List.of(rc), CLASSES, pod.host()) instanceof DraAllocator.Decision.Allocate d)) {
            return false;
        }
        for (DraAllocator.ClaimAllocation c : d.claims()) {
            allocator.claimChanged(new ResourceClaimBuilder(c.claim()).editOrNewStatus().withAllocation(c.allocation()).endStatus()
                    .build());
        }
        return true;
    }

    /** The ResourceSlices of these nodes, as qgpu's DRA driver publishes them under {@link TraceMapping#RULES}. */
    static List<ResourceSlice> slices(List<Node> nodes) {
        return nodes.stream().map(n -> PublishedSlice.of(n, TraceMapping.RULES)).toList();
    }

    /**
     * The nodes the allocator works on: the slices of {@code nodes} read back by {@link SliceInventory}, each with
     * its host capacity, in the order of {@code nodes} (the library replay's ledger order).
     *
     * @throws IllegalStateException when the slices do not read back as one node per trace node (a problem of the
     *                               slices, named)
     */
    static List<PublishedNode> published(List<Node> nodes) {
        SliceInventory inv = SliceInventory.of(slices(nodes));
        if (!inv.problems().isEmpty()) {
            throw new IllegalStateException("the replay's ResourceSlices do not read back: " + inv.problems());
        }
        Map<String, PublishedNode> byName = inv.nodes().stream().collect(Collectors.toMap(PublishedNode::name, Function.identity()));
        List<PublishedNode> out = new ArrayList<>();
        for (Node n : nodes) {
            PublishedNode p = byName.get(n.name());
            if (p == null) {
                throw new IllegalStateException("node " + n.name() + " is not among the nodes its ResourceSlice publishes");
            }
            Node read = p.node();
            out.add(new PublishedNode(new Node(read.name(), read.labels(), read.gpus(), read.topology(), n.host()), p.gpus()));
        }
        return out;
    }

    /** The ResourceClaim of a GPU pod's claim (name and uid: the claim's tenant id, the library replay's). */
    static ResourceClaim claim(Claim pod) {
        ExactDeviceRequestBuilder e = new ExactDeviceRequestBuilder().withDeviceClassName(DraNames.DEVICE_CLASS)
                .withAllocationMode("ExactCount").withCount((long) pod.gpuCount());
        if (!pod.exclusive()) {
            Map<String, Quantity> requests = new LinkedHashMap<>();
            requests.put(DraNames.CAPACITY_MEMORY, new Quantity(Long.toString(pod.memoryPerGpuBytes())));
            requests.put(DraNames.CAPACITY_CORES, new Quantity(Integer.toString(pod.computeRequest())));
            e.withNewCapacity().withRequests(requests).endCapacity();
        }
        if (!pod.selectors().includeModels().isEmpty()) {
            String models = pod.selectors().includeModels().stream().sorted().map(m -> "\"" + m + "\"")
                    .collect(Collectors.joining(", "));
            e.addNewSelector().withNewCel().withExpression("device.attributes[\"" + DraNames.DRIVER + "\"]."
                    + DraNames.ATTRIBUTE_PRODUCT_NAME + " in [" + models + "]").endCel().endSelector();
        }
        Map<String, Object> config = Map.of("apiVersion", GpuConfigs.API_VERSION, "kind", GpuConfigs.KIND,
                "priority", pod.priority().wireName());
        return new ResourceClaimBuilder().withNewMetadata().withNamespace(NAMESPACE).withName(pod.tenantId())
                .withUid(pod.tenantId()).withResourceVersion("1").endMetadata()
                .withNewSpec().withNewDevices().addNewRequest().withName(REQUEST).withExactly(e.build()).endRequest()
                .addNewConfig().withRequests(REQUEST).withNewOpaque().withDriver(DraNames.DRIVER).withParameters(config).endOpaque()
                .endConfig().endDevices().endSpec().build();
    }
}
