package io.qgpu.kubernetes.deviceplugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.Placement;
import io.qgpu.api.Slice;
import io.qgpu.json.QgpuJson;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The extender's decisions read from pods on fabric8's mock API server. */
@EnableKubernetesMockClient(crud = true)
class KubernetesPodDecisionsTest {
    static KubernetesMockServer server;
    static KubernetesClient client;

    static String placement(String tenant, String node, String... gpus) {
        Claim claim = Claim.builder(tenant).gpus(gpus.length).memoryGiB(4).compute(10, 50).build();
        List<Slice> slices = new ArrayList<>();
        for (String g : gpus) {
            slices.add(new Slice(g, 4 * GpuDevice.GIB, 10, 50));
        }
        return QgpuJson.writePlacement(new Placement(claim, node, slices));
    }

    static void pod(String ns, String name, String node, String scheduledAt, String placementJson, String phase) {
        PodBuilder b = new PodBuilder().withNewMetadata().withNamespace(ns).withName(name)
                .withCreationTimestamp("2026-01-01T00:00:00Z").endMetadata()
                .withNewSpec().withNodeName(node).addNewContainer().withName("main").withImage("x").endContainer().endSpec()
                .withNewStatus().withPhase(phase).addNewCondition().withType("PodScheduled").withStatus("True")
                .withLastTransitionTime(scheduledAt).endCondition().endStatus();
        if (placementJson != null) {
            b.editMetadata().addToAnnotations(Names.PLACEMENT, placementJson).endMetadata();
        }
        client.pods().inNamespace(ns).resource(b.build()).create();
    }

    @Test
    void oldestBoundPodOfThisNodeWithTheGpuCountFirstThenMarked() {
        pod("a", "late", "node-a", "2026-01-01T00:00:09Z", placement("a/late", "node-a", "GPU-1"), "Pending");
        pod("a", "early", "node-a", "2026-01-01T00:00:05Z", placement("a/early", "node-a", "GPU-2"), "Pending");
        pod("a", "two", "node-a", "2026-01-01T00:00:01Z", placement("a/two", "node-a", "GPU-1", "GPU-2"), "Pending");
        pod("b", "other-node", "node-b", "2026-01-01T00:00:00Z", placement("b/other-node", "node-b", "GPU-9"), "Pending");
        pod("b", "no-annotation", "node-a", "2026-01-01T00:00:00Z", null, "Pending");
        pod("b", "done", "node-a", "2026-01-01T00:00:00Z", placement("b/done", "node-a", "GPU-3"), "Succeeded");
        pod("b", "garbled", "node-a", "2026-01-01T00:00:00Z", "{not json", "Pending");
        pod("b", "says-elsewhere", "node-a", "2026-01-01T00:00:00Z", placement("b/says-elsewhere", "node-b", "GPU-3"), "Pending");

        // the mock server's CRUD mode answers no field selector: the node is checked on this side (as it is anyway)
        KubernetesPodDecisions d = new KubernetesPodDecisions(client, "node-a", false);
        List<PodDecisions.PendingPod> one = d.pending(1);
        assertEquals(List.of("a/early", "a/late"), one.stream().map(PodDecisions.PendingPod::key).toList());
        assertEquals(List.of("GPU-2"), one.get(0).placement().gpuUuids());
        assertEquals(client.pods().inNamespace("a").withName("early").get().getMetadata().getUid(), one.get(0).uid());
        assertEquals(List.of("a/two"), d.pending(2).stream().map(PodDecisions.PendingPod::key).toList());

        d.applied(one.get(0), List.of("GPU-7::3"));
        Pod marked = client.pods().inNamespace("a").withName("early").get();
        assertEquals("GPU-7::3", marked.getMetadata().getAnnotations().get(Names.ALLOCATED));
        assertEquals(List.of("a/late"), d.pending(1).stream().map(PodDecisions.PendingPod::key).toList());
        assertNull(client.pods().inNamespace("a").withName("late").get().getMetadata().getAnnotations().get(Names.ALLOCATED));

        // an Allocate that fails as a whole takes the mark back: the pod is pending again, its other annotations kept
        d.withdrawn(one.get(0));
        Pod unmarked = client.pods().inNamespace("a").withName("early").get();
        assertNull(unmarked.getMetadata().getAnnotations().get(Names.ALLOCATED));
        assertEquals(placement("a/early", "node-a", "GPU-2"), unmarked.getMetadata().getAnnotations().get(Names.PLACEMENT));
        assertEquals(List.of("a/early", "a/late"), d.pending(1).stream().map(PodDecisions.PendingPod::key).toList());
        d.withdrawn(one.get(0));   // idempotent
        assertEquals(List.of("a/early", "a/late"), d.pending(1).stream().map(PodDecisions.PendingPod::key).toList());
    }
}
