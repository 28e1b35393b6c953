package io.qgpu.kubernetes.dra;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceRequestAllocationResult;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceRequestAllocationResultBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimConsumerReference;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimConsumerReferenceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
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
                .withDriver(DriverNames.DRIVER).withPool(pool).withDevice(device);
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

    /** Creates an allocated claim and returns its uid. */
    static String allocated(KubernetesClient client, String name, DeviceRequestAllocationResult... results) {
        ResourceClaim rc = new ResourceClaimBuilder().withNewMetadata().withNamespace(NS).withName(name).endMetadata()
                .withNewSpec().endSpec()
                .withNewStatus().withNewAllocation().withNewDevices().withResults(List.of(results)).endDevices().endAllocation()
                .endStatus().build();
        return create(client, rc);
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
