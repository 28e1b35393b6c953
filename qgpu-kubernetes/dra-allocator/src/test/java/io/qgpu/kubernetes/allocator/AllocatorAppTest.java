package io.qgpu.kubernetes.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClass;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The parts started together as Main starts them: two replicas electing a leader, one allocating. */
@EnableKubernetesMockClient(crud = true)
class AllocatorAppTest {
    KubernetesClient client;

    @Test
    void twoReplicasWithLeaderElectionAllocateThroughTheOneHoldingTheLease() throws Exception {
        client.resources(DeviceClass.class).resource(DraAllocatorTest.CLASS).create();
        client.resources(ResourceSlice.class).resource(AllocatorControllerTest.slice("n1", 1)).create();
        AllocatorFlags flags = AllocatorFlags.parse("--no-webhook", "--leader-elect", "--lease-namespace", "qgpu");
        try (AllocatorApp a = AllocatorApp.start(flags, client, Map.of("HOSTNAME", "replica-a"));
             AllocatorApp b = AllocatorApp.start(flags, client, Map.of("HOSTNAME", "replica-b"))) {
            AllocatorControllerTest.await(() -> {
                Lease l = client.leases().inNamespace("qgpu").withName(AllocatorApp.LEASE_NAME).get();
                return l != null && l.getSpec().getHolderIdentity() != null;
            }, "a replica holds the Lease");
            String holder = client.leases().inNamespace("qgpu").withName(AllocatorApp.LEASE_NAME).get().getSpec().getHolderIdentity();
            assertTrue(holder.equals("replica-a") || holder.equals("replica-b"), holder);
            ResourceClaim rc = DraAllocatorTest.claim("c", "10Gi", "30", 1);
            rc.getMetadata().setUid(null);
            rc.getMetadata().setResourceVersion(null);
            client.resources(ResourceClaim.class).inNamespace("ns").resource(rc).create();
            client.pods().inNamespace("ns").resource(new PodBuilder().withNewMetadata().withName("p").withNamespace("ns").endMetadata()
                    .withNewSpec().addNewSchedulingGate().withName(DraNames.SCHEDULING_GATE).endSchedulingGate()
                    .addNewResourceClaim().withName("gpu").withResourceClaimName("c").endResourceClaim()
                    .addNewContainer().withName("c").withImage("x").endContainer().endSpec().build()).create();
            AllocatorControllerTest.await(() -> !AllocatorController.gated(client.pods().inNamespace("ns").withName("p").get()),
                    "p released");
            ResourceClaim done = client.resources(ResourceClaim.class).inNamespace("ns").withName("c").get();
            assertEquals(1, done.getStatus().getAllocation().getDevices().getResults().size());
            assertEquals(a.webhookPort(), java.util.Optional.empty());
        }
    }
}
