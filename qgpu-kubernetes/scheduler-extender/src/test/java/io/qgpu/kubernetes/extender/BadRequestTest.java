package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.Placement;
import io.qgpu.api.Slice;
import io.qgpu.json.QgpuJson;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementConfig;
import java.io.ByteArrayInputStream;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Every kind of bad request gets a 4xx with a clear message, and the ledger is never touched. */
class BadRequestTest {

    private static final int LIMIT = 256 * 1024;

    private ExtenderServer server;
    private Ledger ledger;
    private String url;
    private String before;

    @BeforeEach
    void start() throws Exception {
        ledger = Ledger.create(TestSupport.inventory().rules(), TestSupport.inventory().nodes());
        Claim held = Claim.builder("team-z/held").memoryGiB(4).compute(10, 50).build();
        assertTrue(ledger.reserve(new Placement(held, "gpu-a", List.of(new Slice("GPU-a1", 4 * GpuDevice.GIB, 10, 50)))).reserved());
        DemoCluster demo = new DemoCluster();
        server = ExtenderServer.builder(new GpuExtender(ledger, PlacementConfig.defaults(), demo))
                .host("127.0.0.1").port(0).urlPrefix("qgpu/").maxBodyBytes(LIMIT).threads(2).build().start();
        url = server.baseUrl();
        before = QgpuJson.writeSnapshot(ledger.snapshot());
    }

    @AfterEach
    void stop() {
        server.stop();
        // whatever was sent, the ledger is as it was
        assertEquals(before, QgpuJson.writeSnapshot(ledger.snapshot()));
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private void expect(int status, String messagePart, HttpResponse<String> r) {
        assertEquals(status, r.statusCode(), r.body());
        JsonNode body = TestSupport.tree(r.body());
        assertTrue(body.path("Error").asText().contains(messagePart),
                "expected the message to contain <" + messagePart + "> but was " + r.body());
    }

    private void filter(int status, String messagePart, byte[] body) {
        expect(status, messagePart, TestSupport.post(url + "/filter", body));
    }

    /** The infer pod payload with one change made to it. */
    private static byte[] withPod(java.util.function.Consumer<ObjectNode> change) {
        ObjectNode args = (ObjectNode) TestSupport.tree(TestSupport.payload("filter-names-infer.json"));
        change.accept((ObjectNode) args.get("Pod"));
        return utf8(args.toString());
    }

    private static ObjectNode limits(ObjectNode pod) {
        return (ObjectNode) pod.get("spec").get("containers").get(0).get("resources").get("limits");
    }

    private static ObjectNode requests(ObjectNode pod) {
        return (ObjectNode) pod.get("spec").get("containers").get(0).get("resources").get("requests");
    }

    private static ObjectNode annotations(ObjectNode pod) {
        return (ObjectNode) pod.get("metadata").get("annotations");
    }

    @Test
    void malformedJson() {
        filter(400, "malformed JSON", utf8("{\"Pod\": {"));
        filter(400, "malformed JSON", utf8("{\"Pod\": {}} trailing"));
        filter(400, "malformed JSON", utf8("{'Pod': 1}"));
        filter(400, "must be a JSON object, was array", utf8("[]"));
        filter(400, "the request body is empty", new byte[0]);
        filter(400, "malformed JSON", utf8("{\"NodeNames\":[],\"NodeNames\":[]}"));
        filter(400, "malformed JSON", utf8("[".repeat(5000) + "]".repeat(5000)));
        filter(400, "malformed JSON", new byte[] {(byte) 0xff, (byte) 0xfe, 0, 1});
    }

    @Test
    void wrongShapes() {
        filter(400, "ExtenderArgs.Pod = null: is required", utf8("{\"NodeNames\":[\"gpu-a\"]}"));
        filter(400, "ExtenderArgs.Pod = \"number\": must be a Pod object", utf8("{\"Pod\":5,\"NodeNames\":[\"gpu-a\"]}"));
        filter(400, "cannot be read as a Kubernetes Pod", withPod(p -> ((ObjectNode) p.get("spec")).put("containers", "none")));
        filter(400, "Pod.metadata.namespace", withPod(p -> ((ObjectNode) p.get("metadata")).remove("namespace")));
        ObjectNode neither = (ObjectNode) TestSupport.tree(TestSupport.payload("filter-names-infer.json"));
        neither.putNull("NodeNames");
        filter(400, "neither was", utf8(neither.toString()));
        ObjectNode both = (ObjectNode) TestSupport.tree(TestSupport.payload("filter-names-infer.json"));
        both.putObject("Nodes").putArray("items");
        filter(400, "both were", utf8(both.toString()));
        ObjectNode badNames = (ObjectNode) TestSupport.tree(TestSupport.payload("filter-names-infer.json"));
        badNames.putArray("NodeNames").add("gpu-a").add(7);
        filter(400, "ExtenderArgs.NodeNames[1] = 7: must be a non-blank string", utf8(badNames.toString()));
        // a fraction or an exponent is not shown reformatted (1e5 as 100000.0): the answer names its kind
        filter(400, "ExtenderArgs.NodeNames[1] = a number: must be a non-blank string",
                utf8(badNames.toString().replace("\"NodeNames\":[\"gpu-a\",7]", "\"NodeNames\":[\"gpu-a\",1e5]")));
        badNames.putArray("NodeNames").add("gpu-a").add("gpu-a");
        filter(400, "is listed twice", utf8(badNames.toString()));
        badNames.put("NodeNames", "gpu-a");
        filter(400, "must be an array of node names", utf8(badNames.toString()));
        ObjectNode nameless = (ObjectNode) TestSupport.tree(TestSupport.payload("filter-nodes-infer.json"));
        ((ObjectNode) nameless.get("Nodes").get("items").get(1).get("metadata")).remove("name");
        filter(400, "ExtenderArgs.Nodes.items[1].metadata.name = null: is required", utf8(nameless.toString()));
        ObjectNode twice = (ObjectNode) TestSupport.tree(TestSupport.payload("filter-names-infer.json"));
        twice.set("pod", twice.get("Pod"));
        filter(400, "duplicates key Pod", utf8(twice.toString()));
    }

    @Test
    void unknownOrInvalidPodResources() {
        filter(400, "unknown qgpu.io resource", withPod(p -> limits(p).put("qgpu.io/gpu-mem", "8")));
        filter(400, "unknown qgpu.io annotation", withPod(p -> annotations(p).put("qgpu.io/priorty", "online")));
        filter(400, "must be a whole number of GiB", withPod(p -> {
            limits(p).put("qgpu.io/gpu-memory", "8G");
            requests(p).put("qgpu.io/gpu-memory", "8G");
        }));
        filter(400, "is not a quantity", withPod(p -> {
            limits(p).put("qgpu.io/gpu-memory", "eight");
            requests(p).remove("qgpu.io/gpu-memory");
        }));
        filter(400, "must equal the limit", withPod(p -> requests(p).put("qgpu.io/gpu-core", "20")));
        filter(400, "must be a multiple of 5", withPod(p -> {
            limits(p).put("qgpu.io/gpu-core", "33");
            requests(p).put("qgpu.io/gpu-core", "33");
        }));
        filter(400, "must be one of online, offline", withPod(p -> annotations(p).put("qgpu.io/priority", "urgent")));
        filter(400, "qgpu.io/gpu-core-limit", withPod(p -> annotations(p).put("qgpu.io/gpu-core-limit", "20")));
        filter(400, "must be a whole number between 1 and 1024", withPod(p -> {
            limits(p).put("qgpu.io/gpu", "0");
            requests(p).put("qgpu.io/gpu", "0");
        }));
        filter(400, "only supported on regular containers", withPod(p -> ((ObjectNode) p.get("spec")).putArray("initContainers")
                .addObject().put("name", "init").putObject("resources").putObject("limits").put("qgpu.io/gpu", "1")));
        filter(400, "must sit in one container only", withPod(p -> ((ObjectNode) p.get("spec").get("containers").get(1)
                .get("resources").get("limits")).put("qgpu.io/gpu-memory", "2")));
    }

    @Test
    void oversizeBodiesGet413() {
        byte[] big = new byte[3 * LIMIT];
        java.util.Arrays.fill(big, (byte) ' ');
        // repeated: the client is still sending when the server refuses, and must still read the 413
        for (int i = 0; i < 5; i++) {
            expect(413, "request body of " + big.length + " bytes is over the limit", TestSupport.post(url + "/filter", big));
            // the same without a Content-Length (chunked): cut off while reading
            HttpResponse<String> chunked = TestSupport.send(HttpRequest.newBuilder(URI.create(url + "/filter"))
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(big))).build());
            expect(413, "request body is over the limit", chunked);
            expect(413, "over the limit", TestSupport.post(url + "/bind", big));
        }
        // and the connection pool still works
        assertEquals(200, TestSupport.post(url + "/filter", TestSupport.payload("filter-names-infer.json")).statusCode());
    }

    @Test
    void wrongMethodPathOrContentType() {
        HttpResponse<String> get = TestSupport.send(HttpRequest.newBuilder(URI.create(url + "/filter")).GET().build());
        expect(405, "method GET not allowed", get);
        assertEquals("POST", get.headers().firstValue("Allow").orElse(""));
        HttpResponse<String> put = TestSupport.send(HttpRequest.newBuilder(URI.create(url + "/bind"))
                .PUT(HttpRequest.BodyPublishers.ofString("{}")).build());
        expect(405, "method PUT not allowed", put);
        expect(404, "no such path /qgpu/evict", TestSupport.post(url + "/evict", utf8("{}")));
        expect(404, "no such path /filter", TestSupport.post("http://127.0.0.1:" + server.port() + "/filter", utf8("{}")));
        HttpResponse<String> text = TestSupport.send(HttpRequest.newBuilder(URI.create(url + "/filter"))
                .header("Content-Type", "text/plain").POST(HttpRequest.BodyPublishers.ofString("{}")).build());
        expect(415, "Content-Type text/plain is not supported", text);
    }

    @Test
    void badBindingArgs() {
        expect(400, "ExtenderBindingArgs.Node = null: is required",
                TestSupport.post(url + "/bind", utf8("{\"PodName\":\"a\",\"PodNamespace\":\"b\",\"PodUID\":\"c\"}")));
        expect(400, "ExtenderBindingArgs.PodName = 5: must be a string",
                TestSupport.post(url + "/bind", utf8("{\"PodName\":5,\"PodNamespace\":\"b\",\"PodUID\":\"c\",\"Node\":\"gpu-a\"}")));
        expect(400, "ExtenderBindingArgs.PodName = a number: must be a string",
                TestSupport.post(url + "/bind", utf8("{\"PodName\":1.6e1,\"PodNamespace\":\"b\",\"PodUID\":\"c\",\"Node\":\"gpu-a\"}")));
        expect(400, "ExtenderBindingArgs.PodNamespace = \"\": must not be blank",
                TestSupport.post(url + "/bind", utf8("{\"PodName\":\"a\",\"PodNamespace\":\"\",\"PodUID\":\"c\",\"Node\":\"gpu-a\"}")));
        expect(400, "malformed JSON", TestSupport.post(url + "/bind", utf8("{\"PodName\":")));
    }

    /** Issue 30 item 4: a memory too large for the ledger states the range, not "a positive whole number". */
    @Test
    void aMemoryTooLargeStatesTheRange() {
        filter(400, "limits[qgpu.io/gpu-memory] = \"99999999999\": is too large: at most 8589934591 GiB (9223372036854775807 bytes)",
                withPod(p -> {
                    limits(p).put("qgpu.io/gpu-memory", "99999999999");
                    requests(p).put("qgpu.io/gpu-memory", "99999999999");
                }));
    }

    /** Issue 30 item 4: malformed JSON is said in words, not in the parser's. */
    @Test
    void malformedJsonIsSaidInWords() {
        HttpResponse<String> r = TestSupport.post(url + "/filter", utf8("{\"Pod\": garbage}"));
        expect(400, "ExtenderArgs: malformed JSON: unexpected text 'garbage': a JSON value is a string in double quotes", r);
        assertTrue(!r.body().contains("Unrecognized token") && !r.body().contains("was expecting"), r.body());
        HttpResponse<String> n = TestSupport.post(url + "/filter", utf8("{\"Pod\": {\"a\": NaN}}"));
        expect(400, "NaN is not a JSON number", n);
        assertTrue(!n.body().contains("enable"), n.body());
    }

    /** Issue 30: the scheduler always sends PodUID; a bind without it could bind a pod recreated under the same name. */
    @Test
    void aBindWithoutPodUidIsRefusedWithTheField() {
        expect(400, "ExtenderBindingArgs.PodUID = null: is required",
                TestSupport.post(url + "/bind", utf8("{\"PodName\":\"infer-0\",\"PodNamespace\":\"team-a\",\"Node\":\"gpu-a\"}")));
        expect(400, "ExtenderBindingArgs.PodUID = \"\": must not be blank",
                TestSupport.post(url + "/bind", utf8("{\"PodName\":\"infer-0\",\"PodNamespace\":\"team-a\",\"PodUID\":\"\",\"Node\":\"gpu-a\"}")));
    }

    /** Issue 30: a bind to a node the pod's filter did not pass is refused with the nodes it did pass. */
    @Test
    void aBindToANodeTheFilterDidNotPassIsRefusedWithAReason() {
        ObjectNode args = (ObjectNode) TestSupport.tree(TestSupport.payload("filter-names-infer.json"));
        args.putArray("NodeNames").add("gpu-a");
        HttpResponse<String> f = TestSupport.post(url + "/filter", utf8(args.toString()));
        assertEquals(200, f.statusCode(), f.body());
        assertEquals("[\"gpu-a\"]", TestSupport.tree(f.body()).get("NodeNames").toString(), f.body());
        ObjectNode bind = (ObjectNode) TestSupport.tree(TestSupport.payload("bind-infer.json"));
        bind.put("Node", "gpu-b");
        HttpResponse<String> r = TestSupport.post(url + "/bind", utf8(bind.toString()));
        assertEquals(200, r.statusCode(), r.body());
        assertEquals("node gpu-b did not pass the filter for pod team-a/infer-0 (it passed: gpu-a)",
                TestSupport.tree(r.body()).get("Error").asText());
    }

    /** Issue 30: HEAD /healthz answers 200 with no body (and so without the JDK server's warning); 404 lists every path. */
    @Test
    void headHealthzAndThe404ListEveryPath() {
        java.util.logging.Logger jdk = java.util.logging.Logger.getLogger("com.sun.net.httpserver");
        List<String> warnings = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler h = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                if (r.getLevel().intValue() >= java.util.logging.Level.WARNING.intValue()) {
                    warnings.add(r.getMessage());
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        jdk.addHandler(h);
        HttpResponse<String> head;
        try {
            head = TestSupport.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/healthz"))
                    .method("HEAD", HttpRequest.BodyPublishers.noBody()).build());
        } finally {
            jdk.removeHandler(h);
        }
        assertEquals(List.of(), warnings, "the JDK's server warned");
        assertEquals(200, head.statusCode());
        assertEquals("", head.body());
        HttpResponse<String> nf = TestSupport.post(url + "/evict", utf8("{}"));
        assertEquals(404, nf.statusCode());
        assertEquals("no such path /qgpu/evict; the extender serves POST /qgpu/filter, /qgpu/prioritize, /qgpu/bind and /qgpu/preempt;"
                + " GET (or HEAD) /healthz, and /readyz", TestSupport.tree(nf.body()).get("Error").asText());
    }

    @Test
    void aBindOfAPodWithABadSpecIs400AndReservesNothing() {
        // the demo cluster remembers the pod shown to filter; its bind reads the same bad spec
        filter(400, "unknown qgpu.io resource", withPod(p -> limits(p).put("qgpu.io/gpus", "1")));
        expect(400, "unknown qgpu.io resource", TestSupport.post(url + "/bind", TestSupport.payload("bind-infer.json")));
    }

    @Test
    void theServerKeepsServingAfterBadRequests() {
        for (int i = 0; i < 20; i++) {
            filter(400, "malformed JSON", utf8("{"));
        }
        HttpResponse<String> ok = TestSupport.post(url + "/filter", TestSupport.payload("filter-names-infer.json"));
        assertEquals(200, ok.statusCode(), ok.body());
    }
}
