package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fabric8.kubernetes.api.model.Pod;
import io.qgpu.json.QgpuJson;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementConfig;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The {@code preempt} verb over real HTTP, in both nodeCacheCapable modes, against a demo-mode
 * server whose GPUs were filled through the bind verb. Inventory: gpu-a 2 x T4 16 GiB, gpu-b
 * 4 x A100 (pool training), gpu-c 1 x T4. The pod to make room for is the recorded online inference
 * pod (8 GiB, 30% compute, priority 0).
 */
class PreemptVerbTest {

    private ExtenderServer server;
    private Ledger ledger;
    private DemoCluster demo;
    private String url;

    @BeforeEach
    void start() throws Exception {
        ledger = Ledger.create(TestSupport.inventory().rules(), TestSupport.inventory().nodes());
        demo = new DemoCluster();
        server = ExtenderServer.builder(new GpuExtender(ledger, PlacementConfig.defaults(), demo))
                .host("127.0.0.1").port(0).urlPrefix("/qgpu").threads(2).build().start();
        url = server.baseUrl();
        // gpu-a: two offline 10 GiB pods, one per T4; gpu-c: an online 10 GiB pod of equal rank to the infer pod
        bind(pod("team-b", "batch-0", "offline", 10, 0), "gpu-a");
        bind(pod("team-b", "batch-1", "offline", 10, 0), "gpu-a");
        bind(pod("team-c", "online-0", "online", 10, 0), "gpu-c");
        assertEquals(2, ledger.node("gpu-a").orElseThrow().tenants());
    }

    @AfterEach
    void stop() {
        server.stop();
    }

    /** A pod like the recorded infer pod, with this namespace, name, class, memory and priority. */
    static ObjectNode podJson(String ns, String name, String priorityClass, int gib, int priority) {
        ObjectNode pod = (ObjectNode) TestSupport.tree(TestSupport.payload("pod-infer.json"));
        ObjectNode meta = (ObjectNode) pod.get("metadata");
        meta.put("namespace", ns).put("name", name).put("uid", "uid-" + name);
        ObjectNode ann = meta.putObject("annotations");
        ann.put("qgpu.io/priority", priorityClass);
        ObjectNode spec = (ObjectNode) pod.get("spec");
        spec.put("priority", priority);
        for (String k : List.of("limits", "requests")) {
            ObjectNode r = (ObjectNode) spec.get("containers").get(0).get("resources").get(k);
            r.put("qgpu.io/gpu-memory", Integer.toString(gib)).put("qgpu.io/gpu-core", "0");
        }
        return pod;
    }

    static Pod pod(String ns, String name, String priorityClass, int gib, int priority) {
        return ExtenderRequests.readKube(podJson(ns, name, priorityClass, gib, priority).toString(), Pod.class);
    }

    private void bind(Pod p, String node) {
        demo.remember(p);
        String body = "{\"PodName\":\"" + p.getMetadata().getName() + "\",\"PodNamespace\":\"" + p.getMetadata().getNamespace()
                + "\",\"PodUID\":\"" + p.getMetadata().getUid() + "\",\"Node\":\"" + node + "\"}";
        HttpResponse<String> r = TestSupport.post(url + "/bind", body.getBytes(StandardCharsets.UTF_8));
        assertEquals(200, r.statusCode(), r.body());
        assertEquals("", TestSupport.tree(r.body()).get("Error").asText(), r.body());
    }

    private static JsonNode infer(int priority) {
        ObjectNode pod = (ObjectNode) TestSupport.tree(TestSupport.payload("pod-infer.json"));
        ((ObjectNode) pod.get("spec")).put("priority", priority);
        return pod;
    }

    /** A request in nodeCacheCapable mode: per node, the victims' UIDs and a PDB count. */
    private static String metaArgs(JsonNode pod, Map<String, List<String>> victims, int pdb) {
        ObjectNode root = TestSupport.JSON.createObjectNode();
        root.set("Pod", pod);
        ObjectNode m = root.putObject("NodeNameToMetaVictims");
        victims.forEach((node, uids) -> {
            ObjectNode v = m.putObject(node);
            ArrayNode pods = v.putArray("Pods");
            uids.forEach(u -> pods.addObject().put("UID", u));
            v.put("NumPDBViolations", pdb);
        });
        return root.toString();
    }

    private JsonNode preempt(String body) {
        HttpResponse<String> r = TestSupport.post(url + "/preempt", body.getBytes(StandardCharsets.UTF_8));
        assertEquals(200, r.statusCode(), r.body());
        assertEquals("application/json", r.headers().firstValue("Content-Type").orElse(""));
        return TestSupport.tree(r.body());
    }

    private static List<String> uids(JsonNode victims) {
        List<String> out = new ArrayList<>();
        victims.get("Pods").forEach(p -> out.add(p.get("UID").asText()));
        return out;
    }

    @Test
    void keepsNodesWhereThePlanMakesRoomWithOnlyTheVictimsNeeded() {
        String before = QgpuJson.writeSnapshot(ledger.snapshot());
        JsonNode r = preempt(metaArgs(infer(0), Map.of(
                "gpu-a", List.of("uid-batch-0", "uid-batch-1", "uid-cpu-only"),
                "gpu-c", List.of("uid-online-0"),
                "cpu-node", List.of("uid-x")), 1));
        JsonNode m = r.get("NodeNameToMetaVictims");
        assertEquals(new TreeSet<>(List.of("gpu-a")), names(m), r.toString());
        // one 10 GiB tenant is enough for 8 GiB (ties go to the tenant id); the pod holding no GPU slice is kept
        assertEquals(List.of("uid-cpu-only", "uid-batch-0"), uids(m.get("gpu-a")));
        assertEquals(1, m.get("gpu-a").get("NumPDBViolations").asLong());
        assertEquals(before, QgpuJson.writeSnapshot(ledger.snapshot()), "preempt commits nothing");
    }

    @Test
    void thePodPriorityOrdersTenantsWithinTheClass() {
        // online-0 is online with priority 0 like the infer pod: spared at priority 0, a victim at priority 100
        assertTrue(preempt(metaArgs(infer(0), Map.of("gpu-c", List.of("uid-online-0")), 0))
                .get("NodeNameToMetaVictims").isEmpty());
        JsonNode m = preempt(metaArgs(infer(100), Map.of("gpu-c", List.of("uid-online-0")), 0)).get("NodeNameToMetaVictims");
        assertEquals(List.of("uid-online-0"), uids(m.get("gpu-c")));
    }

    @Test
    void fullPodsWithoutNodeCache() {
        ObjectNode root = TestSupport.JSON.createObjectNode();
        root.set("Pod", infer(0));
        ObjectNode v = root.putObject("NodeNameToVictims").putObject("gpu-a");
        ArrayNode pods = v.putArray("Pods");
        pods.add(podJson("team-b", "batch-1", "offline", 10, 0));
        pods.add(podJson("team-b", "batch-0", "offline", 10, 0));
        v.put("NumPDBViolations", 0);
        JsonNode m = preempt(root.toString()).get("NodeNameToMetaVictims");
        assertEquals(List.of("uid-batch-0"), uids(m.get("gpu-a")));
    }

    @Test
    void aPodWithoutGpusKeepsTheSchedulersAnswer() {
        ObjectNode pod = (ObjectNode) TestSupport.tree(TestSupport.payload("pod-web.json"));
        JsonNode m = preempt(metaArgs(pod, Map.of("cpu-node", List.of("u1", "u2")), 2)).get("NodeNameToMetaVictims");
        assertEquals(List.of("u1", "u2"), uids(m.get("cpu-node")));
        assertEquals(2, m.get("cpu-node").get("NumPDBViolations").asLong());
    }

    @Test
    void theConfigurationExampleNamesTheVerb() throws Exception {
        assertTrue(java.nio.file.Files.readString(java.nio.file.Path.of("examples/scheduler-config.yaml"))
                .contains("preemptVerb: preempt"));
    }

    @Test
    void badBodiesGet4xxNamingTheField() {
        String pod = infer(0).toString();
        expect400("{\"Pod\":" + pod + "}", "exactly one of NodeNameToVictims");
        expect400("{\"Pod\":" + pod + ",\"NodeNameToVictims\":{},\"NodeNameToMetaVictims\":{}}", "both were");
        expect400("{\"NodeNameToMetaVictims\":{}}", "ExtenderPreemptionArgs.Pod");
        expect400("{\"Pod\":" + pod + ",\"NodeNameToMetaVictims\":[]}", "ExtenderPreemptionArgs.NodeNameToMetaVictims");
        expect400("{\"Pod\":" + pod + ",\"NodeNameToMetaVictims\":{\"gpu-a\":{\"Pods\":{}}}}",
                "ExtenderPreemptionArgs.NodeNameToMetaVictims[gpu-a].Pods");
        expect400("{\"Pod\":" + pod + ",\"NodeNameToMetaVictims\":{\"gpu-a\":{\"Pods\":[{}]}}}",
                "ExtenderPreemptionArgs.NodeNameToMetaVictims[gpu-a].Pods[0].UID");
        expect400("{\"Pod\":" + pod + ",\"NodeNameToMetaVictims\":{\"gpu-a\":{\"NumPDBViolations\":-1}}}",
                "NumPDBViolations");
        expect400("{\"Pod\":" + pod + ",\"NodeNameToMetaVictims\":{\"gpu-a\":{\"NumPDBViolations\":\"1\"}}}",
                "NumPDBViolations");
        expect400("{\"Pod\":" + pod + ",\"NodeNameToVictims\":{\"gpu-a\":{\"Pods\":[{\"metadata\":{\"name\":\"x\"}}]}}}",
                "ExtenderPreemptionArgs.NodeNameToVictims[gpu-a].Pods[0].metadata.namespace");
        expect400("{\"Pod\":" + pod + ",\"NodeNameToMetaVictims\":{\"gpu-a\":null}}", "NodeNameToMetaVictims[gpu-a]");
        expect400("{\"Pod\":", "malformed JSON");
        HttpResponse<String> get = TestSupport.send(HttpRequest.newBuilder(URI.create(url + "/preempt")).GET().build());
        assertEquals(405, get.statusCode(), get.body());
    }

    private void expect400(String body, String part) {
        HttpResponse<String> r = TestSupport.post(url + "/preempt", body.getBytes(StandardCharsets.UTF_8));
        assertEquals(400, r.statusCode(), body + " -> " + r.body());
        assertTrue(TestSupport.tree(r.body()).path("Error").asText().contains(part), "expected <" + part + "> in " + r.body());
    }

    private static TreeSet<String> names(JsonNode obj) {
        TreeSet<String> out = new TreeSet<>();
        obj.fieldNames().forEachRemaining(out::add);
        return out;
    }
}
