package io.qgpu.kubernetes.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClass;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.qgpu.api.GranularityRules;
import io.qgpu.core.placement.PlacementConfig;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The controller against fabric8's mock API server in CRUD mode: gate, write, refusal Event, freed room, restart. */
@EnableKubernetesMockClient(crud = true)
class AllocatorControllerTest {
    KubernetesClient client;
    final List<AllocatorController> controllers = new ArrayList<>();

    /** The allocator's own reading of the slices. */
    static final Function<Collection<ResourceSlice>, List<PublishedNode>> INVENTORY = slices -> SliceInventory.of(slices).nodes();

    @BeforeEach
    void cluster() {
        client.resources(DeviceClass.class).resource(DraAllocatorTest.CLASS).create();
        client.resources(ResourceSlice.class).resource(slice("n1", 1)).create();
    }

    @AfterEach
    void stop() {
        controllers.forEach(AllocatorController::close);
    }

    /** A node's slice as qgpu's driver publishes it under the qgpu rules: 80 GiB GPUs, memory in GiB, cores in 5s. */
    static ResourceSlice slice(String node, int gpus) {
        int tenants = GranularityRules.ofDefaults().maxTenants(io.qgpu.api.GpuDevice.builder("x").memoryGiB(80).build());
        SliceInventoryTest.Dev[] devs = new SliceInventoryTest.Dev[gpus];
        for (int i = 0; i < gpus; i++) {
            devs[i] = SliceInventoryTest.gpu(node, i).cap("memory", SliceInventoryTest.range("80Gi", "80Gi", "1Gi", "80Gi", "1Gi"))
                    .cap("cores", SliceInventoryTest.range("100", "100", "5", "100", "5"))
                    .cap("tenants", SliceInventoryTest.values(Integer.toString(tenants), "1", "1"));
        }
        return SliceInventoryTest.slice(node, devs);
    }

    AllocatorController start(BooleanSupplier leading) throws Exception {
        DraAllocator a = DraAllocator.create(Set.of(DraNames.DEVICE_CLASS), GranularityRules.ofDefaults(), PlacementConfig.defaults(),
                (c, classes) -> Optional.empty());
        AllocatorController c = new AllocatorController(client, a, INVENTORY, leading);
        controllers.add(c);
        c.start(Duration.ofSeconds(10));
        return c;
    }

    ResourceClaim createClaim(String name, String memory, String cores) {
        ResourceClaim rc = DraAllocatorTest.claim(name, memory, cores, 1);
        rc.getMetadata().setUid(null);
        rc.getMetadata().setResourceVersion(null);
        return client.resources(ResourceClaim.class).inNamespace("ns").resource(rc).create();
    }

    Pod createPod(String name, String claim) {
        return createPod(name, claim, 0, "2026-12-07T10:00:00Z");
    }

    Pod createPod(String name, String claim, int priority, String created) {
        return client.pods().inNamespace("ns").resource(new PodBuilder().withNewMetadata().withName(name).withNamespace("ns")
                .withCreationTimestamp(created).endMetadata().withNewSpec().withPriority(priority).addNewSchedulingGate().withName(DraNames.SCHEDULING_GATE).endSchedulingGate()
                .addNewSchedulingGate().withName("other.io/gate").endSchedulingGate()
                .addNewResourceClaim().withName("gpu").withResourceClaimName(claim).endResourceClaim()
                .addNewContainer().withName("c").withImage("x").endContainer().endSpec().build()).create();
    }

    static void await(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within 20 s: " + what);
            }
            Thread.onSpinWait();
            Thread.sleep(10);
        }
    }

    boolean gated(String pod) {
        return AllocatorController.gated(client.pods().inNamespace("ns").withName(pod).get());
    }

    ResourceClaim claim(String name) {
        return client.resources(ResourceClaim.class).inNamespace("ns").withName(name).get();
    }

    @Test
    void aGatedPodsClaimIsAllocatedWithTheFinalizerAndTheGateComesOffLeavingOtherGates() throws Exception {
        createClaim("c", "10Gi", "30");
        createPod("p", "c");
        start(() -> true);
        await(() -> !gated("p"), "pod p released");
        ResourceClaim rc = claim("c");
        assertNotNull(rc.getStatus().getAllocation());
        assertTrue(rc.getMetadata().getFinalizers().contains(DraNames.ALLOCATION_FINALIZER));
        assertEquals("gpu-0", rc.getStatus().getAllocation().getDevices().getResults().get(0).getDevice());
        assertEquals(List.of("other.io/gate"), client.pods().inNamespace("ns").withName("p").get().getSpec().getSchedulingGates()
                .stream().map(g -> g.getName()).toList());
    }

    @Test
    void aPodThatDoesNotFitStaysGatedWithAnEventAndIsAllocatedWhenRoomFrees() throws Exception {
        createClaim("big", "70Gi", "50");
        createPod("first", "big");
        start(() -> true);
        await(() -> !gated("first"), "first released");
        createClaim("c", "20Gi", "30");
        createPod("second", "c");
        await(() -> client.v1().events().inNamespace("ns").list().getItems().stream()
                .anyMatch(e -> AllocatorController.REASON_UNSCHEDULABLE.equals(e.getReason())), "refusal event");
        Event e = client.v1().events().inNamespace("ns").list().getItems().stream()
                .filter(x -> AllocatorController.REASON_UNSCHEDULABLE.equals(x.getReason())).findFirst().orElseThrow();
        assertEquals("second", e.getInvolvedObject().getName());
        assertTrue(e.getMessage().contains("insufficient GPU memory") || e.getMessage().contains("INSUFFICIENT_MEMORY"), e.getMessage());
        assertTrue(gated("second"));
        assertNull(claim("c").getStatus() == null ? null : claim("c").getStatus().getAllocation());
        // the first claim is deleted: its share returns and the waiting pod is allocated
        client.resources(ResourceClaim.class).inNamespace("ns").withName("big").edit(c -> {
            c.getMetadata().setFinalizers(List.of());
            return c;
        });
        client.resources(ResourceClaim.class).inNamespace("ns").withName("big").delete();
        await(() -> !gated("second"), "second released after the room freed");
        assertNotNull(claim("c").getStatus().getAllocation());
    }

    @Test
    void aRestartAllocatesNothingTwiceAndOnlyReleasesAPodWhoseClaimsAreAllocated() throws Exception {
        createClaim("c", "40Gi", "50");
        createPod("p", "c");
        AllocatorController first = start(() -> true);
        await(() -> claim("c").getStatus() != null && claim("c").getStatus().getAllocation() != null, "c allocated");
        first.close();
        // the crash came between the write and the gate's removal: the gate is back on
        client.pods().inNamespace("ns").withName("p").edit(p -> new PodBuilder(p).editSpec().addNewSchedulingGate()
                .withName(DraNames.SCHEDULING_GATE).endSchedulingGate().endSpec().build());
        var before = claim("c").getStatus().getAllocation();
        createClaim("d", "40Gi", "50");
        createPod("q", "d");
        start(() -> true);
        await(() -> !gated("p") && !gated("q"), "p and q released after the restart");
        assertEquals(before, claim("c").getStatus().getAllocation());
        assertEquals("gpu-0", claim("d").getStatus().getAllocation().getDevices().getResults().get(0).getDevice());
        // 40 + 40 GiB and 50 + 50 cores on the one GPU: full, nothing over
        createClaim("e", "1Gi", "5");
        createPod("r", "e");
        await(() -> client.v1().events().inNamespace("ns").list().getItems().stream()
                .anyMatch(x -> "r".equals(x.getInvolvedObject().getName())), "r refused");
        assertTrue(gated("r"));
    }

    @Test
    void freedRoomGoesToThePodsInPriorityThenArrivalOrder() throws Exception {
        createClaim("h", "60Gi", "10");
        createPod("holder", "h");
        AllocatorController c = start(() -> true);
        await(() -> !gated("holder"), "holder released");
        createClaim("ca", "30Gi", "10");
        createClaim("cb", "30Gi", "10");
        createClaim("cc", "30Gi", "10");
        createPod("pod-z", "ca", 0, "2026-12-07T10:00:01Z");    // first to arrive
        createPod("pod-a", "cc", 0, "2026-12-07T10:00:03Z");    // last to arrive, first by name
        createPod("pod-m", "cb", 100, "2026-12-07T10:00:02Z");  // higher priority
        await(() -> client.v1().events().inNamespace("ns").list().getItems().stream()
                .filter(e -> AllocatorController.REASON_UNSCHEDULABLE.equals(e.getReason())).count() == 3, "three refusals");
        client.resources(ResourceClaim.class).inNamespace("ns").withName("h").edit(x -> {
            x.getMetadata().setFinalizers(List.of());
            return x;
        });
        client.resources(ResourceClaim.class).inNamespace("ns").withName("h").delete();
        await(() -> !gated("pod-m") && !gated("pod-z"), "the higher priority pod and the first to arrive released");
        java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
        c.afterPasses(done::countDown);
        assertTrue(done.await(10, java.util.concurrent.TimeUnit.SECONDS));
        assertTrue(gated("pod-a"), "80 GiB hold two of the three 30 GiB claims: the last to arrive waits");
    }

    @Test
    void aClaimAllocatedForAPodThatIsGoneBeforeItsReservationIsDeallocatedAndItsShareReturns() throws Exception {
        createClaim("c", "70Gi", "50");
        createPod("p", "c");
        start(() -> true);
        await(() -> !gated("p"), "p released");
        assertEquals(client.pods().inNamespace("ns").withName("p").get().getMetadata().getUid(),
                claim("c").getMetadata().getAnnotations().get(AllocatorController.ALLOCATED_FOR));
        createClaim("d", "70Gi", "50");
        createPod("q", "d");
        await(() -> client.v1().events().inNamespace("ns").list().getItems().stream()
                .anyMatch(x -> "q".equals(x.getInvolvedObject().getName())), "q refused");
        // p is deleted before kube-scheduler reserved c for it: nobody will use c
        client.pods().inNamespace("ns").withName("p").delete();
        // two writes: the allocation cleared, then the finalizer removed
        await(() -> claim("c").getStatus().getAllocation() == null
                && !claim("c").getMetadata().getFinalizers().contains(DraNames.ALLOCATION_FINALIZER), "c deallocated, finalizer gone");
        assertFalse(claim("c").getMetadata().getAnnotations() != null
                && claim("c").getMetadata().getAnnotations().containsKey(AllocatorController.ALLOCATED_FOR));
        await(() -> !gated("q"), "q released: c's share returned");
    }

    @Test
    void aReservedClaimIsNeverSwept() throws Exception {
        createClaim("c", "10Gi", "30");
        createPod("p", "c");
        AllocatorController c = start(() -> true);
        await(() -> !gated("p"), "p released");
        ResourceClaim rc = claim("c");
        rc.getStatus().setReservedFor(List.of(new io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimConsumerReferenceBuilder()
                .withResource("pods").withName("p").withUid("someone").build()));
        client.resources(ResourceClaim.class).inNamespace("ns").resource(rc).updateStatus();
        client.pods().inNamespace("ns").withName("p").delete();
        java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
        c.pass();
        c.afterPasses(done::countDown);
        assertTrue(done.await(10, java.util.concurrent.TimeUnit.SECONDS));
        assertNotNull(claim("c").getStatus().getAllocation(), "reserved: the resourceclaim controller's to deallocate");
    }

    @Test
    void aReplicaThatDoesNotLeadAllocatesNothing() throws Exception {
        createClaim("c", "10Gi", "30");
        createPod("p", "c");
        AllocatorController c = start(() -> false);
        c.pass();
        // the pass ran on the worker (a pass queued after it runs after it): still gated, nothing written
        AllocatorController probe = c;
        java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
        probe.afterPasses(done::countDown);
        assertTrue(done.await(10, java.util.concurrent.TimeUnit.SECONDS));
        assertTrue(gated("p"));
        assertFalse(claim("c").getStatus() != null && claim("c").getStatus().getAllocation() != null);
    }

    /**
     * Slices that come while a pass is queued are read once, by that pass: a node pool of thousands of slices coming
     * up costs a few reads of all the slices, not one per slice (which was quadratic: 5,000 slices took minutes).
     */
    @Test
    void aBurstOfSlicesIsReadOnceByTheNextPassNotOncePerSlice() throws Exception {
        java.util.concurrent.atomic.AtomicInteger reads = new java.util.concurrent.atomic.AtomicInteger();
        DraAllocator a = DraAllocator.create(Set.of(DraNames.DEVICE_CLASS), GranularityRules.ofDefaults(), PlacementConfig.defaults(),
                (c, classes) -> Optional.empty());
        AllocatorController c = new AllocatorController(client, a, slices -> {
            reads.incrementAndGet();
            return INVENTORY.apply(slices);
        }, () -> true);
        controllers.add(c);
        c.start(Duration.ofSeconds(10));
        assertEquals(1, a.ledger().nodes().size());
        int before = reads.get();
        java.util.concurrent.CountDownLatch hold = new java.util.concurrent.CountDownLatch(1);
        c.afterPasses(() -> {
            try {
                hold.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        for (int i = 2; i <= 41; i++) {
            client.resources(ResourceSlice.class).resource(slice("n" + i, 1)).create();
        }
        // the worker is held while the informer takes the 40 slices in (its store is filled before each event is handed on)
        await(() -> c.sliceStore().list().size() == 41, "the informer holds the 41 slices");
        hold.countDown();
        await(() -> a.ledger().nodes().size() == 41, "the 41 nodes read");
        assertTrue(reads.get() - before <= 3, (reads.get() - before) + " reads of the slices for 40 slice events");
    }
}
