package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Slice;
import io.qgpu.json.QgpuJson;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementConfig;
import io.qgpu.core.placement.PlacementEngine;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The recorded kube-scheduler payloads (src/test/resources/payloads, in the scheduler's exact
 * shapes) against a running server in demo mode, in both nodeCacheCapable modes.
 */
class RecordedPayloadTest {

    private ExtenderServer server;
    private Ledger ledger;
    private DemoCluster demo;

    /** A server over a ledger with the static inventory (names mode) or with no nodes (nodes learnt from Nodes payloads). */
    private String start(boolean withInventory) throws Exception {
        ledger = withInventory ? Ledger.create(TestSupport.inventory().rules(), TestSupport.inventory().nodes())
                : Ledger.create(List.of());
        demo = new DemoCluster();
        GpuExtender ext = new GpuExtender(ledger, PlacementConfig.defaults(), demo);
        Ledger l = ledger;
        server = ExtenderServer.builder(ext).host("127.0.0.1").port(0).urlPrefix("/qgpu")
                .ledgerView(() -> QgpuJson.writeSnapshot(l.snapshot())).build().start();
        return server.baseUrl();
    }

    @AfterEach
    void stop() {
        if (server != null) {
            server.stop();
        }
    }

    private static JsonNode ok(HttpResponse<String> r) {
        assertEquals(200, r.statusCode(), r.body());
        assertEquals("application/json", r.headers().firstValue("Content-Type").orElse(""));
        return TestSupport.tree(r.body());
    }

    private static Set<String> keys(JsonNode n) {
        Set<String> out = new TreeSet<>();
        n.fieldNames().forEachRemaining(out::add);
        return out;
    }

    private static List<String> names(JsonNode arr) {
        List<String> out = new ArrayList<>();
        arr.forEach(n -> out.add(n.isTextual() ? n.asText() : n.path("metadata").path("name").asText()));
        return out;
    }

    private static Map<String, String> map(JsonNode obj) {
        Map<String, String> out = new LinkedHashMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = obj.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            out.put(e.getKey(), e.getValue().asText());
        }
        return out;
    }

    private static final Set<String> FILTER_KEYS = Set.of("Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error");

    @Test
    void filterByNamesKeepsFeasibleNodesAndMarksNodesWithoutInventoryUnresolvable() throws Exception {
        String url = start(true);
        JsonNode r = ok(TestSupport.post(url + "/filter", TestSupport.payload("filter-names-infer.json")));
        assertEquals(FILTER_KEYS, keys(r));
        assertTrue(r.get("Nodes").isNull(), "NodeNames mode answers with NodeNames only");
        assertEquals(List.of("gpu-a", "gpu-b", "gpu-c"), names(r.get("NodeNames")));
        assertEquals(Map.of(), map(r.get("FailedNodes")));
        Map<String, String> unresolvable = map(r.get("FailedAndUnresolvableNodes"));
        assertEquals(Set.of("cpu-d"), unresolvable.keySet());
        assertTrue(unresolvable.get("cpu-d").contains("no qgpu inventory"), unresolvable.toString());
        assertEquals("", r.get("Error").asText());
        assertEquals(0, ledger.size(), "filter commits nothing");
    }

    @Test
    void filterByNodesEchoesTheSameNodeObjectsAndLearnsInventoryFromAnnotations() throws Exception {
        String url = start(false);
        byte[] payload = TestSupport.payload("filter-nodes-train.json");
        JsonNode r = ok(TestSupport.post(url + "/filter", payload));
        assertEquals(FILTER_KEYS, keys(r));
        assertTrue(r.get("NodeNames").isNull(), "Nodes mode answers with Nodes only");
        assertEquals(List.of("gpu-a", "gpu-b"), names(r.get("Nodes").get("items")));
        // the returned nodes are exactly the input ones (a subset of the input, byte for byte as trees)
        JsonNode in = TestSupport.tree(payload).get("Nodes");
        assertEquals(in.get("items").get(0), r.get("Nodes").get("items").get(0));
        assertEquals(in.get("items").get(1), r.get("Nodes").get("items").get(1));
        assertEquals(in.get("metadata"), r.get("Nodes").get("metadata"));
        Map<String, String> unresolvable = map(r.get("FailedAndUnresolvableNodes"));
        assertEquals(Set.of("gpu-c", "cpu-d"), unresolvable.keySet());
        assertTrue(unresolvable.get("gpu-c").contains("NOT_ENOUGH_GPUS requested 2 GPUs, available 1 GPU"), unresolvable.get("gpu-c"));
        assertEquals(Map.of(), map(r.get("FailedNodes")));
        assertEquals(Set.of("gpu-a", "gpu-b", "gpu-c"), new TreeSet<>(ledger.nodes().stream().map(n -> n.name()).toList()),
                "nodes with a qgpu.io/inventory annotation were added to the ledger");
    }

    @Test
    void aBusyNodeIsResolvableButATooSmallOneIsNot() throws Exception {
        String url = start(true);
        // someone holds GPU-a0 exclusively: train-0 (2 whole GPUs) cannot go to gpu-a now, but could later
        Claim other = Claim.builder("team-z/holder").exclusive().priority(PriorityClass.OFFLINE).build();
        assertTrue(ledger.reserve(new Placement(other, "gpu-a", List.of(new Slice("GPU-a0", 16 * GpuDevice.GIB, 100, 100)))).reserved());
        JsonNode r = ok(TestSupport.post(url + "/filter", TestSupport.payload("filter-names-train.json")));
        assertEquals(List.of("gpu-b"), names(r.get("NodeNames")));
        Map<String, String> failed = map(r.get("FailedNodes"));
        Map<String, String> unresolvable = map(r.get("FailedAndUnresolvableNodes"));
        assertEquals(Set.of("gpu-a"), failed.keySet());
        // one reason per failed node, from the node's summaries: whole GPUs needed, how many are free
        assertTrue(failed.get("gpu-a").startsWith("gpu-a: EXCLUSIVE 2 free whole GPU(s) needed, 1 empty"), failed.get("gpu-a"));
        assertEquals(Set.of("gpu-c", "cpu-d"), unresolvable.keySet());
    }

    @Test
    void aModelSelectorMakesOtherModelsUnresolvable() throws Exception {
        String url = start(true);
        JsonNode r = ok(TestSupport.post(url + "/filter", TestSupport.payload("filter-names-embed-t4.json")));
        assertEquals(List.of("gpu-a", "gpu-c"), names(r.get("NodeNames")));
        Map<String, String> unresolvable = map(r.get("FailedAndUnresolvableNodes"));
        assertEquals(Set.of("gpu-b", "cpu-d"), unresolvable.keySet());
        assertTrue(unresolvable.get("gpu-b").contains("MODEL_NOT_SELECTED"), unresolvable.get("gpu-b"));
    }

    @Test
    void aPodWithoutGpuResourcesPassesEveryNode() throws Exception {
        String url = start(false);
        JsonNode r = ok(TestSupport.post(url + "/filter", TestSupport.payload("filter-nodes-web.json")));
        assertEquals(List.of("gpu-a", "gpu-b", "gpu-c", "cpu-d"), names(r.get("Nodes").get("items")));
        assertEquals(Map.of(), map(r.get("FailedAndUnresolvableNodes")));
    }

    @Test
    void prioritizeScoresEveryCandidateInOrderAndRanksLikeTheEngine() throws Exception {
        String url = start(true);
        JsonNode r = ok(TestSupport.post(url + "/prioritize", TestSupport.payload("prioritize-names-infer.json")));
        assertTrue(r.isArray());
        assertEquals(List.of("gpu-a", "gpu-b", "gpu-c", "cpu-d"), hosts(r));
        for (JsonNode hp : r) {
            assertEquals(Set.of("Host", "Score"), keys(hp));
            long s = hp.get("Score").asLong();
            assertTrue(s >= 0 && s <= 10, hp.toString());
        }
        assertEquals(0, score(r, "cpu-d"));

        // binpack at node level: a node that already holds work scores higher than empty ones
        Claim other = Claim.builder("team-z/small").memoryGiB(4).compute(10, 100).build();
        assertTrue(ledger.reserve(new Placement(other, "gpu-c", List.of(new Slice("GPU-c0", 4 * GpuDevice.GIB, 10, 100)))).reserved());
        JsonNode r2 = ok(TestSupport.post(url + "/prioritize", TestSupport.payload("prioritize-names-infer.json")));
        assertTrue(score(r2, "gpu-c") > score(r2, "gpu-a"), r2.toString());
        // the best-scored node is the node the engine would choose among the same candidates
        Claim infer = new PodClaims(ledger.rules()).claimOf(TestSupport.pod("pod-infer.json")).orElseThrow();
        String chosen = PlacementEngine.create(ledger).explain(infer).chosen().orElseThrow().node();
        long best = 0;
        for (JsonNode hp : r2) {
            best = Math.max(best, hp.get("Score").asLong());
        }
        assertEquals(best, score(r2, chosen), "engine chose " + chosen + "; scores " + r2);
    }

    @Test
    void prioritizeByNodes() throws Exception {
        String url = start(false);
        JsonNode r = ok(TestSupport.post(url + "/prioritize", TestSupport.payload("prioritize-nodes-train.json")));
        assertEquals(List.of("gpu-a", "gpu-b", "gpu-c", "cpu-d"), hosts(r));
        assertTrue(score(r, "gpu-b") > 0 && score(r, "gpu-a") > 0, r.toString());
        assertEquals(0, score(r, "gpu-c"), "gpu-c cannot take 2 GPUs");
        assertEquals(0, score(r, "cpu-d"));
        // 2 whole GPUs: the NVLink pair on gpu-b beats the PCIe pair on gpu-a
        assertTrue(score(r, "gpu-b") > score(r, "gpu-a"), r.toString());
    }

    @Test
    void bindCommitsToTheLedgerAndRecordsTheDecisionOnThePod() throws Exception {
        String url = start(true);
        ok(TestSupport.post(url + "/filter", TestSupport.payload("filter-names-infer.json")));
        JsonNode b = ok(TestSupport.post(url + "/bind", TestSupport.payload("bind-infer.json")));
        assertEquals(Set.of("Error"), keys(b));
        assertEquals("", b.get("Error").asText());

        Placement p = ledger.placement("team-a/infer-0").orElseThrow();
        assertEquals("gpu-a", p.nodeName());
        assertEquals(8 * GpuDevice.GIB, p.slices().get(0).memoryBytes());
        assertEquals(30, p.claim().computeRequest());
        assertEquals(60, p.claim().computeLimit());
        assertEquals(PriorityClass.ONLINE, p.claim().priority());

        Map<String, String> ann = demo.pod("team-a", "infer-0").orElseThrow().getMetadata().getAnnotations();
        assertEquals(p, QgpuJson.readPlacement(ann.get(QgpuAnnotations.PLACEMENT)));
        assertEquals(String.join(",", p.gpuUuids()), ann.get(QgpuAnnotations.VISIBLE_DEVICES));
        assertEquals(p.environment(), map(TestSupport.tree(ann.get(QgpuAnnotations.ENV))));
        assertEquals("gpu-a", demo.pod("team-a", "infer-0").orElseThrow().getSpec().getNodeName());

        // a retried bind of the same pod to the same node is idempotent
        assertEquals("", ok(TestSupport.post(url + "/bind", TestSupport.payload("bind-infer.json"))).get("Error").asText());
        assertEquals(1, ledger.size());
    }

    @Test
    void bindThatCannotFitAnswersErrorAndChangesNothing() throws Exception {
        String url = start(true);
        ok(TestSupport.post(url + "/filter", TestSupport.payload("filter-names-train.json")));
        String before = QgpuJson.writeSnapshot(ledger.snapshot());
        // gpu-c has one GPU; train-0 needs two: its filter did not pass gpu-c, and bind says so (BindErrorsTest holds the
        // "cannot take" answer of a node that passed the filter and no longer fits)
        byte[] toC = "{\"PodName\":\"train-0\",\"PodNamespace\":\"team-b\",\"PodUID\":\"9c8d7e6f-5a4b-4c3d-9e2f-1a0b9c8d7e6f\",\"Node\":\"gpu-c\"}"
                .getBytes(java.nio.charset.StandardCharsets.UTF_8);
        JsonNode b = ok(TestSupport.post(url + "/bind", toC));
        assertEquals("node gpu-c did not pass the filter for pod team-b/train-0 (it passed: gpu-a, gpu-b)", b.get("Error").asText());
        // a pod the server never saw
        byte[] unknown = "{\"PodName\":\"ghost\",\"PodNamespace\":\"team-b\",\"PodUID\":\"x\",\"Node\":\"gpu-b\"}"
                .getBytes(java.nio.charset.StandardCharsets.UTF_8);
        JsonNode g = ok(TestSupport.post(url + "/bind", unknown));
        assertTrue(g.get("Error").asText().contains("not found"), g.toString());
        assertEquals(before, QgpuJson.writeSnapshot(ledger.snapshot()));
        assertFalse(ledger.placement("team-b/train-0").isPresent());
        // and the right node works
        assertEquals("", ok(TestSupport.post(url + "/bind", TestSupport.payload("bind-train.json"))).get("Error").asText());
        Placement t = ledger.placement("team-b/train-0").orElseThrow();
        assertEquals("gpu-b", t.nodeName());
        assertEquals(2, t.gpuUuids().size());
        assertTrue(t.claim().exclusive());
    }

    @Test
    void healthzAndLedgerView() throws Exception {
        start(true);
        HttpResponse<String> h = TestSupport.send(java.net.http.HttpRequest.newBuilder(
                java.net.URI.create("http://127.0.0.1:" + server.port() + "/healthz")).GET().build());
        assertEquals(200, h.statusCode());
        assertEquals("ok\n", h.body());
        Claim other = Claim.builder("team-z/small").memoryGiB(4).compute(10, 100).build();
        assertTrue(ledger.reserve(new Placement(other, "gpu-c", List.of(new Slice("GPU-c0", 4 * GpuDevice.GIB, 10, 100)))).reserved());
        HttpResponse<String> v = TestSupport.send(java.net.http.HttpRequest.newBuilder(
                java.net.URI.create(server.baseUrl() + "/ledger")).GET().build());
        assertEquals(200, v.statusCode());
        assertEquals(ledger.snapshot(), QgpuJson.readSnapshot(v.body()));
    }

    private static List<String> hosts(JsonNode list) {
        List<String> out = new ArrayList<>();
        list.forEach(n -> out.add(n.get("Host").asText()));
        return out;
    }

    private static long score(JsonNode list, String host) {
        for (JsonNode n : list) {
            if (n.get("Host").asText().equals(host)) {
                return n.get("Score").asLong();
            }
        }
        throw new AssertionError("no host " + host + " in " + list);
    }
}
