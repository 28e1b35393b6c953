package io.qgpu.kubernetes.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.AllocationResult;
import io.fabric8.kubernetes.api.model.resource.v1.AllocationResultBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClass;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.qgpu.api.GranularityRules;
import io.qgpu.core.placement.PlacementConfig;
import io.qgpu.kubernetes.node.FaultyApiServer;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Never two owners of one share, against an API server that answers as a real one does ({@link FaultyApiServer}): a
 * conflict on the status write decides again; a claim someone else allocated meanwhile is taken as it is; a pod that
 * escaped the gate and was allocated by kube-scheduler is counted.
 */
class AllocatorConflictTest {
    FaultyApiServer api;
    KubernetesClient client;
    AllocatorController controller;

    @BeforeEach
    void cluster() {
        api = new FaultyApiServer();
        client = api.client();
        client.resources(DeviceClass.class).resource(DraAllocatorTest.CLASS).create();
        client.resources(ResourceSlice.class).resource(AllocatorControllerTest.slice("n1", 2)).create();
    }

    @AfterEach
    void stop() {
        if (controller != null) {
            controller.close();
        }
        api.close();
    }

    void start() throws Exception {
        DraAllocator a = DraAllocator.create(Set.of(DraNames.DEVICE_CLASS), GranularityRules.ofDefaults(), PlacementConfig.defaults(),
                new ClaimPriority());
        controller = new AllocatorController(client, a, AllocatorControllerTest.INVENTORY, () -> true);
        controller.start(Duration.ofSeconds(10));
    }

    void claimAndGatedPod(String claim, String pod, String memory, String cores) {
        ResourceClaim rc = DraAllocatorTest.claim(claim, memory, cores, 1);
        rc.getMetadata().setUid(null);
        rc.getMetadata().setResourceVersion(null);
        client.resources(ResourceClaim.class).inNamespace("ns").resource(rc).create();
        client.pods().inNamespace("ns").resource(new PodBuilder().withNewMetadata().withName(pod).withNamespace("ns").endMetadata()
                .withNewSpec().addNewSchedulingGate().withName(DraNames.SCHEDULING_GATE).endSchedulingGate()
                .addNewResourceClaim().withName("gpu").withResourceClaimName(claim).endResourceClaim()
                .addNewContainer().withName("c").withImage("x").endContainer().endSpec().build()).create();
    }

    boolean gated(String pod) {
        return AllocatorController.gated(client.pods().inNamespace("ns").withName(pod).get());
    }

    ResourceClaim claim(String name) {
        return client.resources(ResourceClaim.class).inNamespace("ns").withName(name).get();
    }

    long statusWrites(String claim, boolean injected) {
        return api.requests().stream().filter(e -> e.method().equals("PUT") && e.path().contains("/resourceclaims/" + claim + "/status")
                && e.injected() == injected).count();
    }

    static AllocationResult kubeSchedulers(String device, String memory, String cores) {
        return new AllocationResultBuilder().withNewDevices().addNewResult().withRequest("gpu").withDriver(DraNames.DRIVER)
                .withPool("n1").withDevice(device).withShareID("8d0e3c3a-0000-4000-8000-000000000001")
                .withConsumedCapacity(Map.of("memory", new Quantity(memory), "cores", new Quantity(cores), "tenants", new Quantity("1")))
                .endResult().endDevices().withNodeSelector(new io.fabric8.kubernetes.api.model.NodeSelectorBuilder().addNewNodeSelectorTerm()
                        .addNewMatchField().withKey("metadata.name").withOperator("In").withValues("n1").endMatchField()
                        .endNodeSelectorTerm().build()).build();
    }

    /**
     * A restart whose informers sync one after another: the claims are in the new allocator's store while its pod
     * list is still on the way (the API server answers it late). Nothing may be swept as "its pod is gone" before the
     * pods are read: the allocation of a live pod stays, with its finalizer. On the code before the fix, the first
     * claim event's pass swept it (the allocation cleared) while the pods' store was still empty.
     */
    @Test
    void aRestartWhosePodListComesLateDeallocatesNothing() throws Exception {
        claimAndGatedPod("c", "p", "10Gi", "30");
        start();
        AllocatorControllerTest.await(() -> !gated("p"), "p released");
        AllocationResult before = claim("c").getStatus().getAllocation();
        controller.close();
        controller = null;
        api.slow(Duration.ofMillis(1000), FaultyApiServer.Match.of("GET", "^/api/v1/pods"));   // within the client's request timeout (2 s)
        start();
        api.clearFaults();
        java.util.concurrent.CountDownLatch passes = new java.util.concurrent.CountDownLatch(1);
        controller.afterPasses(passes::countDown);
        assertTrue(passes.await(10, java.util.concurrent.TimeUnit.SECONDS));
        assertEquals(before, claim("c").getStatus().getAllocation(), "the allocation of a live pod was swept at the restart");
        assertTrue(claim("c").getMetadata().getFinalizers().contains(DraNames.ALLOCATION_FINALIZER));
    }

    @Test
    void aConflictOnTheStatusWriteDecidesAgainAndWritesOnce() throws Exception {
        api.failNext(1, 409, FaultyApiServer.Match.of("PUT", "/resourceclaims/c/status"));
        claimAndGatedPod("c", "p", "10Gi", "30");
        start();
        AllocatorControllerTest.await(() -> !gated("p"), "p released after the conflict");
        assertEquals(1, statusWrites("c", true));
        assertEquals(1, statusWrites("c", false));
        assertEquals(1, claim("c").getStatus().getAllocation().getDevices().getResults().size());
    }

    @Test
    void aClaimAllocatedBySomeoneElseMeanwhileIsTakenAsItIs() throws Exception {
        // every status write of the allocator conflicts until kube-scheduler's allocation is in
        api.failNext(1000, 409, FaultyApiServer.Match.of("PUT", "/resourceclaims/c/status"));
        claimAndGatedPod("c", "p", "10Gi", "30");
        start();
        AllocatorControllerTest.await(() -> statusWrites("c", true) >= 1, "the allocator's first write refused");
        AllocationResult theirs = kubeSchedulers("gpu-1", "20Gi", "40");
        ResourceClaim allocated = new ResourceClaimBuilder(claim("c")).editOrNewStatus().withAllocation(theirs).endStatus().build();
        client.resources(ResourceClaim.class).inNamespace("ns").resource(allocated).patchStatus();
        // the allocator's status writes still conflict: it can only release the pod by reading the claim allocated.
        // (The faults stay until then, so the test does not depend on how the mock API server answers a status write
        // prepared from a read before kube-scheduler's and sent after it: a real API server answers it 409 by its
        // resourceVersion.)
        AllocatorControllerTest.await(() -> !gated("p"), "p released: its claim is allocated");
        api.clearFaults();
        assertEquals(theirs, claim("c").getStatus().getAllocation());
        assertEquals(0, statusWrites("c", false), "the allocator never overwrote the allocation");
        // counted: 80 - 20 GiB left on gpu-1; a claim of 70 GiB goes to gpu-0, a second one has no room
        claimAndGatedPod("d", "q", "70Gi", "50");
        AllocatorControllerTest.await(() -> !gated("q"), "q released");
        assertEquals("gpu-0", claim("d").getStatus().getAllocation().getDevices().getResults().get(0).getDevice());
        claimAndGatedPod("e", "r", "70Gi", "50");
        AllocatorControllerTest.await(() -> client.v1().events().inNamespace("ns").list().getItems().stream()
                .anyMatch(x -> "r".equals(x.getInvolvedObject().getName())), "r refused");
        assertTrue(gated("r"));
    }

    @Test
    void aPodThatEscapedTheGateIsCountedAndItsDeallocationGivesTheShareBack() throws Exception {
        ResourceClaim escaped = DraAllocatorTest.claim("k", "60Gi", "50", 1);
        escaped.getMetadata().setUid(null);
        escaped.getMetadata().setResourceVersion(null);
        ResourceClaim created = client.resources(ResourceClaim.class).inNamespace("ns").resource(escaped).create();
        client.resources(ResourceClaim.class).inNamespace("ns").resource(new ResourceClaimBuilder(created).editOrNewStatus()
                .withAllocation(kubeSchedulers("gpu-0", "60Gi", "50")).endStatus().build()).patchStatus();
        start();
        claimAndGatedPod("c", "p", "30Gi", "30");
        AllocatorControllerTest.await(() -> !gated("p"), "p released");
        assertNotEquals("gpu-0", claim("c").getStatus().getAllocation().getDevices().getResults().get(0).getDevice(),
                "60 of gpu-0's 80 GiB are kube-scheduler's: 30 GiB go to gpu-1");
        claimAndGatedPod("d", "q", "60Gi", "30");
        AllocatorControllerTest.await(() -> client.v1().events().inNamespace("ns").list().getItems().stream()
                .anyMatch(x -> "q".equals(x.getInvolvedObject().getName())), "q refused");
        // the resourceclaim controller deallocates the escaped claim: its 60 GiB return and q fits on gpu-0
        ResourceClaim k = claim("k");
        k.getStatus().setAllocation(null);
        client.resources(ResourceClaim.class).inNamespace("ns").resource(k).updateStatus();
        AllocatorControllerTest.await(() -> !gated("q"), "q released after the deallocation");
        assertEquals("gpu-0", claim("d").getStatus().getAllocation().getDevices().getResults().get(0).getDevice());
    }
}
