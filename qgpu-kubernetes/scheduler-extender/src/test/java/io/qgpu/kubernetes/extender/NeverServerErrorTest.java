package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qgpu.json.QgpuJson;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementConfig;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/**
 * The contract "bad input never gets a 5xx and never changes the ledger", checked by breaking every
 * field of the recorded payloads in every way (plus seeded random byte damage), and shown to catch a
 * deliberately broken extender.
 */
class NeverServerErrorTest {

    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    /** Values every field is replaced with in turn. */
    private static final List<JsonNode> BAD = List.of(F.nullNode(), F.numberNode(-1), F.textNode(""), F.textNode("x"),
            F.arrayNode(), F.objectNode());

    private static long seed() {
        String s = System.getProperty("qgpu.seed", "");
        try {
            return Long.parseLong(s.trim());
        } catch (NumberFormatException e) {
            return 20261121L;
        }
    }

    /** Every single-field breakage of {@code valid} whose JSON path passes {@code where}, then {@code random} byte-damaged copies. */
    static List<byte[]> mutations(byte[] valid, Predicate<String> where, int random, long seed) {
        JsonNode root = TestSupport.tree(valid);
        List<String> paths = new ArrayList<>();
        collect(root, "", paths);
        List<byte[]> out = new ArrayList<>();
        for (String path : paths) {
            if (!where.test(path)) {
                continue;
            }
            for (JsonNode bad : BAD) {
                out.add(bytes(replaced(root, path, bad)));
            }
            JsonNode removed = removed(root, path);
            if (removed != null) {
                out.add(bytes(removed));
            }
        }
        SplittableRandom rnd = new SplittableRandom(seed);
        for (int i = 0; i < random; i++) {
            byte[] b = valid.clone();
            int edits = 1 + rnd.nextInt(4);
            for (int e = 0; e < edits; e++) {
                int at = rnd.nextInt(b.length);
                switch (rnd.nextInt(3)) {
                    case 0 -> b[at] = (byte) "{}[]\",:0123456789-eE.tfn \\u".charAt(rnd.nextInt(27));
                    case 1 -> b = java.util.Arrays.copyOf(b, at);
                    default -> b[at] = (byte) rnd.nextInt(256);
                }
                if (b.length == 0) {
                    break;
                }
            }
            out.add(b);
        }
        return out;
    }

    private static void collect(JsonNode n, String path, List<String> out) {
        if (!path.isEmpty()) {
            out.add(path);
        }
        if (n.isObject()) {
            Iterator<Map.Entry<String, JsonNode>> it = n.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                collect(e.getValue(), path + "/" + e.getKey().replace("~", "~0").replace("/", "~1"), out);
            }
        } else if (n.isArray()) {
            for (int i = 0; i < n.size(); i++) {
                collect(n.get(i), path + "/" + i, out);
            }
        }
    }

    private static JsonNode replaced(JsonNode root, String path, JsonNode value) {
        JsonNode copy = root.deepCopy();
        int cut = path.lastIndexOf('/');
        JsonNode parent = copy.at(path.substring(0, cut));
        String last = path.substring(cut + 1).replace("~1", "/").replace("~0", "~");
        if (parent instanceof ObjectNode o) {
            o.set(last, value);
        } else if (parent instanceof ArrayNode a) {
            a.set(Integer.parseInt(last), value);
        }
        return copy;
    }

    private static JsonNode removed(JsonNode root, String path) {
        JsonNode copy = root.deepCopy();
        int cut = path.lastIndexOf('/');
        JsonNode parent = copy.at(path.substring(0, cut));
        String last = path.substring(cut + 1).replace("~1", "/").replace("~0", "~");
        if (parent instanceof ObjectNode o) {
            o.remove(last);
            return copy;
        }
        if (parent instanceof ArrayNode a) {
            a.remove(Integer.parseInt(last));
            return copy;
        }
        return null;
    }

    private static byte[] bytes(JsonNode n) {
        return n.toString().getBytes(StandardCharsets.UTF_8);
    }

    /**
     * The contract check: every body answered 200 or 4xx, every 4xx with an {@code Error} message,
     * and, for filter and prioritize, the ledger unchanged. Returns the violations found.
     */
    static List<String> violations(String url, List<byte[]> bodies, Ledger ledger) {
        List<String> out = new ArrayList<>();
        String before = QgpuJson.writeSnapshot(ledger.snapshot());
        for (byte[] body : bodies) {
            HttpResponse<String> r;
            try {
                r = TestSupport.post(url, body);
            } catch (RuntimeException e) {
                out.add("no answer (" + e + ") to " + new String(body, StandardCharsets.UTF_8));
                continue;
            }
            int s = r.statusCode();
            if (s != 200 && (s < 400 || s > 499)) {
                out.add(s + " " + r.body() + " to " + new String(body, StandardCharsets.UTF_8));
            } else if (s != 200 && TestSupport.tree(r.body()).path("Error").asText().isBlank()) {
                out.add(s + " without a message to " + new String(body, StandardCharsets.UTF_8));
            }
            if (!url.endsWith("/bind") && !before.equals(QgpuJson.writeSnapshot(ledger.snapshot()))) {
                out.add("ledger changed by " + new String(body, StandardCharsets.UTF_8));
                before = QgpuJson.writeSnapshot(ledger.snapshot());
            }
        }
        return out;
    }

    private static Ledger ledger() {
        return Ledger.create(TestSupport.inventory().rules(), TestSupport.inventory().nodes());
    }

    @Test
    void everyFieldOfTheRecordedPayloadsBrokenInEveryWay() throws Exception {
        Ledger ledger = ledger();
        DemoCluster demo = new DemoCluster();
        try (ExtenderServer server = ExtenderServer.builder(new GpuExtender(ledger, PlacementConfig.defaults(), demo))
                .host("127.0.0.1").port(0).urlPrefix("/qgpu").threads(2).build().start()) {
            String url = server.baseUrl();
            long seed = seed();
            List<String> bad = new ArrayList<>();
            // the envelope, the pod's metadata, and everything of the containers the extender reads
            List<byte[]> filter = mutations(TestSupport.payload("filter-names-infer.json"),
                    p -> p.matches("/[A-Za-z]+(/\\d+)?") || p.matches("/Pod/[a-z]+") || p.matches("/Pod/spec/[A-Za-z]+")
                            || (p.startsWith("/Pod/metadata/") && !p.startsWith("/Pod/metadata/ownerReferences/"))
                            || p.matches("/Pod/spec/containers/\\d+(/[a-z]+)?") || p.contains("/resources"),
                    60, seed);
            bad.addAll(violations(url + "/filter", filter, ledger));
            // Nodes mode: the envelope, the pod's resources and annotations, and every field of one node
            List<byte[]> nodes = mutations(TestSupport.payload("filter-nodes-train.json"),
                    p -> p.matches("/Nodes/items/1/metadata(/[a-z]+)?") || p.startsWith("/Nodes/items/1/metadata/annotations")
                            || p.equals("/Nodes/items/1") || p.equals("/Nodes") || p.equals("/Nodes/items"),
                    20, seed + 1);
            bad.addAll(violations(url + "/filter", nodes, ledger));
            bad.addAll(violations(url + "/prioritize", mutations(TestSupport.payload("prioritize-names-infer.json"),
                    p -> p.startsWith("/Pod/metadata/annotations") || p.startsWith("/Pod/spec/containers/0/resources")
                            || p.startsWith("/NodeNames"),
                    30, seed + 2), ledger));
            // bind: the pod is known (remembered from filter); every field of the binding args broken
            assertEquals(200, TestSupport.post(url + "/filter", TestSupport.payload("filter-names-infer.json")).statusCode());
            bad.addAll(violations(url + "/bind", mutations(TestSupport.payload("bind-infer.json"), p -> true, 50, seed + 3), ledger));
            assertTrue(bad.isEmpty(), bad.size() + " violation(s):\n" + String.join("\n",
                    bad.stream().limit(10).map(v -> v.length() > 400 ? v.substring(0, 400) + "..." : v).toList()));
            assertTrue(filter.size() > 300, "the payloads were broken in " + filter.size() + " ways");
        }
    }

    /** A deliberately broken extender: reads the compute limit annotation without checking it. */
    private static final class CarelessExtender implements Extender {
        private final GpuExtender delegate;

        CarelessExtender(GpuExtender delegate) {
            this.delegate = delegate;
        }

        @Override
        public ExtenderProtocol.FilterResult filter(ExtenderRequests.Args args) {
            String limit = args.pod().getMetadata().getAnnotations().get(QgpuAnnotations.GPU_CORE_LIMIT);
            Integer.parseInt(limit);
            return delegate.filter(args);
        }

        @Override
        public List<ExtenderProtocol.HostPriority> prioritize(ExtenderRequests.Args args) {
            return delegate.prioritize(args);
        }

        @Override
        public ExtenderProtocol.BindingResult bind(ExtenderProtocol.BindingArgs args) {
            return delegate.bind(args);
        }
    }

    @Test
    void theCheckCatchesABrokenExtender() throws Exception {
        Ledger ledger = ledger();
        GpuExtender real = new GpuExtender(ledger, PlacementConfig.defaults(), new DemoCluster());
        try (ExtenderServer server = ExtenderServer.builder(new CarelessExtender(real))
                .host("127.0.0.1").port(0).urlPrefix("/qgpu").threads(2).build().start()) {
            List<byte[]> bodies = mutations(TestSupport.payload("filter-names-infer.json"),
                    p -> p.startsWith("/Pod/metadata/annotations"), 0, seed());
            List<String> bad = violations(server.baseUrl() + "/filter", bodies, ledger);
            assertFalse(bad.isEmpty(), "the careless extender must be caught");
            assertTrue(bad.get(0).startsWith("500 "), bad.get(0));
            // and the server survived its bug: a valid request is still answered
            assertEquals(200, TestSupport.post(server.baseUrl() + "/prioritize",
                    TestSupport.payload("prioritize-names-infer.json")).statusCode());
        }
    }
}
