package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.Binding;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Placement;
import io.qgpu.json.QgpuJson;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementConfig;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** bind against fabric8's mock Kubernetes API (CRUD mode, with expectations for failures). */
@EnableKubernetesMockClient(crud = true)
class KubernetesBindTest {

    static KubernetesMockServer server;
    static KubernetesClient client;

    private Ledger ledger;
    private KubernetesSync sync;
    private ExtenderServer http;
    private String url;

    @BeforeAll
    static void nodes() {
        for (String n : List.of("gpu-a", "gpu-b", "gpu-c", "cpu-d")) {
            client.nodes().resource(TestSupport.node(n)).create();
        }
    }

    @BeforeEach
    void start() throws Exception {
        client.pods().inNamespace("team-a").resource(TestSupport.pod("pod-infer.json")).create();
        client.pods().inNamespace("team-b").resource(TestSupport.pod("pod-train.json")).create();
        client.pods().inNamespace("team-c").resource(TestSupport.pod("pod-web.json")).create();
        ledger = Ledger.create(GranularityRules.ofDefaults(), List.of());
        GpuExtender ext = new GpuExtender(ledger, PlacementConfig.defaults(), new KubernetesCluster(client));
        sync = new KubernetesSync(client, ext);
        assertTrue(sync.start(Duration.ofSeconds(20)).inSync());
        http = ExtenderServer.builder(ext).host("127.0.0.1").port(0).urlPrefix("/qgpu").threads(2).build().start();
        url = http.baseUrl();
    }

    @AfterEach
    void stop() {
        http.stop();
        sync.close();
        for (String ns : List.of("team-a", "team-b", "team-c")) {
            client.pods().inNamespace(ns).delete();
            client.bindings().inNamespace(ns).delete();
        }
    }

    /** Binding args as the scheduler sends them, with the UID the API server gave the pod. */
    private byte[] bindArgs(String ns, String name, String node) {
        String uid = client.pods().inNamespace(ns).withName(name).get().getMetadata().getUid();
        return ("{\"PodName\":\"" + name + "\",\"PodNamespace\":\"" + ns + "\",\"PodUID\":\"" + uid + "\",\"Node\":\"" + node + "\"}")
                .getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    private JsonNode post(String verb, byte[] body) {
        var r = TestSupport.post(url + "/" + verb, body);
        assertEquals(200, r.statusCode(), r.body());
        return TestSupport.tree(r.body());
    }

    @Test
    void nodesComeFromTheirInventoryAnnotations() {
        assertEquals(List.of("gpu-a", "gpu-b", "gpu-c"), ledger.nodes().stream().map(n -> n.name()).sorted().toList());
        JsonNode f = post("filter", TestSupport.payload("filter-names-infer.json"));
        assertEquals("[\"gpu-a\",\"gpu-b\",\"gpu-c\"]", f.get("NodeNames").toString());
    }

    @Test
    void bindWritesTheAnnotationsCreatesTheBindingAndCommits() {
        JsonNode b = post("bind", bindArgs("team-a", "infer-0", "gpu-a"));
        assertEquals("", b.get("Error").asText());

        Placement p = ledger.placement("team-a/infer-0").orElseThrow();
        assertEquals("gpu-a", p.nodeName());
        Pod pod = client.pods().inNamespace("team-a").withName("infer-0").get();
        Map<String, String> a = pod.getMetadata().getAnnotations();
        assertEquals(p, QgpuJson.readPlacement(a.get(QgpuAnnotations.PLACEMENT)));
        assertEquals(String.join(",", p.gpuUuids()), a.get(QgpuAnnotations.VISIBLE_DEVICES));
        assertEquals("gpu-a", a.get(QgpuAnnotations.NODE));
        assertEquals(p.environment().get(Placement.ENV_VISIBLE_DEVICES),
                TestSupport.tree(a.get(QgpuAnnotations.ENV)).get(Placement.ENV_VISIBLE_DEVICES).asText());
        assertEquals("online", a.get(QgpuAnnotations.PRIORITY), "the pod's own annotations are kept");

        Binding binding = client.bindings().inNamespace("team-a").withName("infer-0").get();
        assertNotNull(binding, "a Binding was created");
        assertEquals("Node", binding.getTarget().getKind());
        assertEquals("gpu-a", binding.getTarget().getName());
    }

    @Test
    void aPodWithoutGpuIsBoundWithoutAnnotationsOrReservation() {
        assertEquals("", post("bind", bindArgs("team-c", "web-0", "cpu-d")).get("Error").asText());
        assertEquals(0, ledger.size());
        assertEquals("cpu-d", client.bindings().inNamespace("team-c").withName("web-0").get().getTarget().getName());
        Map<String, String> a = client.pods().inNamespace("team-c").withName("web-0").get().getMetadata().getAnnotations();
        assertTrue(a == null || !a.containsKey(QgpuAnnotations.PLACEMENT));
    }

    @Test
    void aFailedBindingReleasesTheReservation() {
        // 409 as the API server answers when the pod was bound meanwhile (5xx would be retried by fabric8 itself)
        server.expect().post().withPath("/api/v1/namespaces/team-b/bindings")
                .andReturn(409, new StatusBuilder().withCode(409).withMessage("pod train-0 is already assigned").build()).once();
        JsonNode b = post("bind", bindArgs("team-b", "train-0", "gpu-b"));
        String error = b.get("Error").asText();
        assertTrue(error.contains("POST Binding of pod team-b/train-0") && error.contains("HTTP 409"), error);
        assertFalse(ledger.placement("team-b/train-0").isPresent(), "the reservation was released");
        assertEquals(0, ledger.size());
        assertNull(client.bindings().inNamespace("team-b").withName("train-0").get());
        // the scheduler retries: now the API answers, and the same GPUs are free again
        assertEquals("", post("bind", bindArgs("team-b", "train-0", "gpu-b")).get("Error").asText());
        assertEquals(2, ledger.placement("team-b/train-0").orElseThrow().slices().size());
    }

    @Test
    void aFailedAnnotationPatchReleasesTheReservation() {
        server.expect().patch().withPath("/api/v1/namespaces/team-a/pods/infer-0")
                .andReturn(409, new StatusBuilder().withCode(409).withMessage("the object has been modified").build()).once();
        JsonNode b = post("bind", bindArgs("team-a", "infer-0", "gpu-a"));
        assertTrue(b.get("Error").asText().contains("PATCH annotations of pod team-a/infer-0 failed: HTTP 409"), b.toString());
        assertEquals(0, ledger.size());
        assertNull(client.bindings().inNamespace("team-a").withName("infer-0").get(), "no Binding after a failed patch");
    }

    @Test
    void aPodThatIsGoneOrReplacedIsNotBound() {
        byte[] args = bindArgs("team-a", "infer-0", "gpu-a");
        client.pods().inNamespace("team-a").withName("infer-0").delete();
        JsonNode gone = post("bind", args);
        assertTrue(gone.get("Error").asText().contains("pod team-a/infer-0 not found"), gone.toString());
        byte[] otherUid = "{\"PodName\":\"train-0\",\"PodNamespace\":\"team-b\",\"PodUID\":\"0000-old\",\"Node\":\"gpu-b\"}"
                .getBytes(java.nio.charset.StandardCharsets.UTF_8);
        JsonNode replaced = post("bind", otherUid);
        assertTrue(replaced.get("Error").asText().contains("the scheduler asked to bind UID 0000-old"), replaced.toString());
        assertEquals(0, ledger.size());
    }

    @Test
    void mainStartsAgainstTheClusterAndBinds() throws Exception {
        try (Main.Running r = Main.start(Main.parse(new String[] {"--host", "127.0.0.1", "--port", "0", "--url-prefix", "/"}), client)) {
            assertEquals(3, r.extender().ledger().nodes().size());
            var b = TestSupport.post(r.server().baseUrl() + "/bind", bindArgs("team-b", "train-0", "gpu-b"));
            assertEquals("", TestSupport.tree(b.body()).get("Error").asText(), b.body());
            assertEquals("gpu-b", client.bindings().inNamespace("team-b").withName("train-0").get().getTarget().getName());
            assertTrue(r.extender().ledger().placement("team-b/train-0").isPresent());
        }
    }
}
