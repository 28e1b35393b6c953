package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * The fast path of {@code parseArgs} ({@link NamesArgsReader}) against the general path on seeded
 * bodies: well-formed {@code NodeNames} requests in many spellings (which the fast path must read, and
 * read alike), and broken ones (which it must leave to the general path, so that the answer is the
 * same 4xx with the same message). A deliberately broken fast path (one that skips the check for a
 * repeated name) is caught by the same comparison.
 */
class NamesArgsReaderTest {

    private static final int CASES = 400;
    private static final String[] PODS = {"filter-names-infer.json", "filter-names-train.json", "filter-names-embed-t4.json",
            "prioritize-names-infer.json"};

    /** An answer of a parser: the parsed args, or the status and message of its 4xx. */
    private record Outcome(String value) {
        static Outcome of(Function<byte[], ExtenderRequests.Args> parser, byte[] body) {
            try {
                ExtenderRequests.Args a = parser.apply(body);
                return new Outcome("args " + a.byNames() + " " + a.nodeNames() + " " + a.nodes() + " " + a.nodeList()
                        + " pod " + TestSupport.JSON.valueToTree(a.pod()));
            } catch (BadRequestException e) {
                return new Outcome("error " + e.status() + " " + e.getMessage());
            }
        }
    }

    @Test
    void wellFormedNameRequestsTakeTheFastPathAndReadAsTheGeneralPathDoes() {
        Random r = new Random(20261123L);
        for (int i = 0; i < CASES; i++) {
            byte[] body = wellFormed(r);
            String seen = new String(body, StandardCharsets.UTF_8);
            assertNotNull(NamesArgsReader.read(body, ExtenderRequests.strict()), () -> "fast path refused " + seen);
            assertEquals(Outcome.of(ExtenderRequests::parseArgsInFull, body), Outcome.of(ExtenderRequests::parseArgs, body), seen);
        }
    }

    @Test
    void brokenBodiesGetTheGeneralPathsAnswer() {
        Random r = new Random(77L);
        int refused = 0;
        for (int i = 0; i < CASES; i++) {
            byte[] body = broken(r, wellFormed(r));
            String seen = new String(body, StandardCharsets.UTF_8);
            Outcome full = Outcome.of(ExtenderRequests::parseArgsInFull, body);
            assertEquals(full, Outcome.of(ExtenderRequests::parseArgs, body), seen);
            if (full.value().startsWith("error")) {
                refused++;
            }
        }
        assertTrue(refused > CASES / 2, "most broken bodies are refused, was " + refused + " of " + CASES);
    }

    /** Names the generator makes often, as a ledger's node name table (the rest stay unknown to it). */
    private static final NodeNameTable KNOWN = NodeNameTable.of(List.of("gpu-a", "gpu-b", "x", "node-", "gpu-agpu-b", "xx",
            "n\u00e9", "\u6f22", "\ud83d\ude80", "\"q\"", "back\\slash", "tab\t", "node-x", "gpu-ax"));

    @Test
    void withANameTableTheFastPathStillReadsAsTheGeneralPathDoesAndHandsOnTheTablesStrings() {
        Random r = new Random(20261126L);
        int fromTable = 0;
        for (int i = 0; i < CASES; i++) {
            byte[] good = wellFormed(r);
            byte[] body = i % 2 == 0 ? good : broken(r, good);
            String seen = new String(body, StandardCharsets.UTF_8);
            assertEquals(Outcome.of(ExtenderRequests::parseArgsInFull, body), Outcome.of(b -> ExtenderRequests.parseArgs(b, KNOWN), body),
                    seen);
            NamesArgsReader.Read read = NamesArgsReader.read(body, ExtenderRequests.strict(), KNOWN);
            if (read != null) {
                CandidateNames names = (CandidateNames) read.names();
                for (int j = 0; j < names.size(); j++) {
                    String name = names.get(j);
                    int at = KNOWN.indexOf(name);
                    assertEquals(at, names.position(j), name);
                    if (at >= 0) {
                        assertTrue(KNOWN.name(at) == name, () -> "not the table's own string: " + name);
                        fromTable++;
                    }
                }
            }
        }
        assertTrue(fromTable > CASES, "names from the table: " + fromTable);
    }

    /**
     * Bodies at the edges of the byte walk (white space everywhere JSON allows it, escapes in names the
     * table holds, names outside ASCII, a control character or a DEL in a name, a trailing comma, a
     * literal cut short, values of unknown keys of every kind, a pod nested to the parser's limit) read
     * as the general path reads them, or are refused with its message; the plain ones take the fast path.
     */
    @Test
    void edgeBodiesReadAsTheGeneralPathReadsThem() {
        NodeNameTable table = NodeNameTable.of(List.of("node-1", "node-2", "node-\u007f", "n\u00e9"));
        String pod = TestSupport.tree(TestSupport.payload(PODS[0])).get("Pod").toString();
        String deep = "{\"a\":".repeat(498) + "1" + "}".repeat(498);
        String[] plain = {
            "{\"Pod\":" + pod + ",\"NodeNames\":[\"node-1\",\"node-2\"]}",
            " \r\n\t{ \"Pod\" :\t" + pod + " , \"NodeNames\" : [ \"node-1\" ,\n\"x\" ] , \"Nodes\" : null }\n ",
            "{\"NodeNames\":[],\"Pod\":" + pod + "}",
            "{\"Pod\":" + pod + ",\"NodeNames\":[\"node-\u007f\",\"node-2\"]}",
            "{\"Pod\":" + pod + ",\"x\":\"s\\\"}]\",\"y\":-1.5e3,\"z\":true,\"w\":[{}],\"NodeNames\":[\"node-2\"]}",
        };
        for (String body : plain) {
            byte[] b = body.getBytes(StandardCharsets.UTF_8);
            assertNotNull(NamesArgsReader.read(b, ExtenderRequests.strict(), table), body);
            assertEquals(Outcome.of(ExtenderRequests::parseArgsInFull, b), Outcome.of(x -> ExtenderRequests.parseArgs(x, table), b), body);
        }
        String[] other = {
            "{\"Pod\":" + pod + ",\"NodeNames\":[\"node\\u002d1\",\"n\u00e9\",\"node-2\"]}",
            "{\"Pod\":" + pod + ",\"NodeNames\":[\"node-1\",\"node\\u002d1\"]}",
            "{\"Pod\":" + pod + ",\"NodeNames\":[\"a\u0001\"]}",
            "{\"Pod\":" + pod + ",\"NodeNames\":[\"node-1\",]}",
            "{\"Pod\":" + pod + ",\"NodeNames\":[\"node-1\"],}",
            "{\"Pod\":" + pod + ",\"NodeNames\":[\"node-1\"],\"Nodes\":nul}",
            "{\"Pod\":" + pod + ",\"NodeNames\":[\"node-1\"],\"Nodes\":nullx}",
            "{\"Pod\":" + pod + ",\"NodeNames\":[\"node-1\"],\"x\":tru}",
            "{\"Pod\":" + pod + ",\"NodeNames\":[\"node-1\"],\"x\":{\"a\":1,\"a\":2}}",
            "{\"Pod\":" + pod + ",\"NodeNames\":[\"node-1\"],\"x\":1,\"x\":1}",
            "{\"Pod\":" + pod + ",\"NodeNames\":[\"node-1\" \"node-2\"]}",
            "{\"Pod\":" + pod + ",\"NodeNames\":[\"node-1\"]}}",
            "{\"Pod\":" + pod + ",\"NodeNames\":[\"node-1\"]",
            "{\"\\u0050od\":" + pod + ",\"NodeNames\":[\"node-1\"]}",
            "{\"Pod\":" + pod.substring(0, pod.length() - 1) + ",\"deep\":" + deep + "},\"NodeNames\":[\"node-1\"]}",
            "{\"Pod\":" + pod + ",\"NodeNames\":[\"node-1\"],\"deep\":[" + deep + "]}",
            "\ufeff{\"Pod\":" + pod + ",\"NodeNames\":[\"node-1\"]}",
        };
        for (String body : other) {
            byte[] b = body.getBytes(StandardCharsets.UTF_8);
            assertEquals(Outcome.of(ExtenderRequests::parseArgsInFull, b), Outcome.of(x -> ExtenderRequests.parseArgs(x, table), b), body);
        }
    }

    @Test
    void aRepeatedNameTheTableHoldsIsRefusedAsTheGeneralPathRefusesIt() {
        byte[] body = ("{\"Pod\":" + TestSupport.tree(TestSupport.payload(PODS[0])).get("Pod")
                + ",\"NodeNames\":[\"gpu-a\",\"other\",\"gpu-b\",\"gpu-a\"]}").getBytes(StandardCharsets.UTF_8);
        assertEquals(null, NamesArgsReader.read(body, ExtenderRequests.strict(), KNOWN));
        Outcome full = Outcome.of(ExtenderRequests::parseArgsInFull, body);
        assertTrue(full.value().startsWith("error 400"), full.value());
        assertEquals(full, Outcome.of(b -> ExtenderRequests.parseArgs(b, KNOWN), body));
    }

    @Test
    void theComparisonCatchesAFastPathThatLetsARepeatedNameThrough() {
        Function<byte[], ExtenderRequests.Args> lax = body -> {
            ObjectNode root = (ObjectNode) TestSupport.tree(body);
            List<String> names = new ArrayList<>();
            root.get(key(root, "nodenames")).forEach(n -> names.add(n.asText()));
            return new ExtenderRequests.Args(ExtenderRequests.readKube(root.get(key(root, "pod")).toString(), io.fabric8.kubernetes.api.model.Pod.class),
                    true, names, Map.of(), null);
        };
        Random r = new Random(5L);
        int caught = 0;
        for (int i = 0; i < 50; i++) {
            ObjectNode root = (ObjectNode) TestSupport.tree(wellFormed(r));
            ArrayNode names = (ArrayNode) root.get(key(root, "nodenames"));
            if (names.isEmpty()) {
                continue;
            }
            names.add(names.get(0).asText());
            byte[] body = root.toString().getBytes(StandardCharsets.UTF_8);
            if (!Outcome.of(ExtenderRequests::parseArgsInFull, body).equals(Outcome.of(lax, body))) {
                caught++;
            }
        }
        assertTrue(caught > 0, "the lax fast path was never told apart");
    }

    // ------------------------------------------------------------------ generators

    /** A well-formed NodeNames request: a recorded pod, random names, keys in random spelling and order, unknown keys. */
    static byte[] wellFormed(Random r) {
        JsonNode recorded = TestSupport.tree(TestSupport.payload(PODS[r.nextInt(PODS.length)]));
        List<String[]> fields = new ArrayList<>();
        fields.add(new String[] {spell(r, "Pod"), recorded.get("Pod").toString()});
        ArrayNode names = TestSupport.JSON.createArrayNode();
        int n = r.nextInt(12);
        List<String> used = new ArrayList<>();
        while (names.size() < n) {
            String name = name(r);
            if (!name.isBlank() && !used.contains(name)) {
                used.add(name);
                names.add(name);
            }
        }
        fields.add(new String[] {spell(r, "NodeNames"), names.toString()});
        if (r.nextBoolean()) {
            fields.add(new String[] {spell(r, "Nodes"), "null"});
        }
        if (r.nextInt(3) == 0) {
            fields.add(new String[] {"Extra" + r.nextInt(3), r.nextBoolean() ? "{\"a\":[1,{\"b\":null}],\"c\":\"d\"}" : "[true, 2.5]"});
        }
        java.util.Collections.shuffle(fields, r);
        StringBuilder b = new StringBuilder(r.nextBoolean() ? "{" : " {\n ");
        for (int i = 0; i < fields.size(); i++) {
            b.append(i == 0 ? "" : r.nextBoolean() ? "," : " ,\n").append(TestSupport.JSON.getNodeFactory().textNode(fields.get(i)[0]))
                    .append(':').append(fields.get(i)[1]);
        }
        b.append(r.nextBoolean() ? "}" : "}\n ");
        return b.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static String spell(Random r, String key) {
        return switch (r.nextInt(4)) {
            case 0 -> key.toLowerCase(java.util.Locale.ROOT);
            case 1 -> key.toUpperCase(java.util.Locale.ROOT);
            default -> key;
        };
    }

    private static String name(Random r) {
        String[] parts = {"gpu-a", "gpu-b", "node-", "n\u00e9", "\u6f22", "\"q\"", "back\\slash", "tab\t", " ", "\ud83d\ude80", "x"};
        StringBuilder s = new StringBuilder();
        int k = 1 + r.nextInt(3);
        for (int i = 0; i < k; i++) {
            s.append(parts[r.nextInt(parts.length)]);
        }
        return s.toString();
    }

    /** One of many ways to break a well-formed body (some of them still leave it well-formed). */
    static byte[] broken(Random r, byte[] good) {
        String s = new String(good, StandardCharsets.UTF_8);
        ObjectNode root = (ObjectNode) TestSupport.tree(good);
        String podKey = key(root, "pod");
        String namesKey = key(root, "nodenames");
        ArrayNode names = (ArrayNode) root.get(namesKey);
        switch (r.nextInt(14)) {
            case 0 -> { return s.substring(0, r.nextInt(s.length())).getBytes(StandardCharsets.UTF_8); }
            case 1 -> { return (s + (r.nextBoolean() ? " {}" : "x")).getBytes(StandardCharsets.UTF_8); }
            case 2 -> root.set(namesKey.equals("NodeNames") ? "nodenames" : "NodeNames", names.deepCopy());
            case 3 -> names.add(names.isEmpty() ? "dup" : names.get(0).asText()).add("dup");
            case 4 -> names.add(r.nextBoolean() ? "" : "  ");
            case 5 -> names.add(r.nextBoolean() ? TestSupport.JSON.getNodeFactory().numberNode(3) : TestSupport.JSON.getNodeFactory().nullNode());
            case 6 -> root.remove(podKey);
            case 7 -> root.put(podKey, r.nextBoolean() ? "pod" : null);
            case 8 -> root.remove(namesKey);
            case 9 -> root.set("Nodes", TestSupport.JSON.createObjectNode().set("items", TestSupport.JSON.createArrayNode()));
            case 10 -> root.put(namesKey, "gpu-a");
            case 11 -> ((ObjectNode) root.get(podKey)).remove("metadata");
            case 12 -> { return ("[" + s + "]").getBytes(StandardCharsets.UTF_8); }
            default -> { return s.replaceFirst("\\{", "{\"" + podKey + "\":{},").getBytes(StandardCharsets.UTF_8); } // the same key twice
        }
        return root.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static String key(ObjectNode root, String lower) {
        var it = root.fieldNames();
        while (it.hasNext()) {
            String k = it.next();
            if (k.equalsIgnoreCase(lower)) {
                return k;
            }
        }
        throw new AssertionError("no " + lower + " in " + root);
    }
}
