package io.qgpu.kubernetes.dra;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAllocationConfiguration;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAllocationConfigurationBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceRequestAllocationResult;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceRequestAllocationResultBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimConsumerReference;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimConsumerReferenceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** ResourceClaims as the scheduler leaves them, written to the mock API server. */
final class Claims {
    static final String NS = "default";

    private Claims() {
    }

    /** A result of this driver in a pool; {@code memory}/{@code cores} null for no consumedCapacity. */
    static DeviceRequestAllocationResult result(String request, String pool, String device, String memory, String cores,
                                                String shareId) {
        DeviceRequestAllocationResultBuilder b = new DeviceRequestAllocationResultBuilder().withRequest(request)
                .withDriver(DraNames.DRIVER).withPool(pool).withDevice(device);
        if (memory != null) {
            Map<String, Quantity> c = new LinkedHashMap<>();
            c.put("memory", new Quantity(memory));
            c.put("cores", new Quantity(cores));
            b.withConsumedCapacity(c);
        }
        if (shareId != null) {
            b.withShareID(shareId);
        }
        return b.build();
    }

    /** A share of {@code device} on node-a. */
    static DeviceRequestAllocationResult share(String device, String memory, String cores, String shareId) {
        return result("gpu", "node-a", device, memory, cores, shareId);
    }

    /** The whole device on node-a, without consumedCapacity. */
    static DeviceRequestAllocationResult whole(String device) {
        return result("gpu", "node-a", device, null, null, null);
    }

    /** The whole device of another driver on node-a. */
    static DeviceRequestAllocationResult ofDriver(String driver, String device) {
        return new DeviceRequestAllocationResultBuilder().withRequest("dev").withDriver(driver).withPool("node-a").withDevice(device)
                .build();
    }

    /** A {@code status.reservedFor} entry for a pod (by name and uid). */
    static ResourceClaimConsumerReference pod(String name, String uid) {
        return new ResourceClaimConsumerReferenceBuilder().withApiGroup("").withResource("pods").withName(name).withUid(uid).build();
    }

    /** Sets the claim's {@code status.reservedFor} to these pods, as the scheduler does before the kubelet prepares it. */
    static void reserveFor(KubernetesClient client, String name, Pod... pods) {
        reserveFor(client, name, List.of(pods).stream().map(p -> pod(p.getMetadata().getName(), p.getMetadata().getUid())).toList());
    }

    /** Sets the claim's {@code status.reservedFor} to these consumers. */
    static void reserveFor(KubernetesClient client, String name, List<ResourceClaimConsumerReference> consumers) {
        ResourceClaim rc = client.resources(ResourceClaim.class).inNamespace(NS).withName(name).get();
        rc.getStatus().setReservedFor(consumers);
        client.resources(ResourceClaim.class).inNamespace(NS).resource(rc).updateStatus();
    }

    /** A result of this driver on node-a with any {@code consumedCapacity} (as the scheduler wrote it). */
    static DeviceRequestAllocationResult consumed(String request, String device, Map<String, Quantity> consumedCapacity) {
        return consumed(request, device, consumedCapacity, null);
    }

    /** The same with a share id (null: none). */
    static DeviceRequestAllocationResult consumed(String request, String device, Map<String, Quantity> consumedCapacity, String shareId) {
        DeviceRequestAllocationResultBuilder b = new DeviceRequestAllocationResultBuilder().withRequest(request).withDriver(DraNames.DRIVER)
                .withPool("node-a").withDevice(device).withConsumedCapacity(new LinkedHashMap<>(consumedCapacity));
        if (shareId != null) {
            b.withShareID(shareId);
        }
        return b.build();
    }

    /** Creates an allocated claim and returns its uid. */
    static String allocated(KubernetesClient client, String name, DeviceRequestAllocationResult... results) {
        return allocated(client, name, List.of(), results);
    }

    /** Creates an allocated claim whose allocation carries this configuration ({@code status.allocation.devices.config}). */
    static String allocated(KubernetesClient client, String name, List<DeviceAllocationConfiguration> config,
                            DeviceRequestAllocationResult... results) {
        ResourceClaim rc = new ResourceClaimBuilder().withNewMetadata().withNamespace(NS).withName(name).endMetadata()
                .withNewSpec().endSpec()
                .withNewStatus().withNewAllocation().withNewDevices().withResults(List.of(results)).withConfig(config).endDevices()
                .endAllocation().endStatus().build();
        return create(client, rc);
    }

    /** A configuration entry: opaque parameters for {@code driver}, from {@code FromClass} or {@code FromClaim}. */
    static DeviceAllocationConfiguration config(String source, List<String> requests, String driver, Object parameters) {
        return new DeviceAllocationConfigurationBuilder().withSource(source).withRequests(requests).withNewOpaque()
                .withDriver(driver).withParameters(parameters).endOpaque().build();
    }

    /** A GpuConfig of this driver for all requests: apiVersion and kind, then these fields (in order). */
    static DeviceAllocationConfiguration gpuConfig(String source, Object... fields) {
        return gpuConfig(source, List.of(), fields);
    }

    /** A GpuConfig of this driver for these requests: apiVersion and kind, then these fields (name, value, ...). */
    static DeviceAllocationConfiguration gpuConfig(String source, List<String> requests, Object... fields) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("apiVersion", "gpu.qgpu.io/v1alpha1");
        p.put("kind", "GpuConfig");
        for (int i = 0; i + 1 < fields.length; i += 2) {
            p.put((String) fields[i], fields[i + 1]);
        }
        return config(source, requests, DraNames.DRIVER, p);
    }

    /** Creates a claim without allocation and returns its uid. */
    static String unallocated(KubernetesClient client, String name) {
        return create(client, new ResourceClaimBuilder().withNewMetadata().withNamespace(NS).withName(name).endMetadata()
                .withNewSpec().endSpec().build());
    }

    private static String create(KubernetesClient client, ResourceClaim rc) {
        ResourceClaim created = client.resources(ResourceClaim.class).inNamespace(NS).resource(rc).create();
        if (rc.getStatus() != null && (created.getStatus() == null || created.getStatus().getAllocation() == null)) {
            created.setStatus(rc.getStatus());
            created = client.resources(ResourceClaim.class).inNamespace(NS).resource(created).updateStatus();
        }
        return created.getMetadata().getUid();
    }
}
