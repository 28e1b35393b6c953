package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Placement;
import io.qgpu.api.Slice;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.ReconcileReport;
import io.qgpu.core.placement.PlacementConfig;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * On start-up the ledger is rebuilt from the annotations of bound pods; afterwards deleted and
 * finished pods release their slices through the pod informer. Against fabric8's mock API (CRUD).
 */
@EnableKubernetesMockClient(crud = true)
class ReconcileTest {

    static KubernetesMockServer server;
    static KubernetesClient client;

    private Ledger ledger;
    private GpuExtender extender;
    private KubernetesSync sync;
    private final BlockingQueue<Placement> released = new LinkedBlockingQueue<>();
    private final PodClaims claims = new PodClaims(GranularityRules.ofDefaults());

    @BeforeAll
    static void nodes() {
        for (String n : List.of("gpu-a", "gpu-b", "gpu-c", "cpu-d")) {
            client.nodes().resource(TestSupport.node(n)).create();
        }
    }

    @BeforeEach
    void cluster() {
        ledger = Ledger.create(GranularityRules.ofDefaults(), List.of());
        extender = new GpuExtender(ledger, PlacementConfig.defaults(), new KubernetesCluster(client));
        sync = new KubernetesSync(client, extender, released::add);
    }

    @AfterEach
    void close() {
        sync.close();
        for (String ns : List.of("team-a", "team-b", "team-c")) {
            client.pods().inNamespace(ns).delete();
        }
    }

    /** A pod as bind leaves it: on a node, with the decision in its annotations. */
    private Pod bound(Pod pod, String node, List<String> gpus, String phase) {
        Claim c = claims.claimOf(pod).orElseThrow();
        List<Slice> slices = gpus.stream().map(g -> new Slice(g, c.exclusive() ? 40 * GpuDevice.GIB : c.memoryPerGpuBytes(),
                c.computeRequest(), c.computeLimit())).toList();
        Placement p = new Placement(c, node, slices);
        return new PodBuilder(pod)
                .editMetadata().addToAnnotations(GpuExtender.annotations(p)).endMetadata()
                .editSpec().withNodeName(node).endSpec()
                .editStatus().withPhase(phase).endStatus()
                .build();
    }

    private Pod create(Pod p) {
        return client.pods().inNamespace(p.getMetadata().getNamespace()).resource(p).create();
    }

    private static Pod renamed(Pod p, String name) {
        return new PodBuilder(p).editMetadata().withName(name).withUid(null).endMetadata().build();
    }

    private Set<String> tenants() {
        return ledger.placements().stream().map(Placement::tenantId).collect(Collectors.toSet());
    }

    @Test
    void theLedgerIsRebuiltFromBoundPodsAndDeletedOrFinishedPodsReleaseTheirSlices() throws Exception {
        Pod infer = TestSupport.pod("pod-infer.json");
        Pod train = TestSupport.pod("pod-train.json");
        create(bound(infer, "gpu-a", List.of("GPU-a0"), "Running"));
        create(bound(train, "gpu-b", List.of("GPU-b0", "GPU-b1"), "Running"));
        // a second replica on the same GPU (anti-affinity would forbid it, so give it none)
        Pod replica = renamed(infer, "infer-1");
        replica.getMetadata().getAnnotations().remove(QgpuAnnotations.ANTI_AFFINITY);
        create(bound(replica, "gpu-c", List.of("GPU-c0"), "Running"));
        // left out, each for its own reason:
        Pod broken = bound(renamed(infer, "infer-2"), "gpu-a", List.of("GPU-a1"), "Running");
        broken.getMetadata().getAnnotations().put(QgpuAnnotations.PLACEMENT, "{not json");
        create(broken);
        create(bound(renamed(infer, "infer-3"), "gpu-a", List.of("GPU-a1"), "Succeeded"));     // finished
        Pod copied = bound(infer, "gpu-a", List.of("GPU-a1"), "Running");                     // tenant of another pod
        create(renamed(copied, "infer-4"));
        Pod pending = bound(renamed(infer, "infer-5"), "gpu-a", List.of("GPU-a1"), "Pending"); // not bound to a node
        pending.getSpec().setNodeName(null);
        create(pending);
        create(TestSupport.pod("pod-web.json"));                                              // no GPU at all

        ReconcileReport report = sync.start(Duration.ofSeconds(20));

        assertEquals(Set.of("team-a/infer-0", "team-b/train-0", "team-a/infer-1"), tenants());
        assertEquals(3, report.of(ReconcileReport.Kind.ADDED).size());
        assertEquals(Set.of("gpu-a", "gpu-b", "gpu-c"), ledger.nodes().stream().map(n -> n.name()).collect(Collectors.toSet()));
        assertEquals(List.of("GPU-b0", "GPU-b1"), ledger.placement("team-b/train-0").orElseThrow().gpuUuids());

        // a deleted pod releases its slices (informer event; bounded wait, no sleep)
        client.pods().inNamespace("team-a").withName("infer-0").delete();
        Placement gone = released.poll(20, TimeUnit.SECONDS);
        assertTrue(gone != null, "no release within 20 s");
        assertEquals("team-a/infer-0", gone.tenantId());
        assertFalse(ledger.placement("team-a/infer-0").isPresent());

        // a pod that finishes releases its slices too
        client.pods().inNamespace("team-b").withName("train-0").edit(p -> new PodBuilder(p).editStatus().withPhase("Succeeded")
                .endStatus().build());
        Placement done = released.poll(20, TimeUnit.SECONDS);
        assertTrue(done != null, "no release within 20 s");
        assertEquals("team-b/train-0", done.tenantId());
        assertEquals(Set.of("team-a/infer-1"), tenants());

        // the freed GPUs hold nothing any more
        assertEquals(0, ledger.node("gpu-b").orElseThrow().tenants());
        assertEquals(0, ledger.node("gpu-a").orElseThrow().tenants());
    }

    @Test
    void aStaleReservationIsRemovedAndAnOldPodsDeleteNeverReleasesTheNewOne() throws Exception {
        Pod infer = TestSupport.pod("pod-infer.json");
        Pod created = create(bound(infer, "gpu-a", List.of("GPU-a0"), "Running"));
        sync.start(Duration.ofSeconds(20));
        assertEquals(Set.of("team-a/infer-0"), tenants());
        // a reservation no pod backs (say, left by a bind whose pod vanished): a reconcile removes it
        Claim ghost = Claim.builder("team-z/ghost").memoryGiB(4).build();
        assertTrue(ledger.reserve(new Placement(ghost, "gpu-c", List.of(new Slice("GPU-c0", 4 * GpuDevice.GIB, 0, 100)))).reserved());
        ReconcileReport again = extender.reconcile(client.pods().inAnyNamespace().list().getItems());
        assertEquals(List.of("team-z/ghost"), again.of(ReconcileReport.Kind.REMOVED).stream().map(d -> d.tenant()).toList());

        // a delete event of an earlier pod of the same name (another UID) leaves the reservation alone
        Pod older = new PodBuilder(created).editMetadata().withUid("an-older-uid").endMetadata().build();
        assertTrue(extender.podGone(older).isEmpty());
        assertTrue(ledger.placement("team-a/infer-0").isPresent());
        // the real one releases it
        assertEquals("team-a/infer-0", extender.podGone(created).orElseThrow().tenantId());
        assertEquals(0, ledger.size());
    }
}
