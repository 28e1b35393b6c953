package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.fabric8.kubernetes.api.model.Pod;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The request reader's pod, read straight from the body's bytes into fabric8's model
 * ({@link NamesArgsReader}), against the reference path ({@link ExtenderRequests#parseArgsInFull}: the
 * whole body as a strict tree, then the pod's tree converted) on seeded bodies, valid and invalid: a
 * key repeated inside the pod at any depth, fields of the wrong type, numbers that a tree gives other
 * text for, strings with escapes, control characters and bytes that are not UTF-8, trailing bytes,
 * names with escapes, repeated, blank or huge names. The answer is the same pod (fabric8's
 * {@code equals} and the same JSON written back), the same names at the same table positions, or the
 * same 4xx with the same message; and the pods without such numbers took the one-pass read.
 *
 * <p>No case was found where the two paths already differed before the one-pass read.
 */
class PodReadTest {

    private static final int CASES = 1500;
    private static final String[] PODS = {"filter-names-infer.json", "filter-names-train.json", "filter-names-embed-t4.json"};
    private static final NodeNameTable TABLE = NodeNameTable.of(List.of("node-1", "node-2", "node-3", "gpu-a", "n\u00e9",
            "a".repeat(300)));

    /** A parser's answer: the pod, names and positions, or the status and message of its 4xx. */
    private record Outcome(Pod pod, String podJson, List<String> names, List<Integer> positions, String error) {
        static Outcome of(java.util.function.Function<byte[], ExtenderRequests.Args> parser, byte[] body) {
            ExtenderRequests.Args a;
            try {
                a = parser.apply(body);
            } catch (BadRequestException e) {
                return new Outcome(null, null, null, null, e.status() + " " + e.getMessage());
            }
            List<Integer> positions = new ArrayList<>();
            for (int j = 0; j < a.nodeNames().size(); j++) {
                positions.add(a.nodeNames() instanceof CandidateNames c ? c.position(j) : TABLE.indexOf(a.nodeNames().get(j)));
            }
            try {
                return new Outcome(a.pod(), TestSupport.JSON.writeValueAsString(a.pod()), List.copyOf(a.nodeNames()), positions, null);
            } catch (JsonProcessingException e) {
                throw new AssertionError(e);
            }
        }
    }

    /** One seeded body, and whether its pod has a number that a tree would give other text for. */
    private record Body(byte[] bytes, boolean numberText) {
        String text() {
            return new String(bytes, StandardCharsets.UTF_8);
        }
    }

    @Test
    void thePodReadInOnePassIsTheReferencePathsPodOrError() {
        Random r = new Random(20261208L);
        int read = 0;
        int refused = 0;
        for (int i = 0; i < CASES; i++) {
            Body body = body(r);
            Outcome reference = Outcome.of(ExtenderRequests::parseArgsInFull, body.bytes());
            Outcome fast = Outcome.of(b -> ExtenderRequests.parseArgs(b, TABLE, new RecentPods()), body.bytes());
            assertEquals(reference, fast, body::text);
            if (reference.error() != null) {
                refused++;
                // the reference names the field: ExtenderArgs... for the envelope and the model, Pod.metadata... for the claim's name
                assertTrue(reference.error().startsWith("400 ExtenderArgs") || reference.error().startsWith("400 Pod.metadata."),
                        reference.error());
                continue;
            }
            NamesArgsReader.Read r1 = NamesArgsReader.read(body.bytes(), ExtenderRequests.strict(), TABLE);
            if (!body.numberText() && r1 != null) {
                assertNotNull(r1.pod(), body::text);
                assertNull(r1.podTree(), body::text);
                assertFalse(r1.recent());
                read++;
            }
        }
        assertTrue(read > CASES / 10, "pods read in one pass: " + read);
        assertTrue(refused > CASES / 5, "bodies refused: " + refused);
    }

    /**
     * A field that takes a number as a string reads the number's text: a tree gives {@code 1.1} for
     * {@code 1.10} and {@code 0} for {@code -0}. Such pods are read as a tree, as the reference path
     * reads them.
     */
    @Test
    void numbersATreeWritesDifferentlyReadAsTheTreeReadsThem() {
        String pod = pod(0);
        for (String value : new String[] {"1.10", "-0", "1e2", "1E+2", "2.50e-1", "-0.0"}) {
            for (String where : new String[] {"\"metadata\":{", "\"labels\":{", "\"limits\":{"}) {
                String field = where.equals("\"limits\":{") ? "\"example.com/x\":" : "\"selfLink\":";
                if (where.equals("\"labels\":{")) {
                    field = "\"k\":";
                }
                byte[] body = args(pod.replaceFirst(java.util.regex.Pattern.quote(where), java.util.regex.Matcher.quoteReplacement(where
                        + field + value + ",")), "[\"node-1\"]");
                Outcome reference = Outcome.of(ExtenderRequests::parseArgsInFull, body);
                assertNull(reference.error(), reference::error);
                assertEquals(reference, Outcome.of(b -> ExtenderRequests.parseArgs(b, TABLE, new RecentPods()), body),
                        () -> new String(body, StandardCharsets.UTF_8));
                NamesArgsReader.Read read = NamesArgsReader.read(body, ExtenderRequests.strict(), TABLE);
                assertNotNull(read.podTree(), value + " at " + where);
            }
        }
    }

    // ------------------------------------------------------------------ generators

    private static String pod(int k) {
        return TestSupport.tree(TestSupport.payload(PODS[k])).get("Pod").toString();
    }

    private static byte[] args(String pod, String names) {
        return ("{\"Pod\":" + pod + ",\"NodeNames\":" + names + "}").getBytes(StandardCharsets.UTF_8);
    }

    /** Where a fragment goes: after the opening brace of the pod, its metadata, its labels or its first limits. */
    private static final String[] PLACES = {"{", "\"metadata\":{", "\"labels\":{", "\"limits\":{"};

    /** Members inserted at a place ({@code %s}: a key already there at that place, for a repeat). */
    private static final String[][] FRAGMENTS = {
        // the pod
        {"\"spec\":{},", "\"kind\":\"Pod\",", "\"kind\":5,", "\"apiVersion\":true,", "\"status\":[],", "\"status\":null,",
            "\"extra\":{\"a\":[1,2,null,{\"b\":\"c\"}]},", "\"extra\":\"\\u0041\\ud83d\\ude80\\n\",", "\"extra\":\"\\q\",",
            "\"extra\":\"a\u0001b\",", "\"extra\":\"\u00e9\u6f22\",", "\"extra\":99999999999999999999999,", "\"x\":1,\"x\":2,",
            "\"extra\":{\"a\":1,\"a\":1},", "\"spec\":5,", "\"metadata\":null,", "\"extra\":[1,2,],", "\"extra\":tru,"},
        // metadata
        {"\"name\":\"again\",", "\"resourceVersion\":12,", "\"generation\":\"7\",", "\"generation\":99999999999999999999,",
            "\"generation\":\"x\",", "\"labels\":5,", "\"uid\":{},", "\"uid\":[\"a\"],", "\"finalizers\":\"a\",",
            "\"finalizers\":[\"a\",1,null],", "\"name\":null,", "\"namespace\":\"\",", "\"generation\":true,",
            "\"deletionGracePeriodSeconds\":-3,", "\"annotations\":{\"a\":\"b\",\"a\":\"c\"},", "\"creationTimestamp\":7,"},
        // labels
        {"\"k\":1,", "\"k\":null,", "\"k\":true,", "\"k\":[],", "\"k\":{},", "\"app\":\"again\",", "\"k\\u0041\":\"v\",",
            "\"\":\"\","},
        // limits
        {"\"cpu\":2,", "\"cpu\":\"2\",", "\"cpu\":{\"amount\":\"1\"},", "\"cpu\":[],", "\"cpu\":null,", "\"cpu\":\"x\",",
            "\"cpu\":{\"amount\":\"1\",\"amount\":\"2\"},"},
    };

    /** Numbers a tree gives other text for: pods with one take the tree, so the generator says so. */
    private static final String[] NUMBER_TEXT = {"\"extra\":1.10,", "\"extra\":{\"a\":[2.50,-0,1e3]},", "\"kind\":-0,",
        "\"generation\":1.5,", "\"generation\":1e2,"};

    private static Body body(Random r) {
        String pod = pod(r.nextInt(PODS.length));
        boolean numberText = false;
        int changes = r.nextInt(3);
        for (int c = 0; c < changes; c++) {
            int place = r.nextInt(PLACES.length);
            String fragment;
            if (r.nextInt(8) == 0) {
                fragment = NUMBER_TEXT[r.nextInt(NUMBER_TEXT.length)];
                place = fragment.startsWith("\"generation\"") ? 1 : 0;
                numberText = true;
            } else {
                fragment = FRAGMENTS[place][r.nextInt(FRAGMENTS[place].length)];
            }
            String at = PLACES[place];
            int i = place == 0 ? 0 : pod.indexOf(at);
            if (i < 0) {
                continue;
            }
            pod = pod.substring(0, i + at.length()) + fragment + pod.substring(i + at.length());
        }
        if (r.nextInt(10) == 0) {
            pod = pod.replaceFirst("\"name\":\"[^\"]*\",", "");   // no name
        }
        String names = names(r);
        String text = switch (r.nextInt(12)) {
            case 0 -> "{\"Pod\":" + pod + ",\"NodeNames\":" + names + "} x";
            case 1 -> "{\"NodeNames\":" + names + ",\"pod\":" + pod + "}\n";
            case 2 -> "{\"Pod\":" + pod + " ,\"NodeNames\":" + names + ",\"Nodes\":null}";
            case 3 -> "{\"Pod\":" + pod + "},\"NodeNames\":" + names + "}";
            default -> "{\"Pod\":" + pod + ",\"NodeNames\":" + names + "}";
        };
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        if (r.nextInt(25) == 0) {
            bytes = notUtf8(bytes, text.indexOf("\"namespace\":\"") + 13);
        }
        return new Body(bytes, numberText);
    }

    /** The bytes with a byte that starts no UTF-8 character put at {@code at} (inside a string). */
    private static byte[] notUtf8(byte[] bytes, int at) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(bytes, 0, at);
        out.write(0xff);
        out.write(bytes, at, bytes.length - at);
        return out.toByteArray();
    }

    private static String names(Random r) {
        String[] choices = {"\"node-1\"", "\"node-2\"", "\"node-3\"", "\"gpu-a\"", "\"other\"", "\"node\\u002d1\"", "\"n\u00e9\"",
            "\"\"", "\"  \"", "\"" + "a".repeat(300) + "\"", "\"" + "b".repeat(5000) + "\"", "\"tab\\t\"", "7", "null"};
        int n = r.nextInt(6);
        StringBuilder s = new StringBuilder("[");
        for (int j = 0; j < n; j++) {
            String name = r.nextInt(4) == 0 ? choices[r.nextInt(choices.length)] : choices[r.nextInt(5)];
            s.append(j == 0 ? "" : ",").append(name);
        }
        return s.append(']').toString();
    }
}
