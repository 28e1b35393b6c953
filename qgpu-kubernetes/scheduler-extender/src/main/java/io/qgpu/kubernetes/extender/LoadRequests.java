package io.qgpu.kubernetes.extender;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The load generator's side of the wire: the request bodies kube-scheduler would send and the few
 * fields it reads from the answers. Bodies are plain byte arrays: the candidate windows are written
 * once before the clock starts (kube-scheduler builds its requests on its own machine, so the cost of
 * building them is not the extender's), the pod's JSON per pod from a template, and a request is the
 * concatenation. Answers are read with Jackson's streaming parser (no tree).
 *
 * <p>Pods: a seeded mix (seed 7) of 1-GPU shared slices (1..8 GiB, 0..20% compute; 90%), 2-GPU shared
 * slices (5%) and whole GPUs (5%), online (40%) and offline; each a realistic pod object (labels, owner
 * reference, two containers, tolerations).
 *
 * <p>Thread safety: immutable after construction; safe from any thread.
 */
final class LoadRequests {
    private static final JsonFactory JSON = new JsonFactory();
    private static final byte[] POD_KEY = bytes("{\"Pod\":");
    private static final byte[] NAMES_KEY = bytes(",\"NodeNames\":");
    private static final byte[] END = bytes("}");

    private final int nodes;
    private final int candidates;
    /** The candidate window's {@code ["node-a",...]} by its start index (only the starts that occur). */
    private final byte[][] windows;

    LoadRequests(int nodes, int candidates) {
        this.nodes = nodes;
        this.candidates = candidates;
        this.windows = new byte[nodes][];
        for (long i = 0; ; i++) {
            int start = start(i);
            if (windows[start] != null) {
                break;   // the starts repeat from here on
            }
            List<String> w = new ArrayList<>(candidates);
            for (int k = 0; k < candidates; k++) {
                w.add(nodeName((start + k) % nodes));
            }
            windows[start] = namesArray(w);
        }
    }

    static String nodeName(int i) {
        return "node-" + i;
    }

    /** The first candidate of pod {@code i}: the window moves on by {@code candidates} per pod. */
    private int start(long i) {
        return (int) (i * candidates % nodes);
    }

    /** {@code ExtenderArgs} for filter: the pod and its window of candidate names. */
    byte[] filter(int i, byte[] pod) {
        return join(filterParts(i, pod));
    }

    /** {@link #filter}'s body as the parts that make it, in order (nothing copied). */
    byte[][] filterParts(int i, byte[] pod) {
        return argsParts(pod, windows[start(i)]);
    }

    /** {@code ExtenderArgs} with the given names array (the filter's answer, as JSON). */
    static byte[] args(byte[] pod, byte[] namesArray) {
        return join(argsParts(pod, namesArray));
    }

    /** {@link #args}'s body as the parts that make it, in order (nothing copied). */
    static byte[][] argsParts(byte[] pod, byte[] namesArray) {
        return new byte[][] {POD_KEY, pod, NAMES_KEY, namesArray, END};
    }

    private static byte[] join(byte[][] parts) {
        int length = 0;
        for (byte[] part : parts) {
            length += part.length;
        }
        byte[] out = new byte[length];
        int at = 0;
        for (byte[] part : parts) {
            System.arraycopy(part, 0, out, at, part.length);
            at += part.length;
        }
        return out;
    }

    /** {@code ExtenderBindingArgs} of pod {@code i} to {@code node}. */
    static byte[] binding(int i, String node) {
        return bytes("{\"PodName\":\"load-" + i + "\",\"PodNamespace\":\"load\",\"PodUID\":\"uid-" + i
                + "\",\"Node\":\"" + node + "\"}");
    }

    /** A JSON array of names (node names need no escaping). */
    static byte[] namesArray(List<String> names) {
        StringBuilder b = new StringBuilder(names.size() * 12 + 2).append('[');
        for (int k = 0; k < names.size(); k++) {
            b.append(k == 0 ? "\"" : ",\"").append(names.get(k)).append('"');
        }
        return bytes(b.append(']').toString());
    }

    /**
     * The {@code NodeNames} array of a filter answer exactly as the answer wrote it (the bytes from
     * {@code [} to {@code ]}), ready to be sent on to prioritize without reading the names into
     * strings; null when it is null or empty.
     */
    static byte[] fitNamesArray(byte[] answer) throws IOException {
        byte[] fast = plainFitNamesArray(answer);
        if (fast != null) {
            return fast.length == 0 ? null : fast;
        }
        try (JsonParser p = JSON.createParser(answer)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw new IOException("filter answer is not a JSON object");
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken t = p.nextToken();
                if (field.equals("NodeNames") && t == JsonToken.START_ARRAY) {
                    int start = (int) p.getTokenLocation().getByteOffset();
                    int names = 0;
                    while ((t = p.nextToken()) == JsonToken.VALUE_STRING) {
                        names++;
                    }
                    if (t != JsonToken.END_ARRAY) {
                        throw new IOException("filter answer's NodeNames holds a " + t + ", not only names");
                    }
                    return names == 0 ? null : Arrays.copyOfRange(answer, start, (int) p.getTokenLocation().getByteOffset() + 1);
                }
                p.skipChildren();
            }
        }
        return null;
    }

    private static final byte[] FILTER_HEAD = bytes("{\"Nodes\":null,\"NodeNames\":");
    private static final byte[] NO_NAMES = new byte[0];

    /**
     * {@link #fitNamesArray} for an answer laid out as the extender writes it ({@code {"Nodes":null,
     * "NodeNames":[...]} first, names without escapes), read by a scan of its bytes: an empty array
     * when there are no names, null when the answer is laid out otherwise (then the parser reads it).
     * The generator shares the machine with the extender, so its own reading is kept cheap.
     */
    private static byte[] plainFitNamesArray(byte[] a) {
        int n = FILTER_HEAD.length;
        if (a.length < n + 2 || !Arrays.equals(a, 0, n, FILTER_HEAD, 0, n)) {
            return null;
        }
        if (a[n] == 'n') {
            return a.length >= n + 4 && a[n + 1] == 'u' && a[n + 2] == 'l' && a[n + 3] == 'l' ? NO_NAMES : null;
        }
        if (a[n] != '[') {
            return null;
        }
        int i = n + 1;
        if (a[i] == ']') {
            return NO_NAMES;
        }
        while (i < a.length && a[i] == '"') {
            i++;
            while (i < a.length && a[i] != '"') {
                if (a[i] == '\\' || a[i] < 0x20) {
                    return null;
                }
                i++;
            }
            if (i + 1 >= a.length) {
                return null;
            }
            i++;
            if (a[i] == ']') {
                return Arrays.copyOfRange(a, n, i + 1);
            }
            if (a[i] != ',') {
                return null;
            }
            i++;
        }
        return null;
    }

    private static final byte[] HOST = bytes("{\"Host\":\"");
    private static final byte[] SCORE = bytes("\",\"Score\":");

    /**
     * The host with the highest score of a prioritize answer (the first of equals); null when none.
     * An answer laid out as the extender writes it ({@code [{"Host":"a","Score":10},...]}, names without
     * escapes, nothing else) is read by a scan of its bytes; any other by the parser. Only the winner's
     * name is made a string.
     */
    static String best(byte[] answer) throws IOException {
        String plain = plainBest(answer);
        return plain != null ? (plain.isEmpty() ? null : plain) : parsedBest(answer);
    }

    /** {@link #best} by a scan of the bytes: the winner, empty when there is none, or null when laid out otherwise. */
    private static String plainBest(byte[] a) {
        if (a.length < 2 || a[0] != '[') {
            return null;
        }
        if (a[1] == ']') {
            return a.length == 2 ? "" : null;
        }
        int i = 1;
        int bestFrom = -1;
        int bestLength = 0;
        long top = -1;
        while (true) {
            if (i + HOST.length > a.length || !Arrays.equals(a, i, i + HOST.length, HOST, 0, HOST.length)) {
                return null;
            }
            i += HOST.length;
            int from = i;
            while (i < a.length && a[i] != '"') {
                if (a[i] == '\\' || a[i] < 0x20) {
                    return null;
                }
                i++;
            }
            int length = i - from;
            if (length == 0 || i + SCORE.length > a.length || !Arrays.equals(a, i, i + SCORE.length, SCORE, 0, SCORE.length)) {
                return null;
            }
            i += SCORE.length;
            long score = 0;
            int digits = 0;
            while (i < a.length && a[i] >= '0' && a[i] <= '9' && digits < 3) {
                score = score * 10 + (a[i++] - '0');
                digits++;
            }
            if (digits == 0 || digits == 3 || i + 1 >= a.length || a[i] != '}') {
                return null;
            }
            if (score > top) {
                top = score;
                bestFrom = from;
                bestLength = length;
            }
            i++;
            if (a[i] == ']') {
                return i + 1 == a.length ? new String(a, bestFrom, bestLength, StandardCharsets.ISO_8859_1) : null;
            }
            if (a[i] != ',') {
                return null;
            }
            i++;
        }
    }

    /** {@link #best} by the parser. Each host's characters are kept in a scratch buffer until its score is known. */
    private static String parsedBest(byte[] answer) throws IOException {
        char[] best = new char[64];
        int bestLength = -1;
        char[] host = new char[64];
        long top = -1;
        try (JsonParser p = JSON.createParser(answer)) {
            if (p.nextToken() != JsonToken.START_ARRAY) {
                throw new IOException("prioritize answer is not a JSON array");
            }
            while (p.nextToken() == JsonToken.START_OBJECT) {
                int hostLength = -1;
                long score = -1;
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String field = p.currentName();
                    p.nextToken();
                    if (field.equals("Host")) {
                        hostLength = p.getTextLength();
                        if (hostLength > host.length) {
                            host = new char[hostLength];
                        }
                        System.arraycopy(p.getTextCharacters(), p.getTextOffset(), host, 0, hostLength);
                    } else if (field.equals("Score")) {
                        score = p.getLongValue();
                    } else {
                        p.skipChildren();
                    }
                }
                if (score > top && hostLength >= 0) {
                    top = score;
                    char[] swap = best;
                    best = host;
                    host = swap;
                    bestLength = hostLength;
                }
            }
        }
        return bestLength < 0 ? null : new String(best, 0, bestLength);
    }

    /** A bind answer's {@code Error}, empty on success. */
    static String bindError(byte[] answer) throws IOException {
        try (JsonParser p = JSON.createParser(answer)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw new IOException("bind answer is not a JSON object");
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                p.nextToken();
                if (field.equals("Error")) {
                    return p.getValueAsString("");
                }
                p.skipChildren();
            }
        }
        return "";
    }

    /** Pod {@code i} as kube-scheduler sends it; the mix of the class comment, seeded per pod. */
    static byte[] pod(int i) {
        SplittableRandom rnd = new SplittableRandom(7L * 1_000_003 + i);
        int kind = rnd.nextInt(100);
        StringBuilder limits = new StringBuilder("{\"cpu\":\"2\",\"memory\":\"8Gi\",\"qgpu.io/gpu\":\"")
                .append(kind < 90 ? "1" : kind < 95 ? "2" : "1").append('"');
        if (kind < 95) {
            limits.append(",\"qgpu.io/gpu-memory\":\"").append(1 + rnd.nextInt(8))
                    .append("\",\"qgpu.io/gpu-core\":\"").append(5 * rnd.nextInt(5)).append('"');
        }
        limits.append('}');
        String priority = rnd.nextInt(10) < 4 ? "online" : "offline";
        String json = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"load-" + i
                + "\",\"generateName\":\"load-\",\"namespace\":\"load\",\"uid\":\"uid-" + i
                + "\",\"resourceVersion\":\"" + (100_000 + i) + "\",\"labels\":{\"app\":\"load\",\"pod-template-hash\":\"7d9f8c6b5\"},"
                + "\"annotations\":{\"qgpu.io/priority\":\"" + priority + "\"},"
                + "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"load-7d9f8c6b5\","
                + "\"uid\":\"0d9b8c1e-2f3a-4b5c-8d7e-6f5a4b3c2d1e\",\"controller\":true}]},"
                + "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"registry.example.com/infer:1.4.2\","
                + "\"resources\":{\"limits\":" + limits + ",\"requests\":" + limits + "}},"
                + "{\"name\":\"metrics-sidecar\",\"image\":\"registry.example.com/exporter:0.9\","
                + "\"resources\":{\"limits\":{\"cpu\":\"100m\",\"memory\":\"64Mi\"}}}],"
                + "\"schedulerName\":\"default-scheduler\",\"priority\":0,\"restartPolicy\":\"Always\","
                + "\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
                + "\"tolerationSeconds\":300}]},\"status\":{\"phase\":\"Pending\"}}";
        return bytes(json);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
