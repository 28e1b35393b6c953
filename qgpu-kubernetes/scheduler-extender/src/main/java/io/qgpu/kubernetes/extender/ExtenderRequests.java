package io.qgpu.kubernetes.extender;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Reads and writes the extender's JSON. Requests are checked strictly, and every problem is a
 * {@link BadRequestException} (400) naming the field: malformed JSON, trailing tokens, duplicate
 * keys, a missing or mistyped {@code Pod}, both or neither of {@code Nodes}/{@code NodeNames}, node
 * entries without a name, duplicate node names.
 *
 * <p>Top-level keys are matched case-insensitively, as Go's {@code encoding/json} (the scheduler's
 * side) matches them; top-level keys this version does not know are ignored for the same reason
 * (a newer scheduler may send more). Inside the Pod and the nodes, Kubernetes' own JSON applies.
 *
 * <pre>{@code
 * ExtenderRequests.Args a = ExtenderRequests.parseArgs(body);
 * a.byNames();        // true when the scheduler runs with nodeCacheCapable: true
 * a.nodeNames();      // candidate names in request order
 * }</pre>
 *
 * <p>Thread safety: stateless; safe from any thread.
 */
public final class ExtenderRequests {

    /** Strict reader for the envelope. */
    private static final ObjectMapper STRICT = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY)
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .build();

    /** Reader of Kubernetes objects into fabric8's model (which keeps unknown fields). */
    private static final ObjectMapper KUBE = JsonMapper.builder()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .build();

    /**
     * Reader of a request's {@code Pod} straight from its bytes into fabric8's model: {@link #KUBE}'s
     * settings, with a parser that refuses a key given twice in one object (as {@link #STRICT}'s does).
     */
    private static final ObjectReader POD = KUBE.readerFor(Pod.class).with(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    /** Writer of replies: compact, keys as the records declare them. */
    private static final ObjectMapper WRITER = JsonMapper.builder()
            .disable(SerializationFeature.INDENT_OUTPUT)
            .build();

    private ExtenderRequests() {
    }

    /** The strict reader of request envelopes (for {@link NamesArgsReader} and its tests). */
    static ObjectMapper strict() {
        return STRICT;
    }

    /**
     * The reader of a pod from its bytes into fabric8's model, refusing a key given twice in one object
     * (for {@link NamesArgsReader}, which reads a request's pod with it and falls back to the tree on
     * any problem).
     */
    static ObjectReader podReader() {
        return POD;
    }

    /**
     * A parsed {@code ExtenderArgs}.
     *
     * @param pod       the pod, in fabric8's model
     * @param byNames   whether the candidates came as {@code NodeNames} (nodeCacheCapable) rather than {@code Nodes}
     * @param nodeNames candidate names, in request order
     * @param nodes     for {@code Nodes} requests, each candidate's JSON and model by name, in request order; empty otherwise
     * @param nodeList  for {@code Nodes} requests, the NodeList's JSON (its items are echoed back by filter); else {@code null}
     */
    public record Args(Pod pod, boolean byNames, List<String> nodeNames, Map<String, NodeEntry> nodes, ObjectNode nodeList) {
        public Args {
            // the request reader's names are already an unmodifiable list of their own: kept, not copied
            nodeNames = nodeNames instanceof CandidateNames ? nodeNames : List.copyOf(nodeNames);
            nodes = nodes.isEmpty() ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(nodes));
        }
    }

    /**
     * One node of a {@code Nodes} request.
     *
     * @param json  the node exactly as sent
     * @param model the same node in fabric8's model
     */
    public record NodeEntry(JsonNode json, Node model) {
    }

    /**
     * A parsed {@code ExtenderPreemptionArgs}.
     *
     * @param pod    the pod to make room for
     * @param byUid  whether the victims came as {@code NodeNameToMetaVictims} (nodeCacheCapable, UIDs only)
     *               rather than {@code NodeNameToVictims} (full pods)
     * @param nodes  per candidate node, in request order, the scheduler's victims there
     */
    public record PreemptionArgs(Pod pod, boolean byUid, Map<String, NodeVictims> nodes) {
        public PreemptionArgs {
            nodes = Collections.unmodifiableMap(new LinkedHashMap<>(nodes));
        }
    }

    /**
     * The scheduler's victims on one node.
     *
     * @param pods             the victims
     * @param numPdbViolations how many PodDisruptionBudgets evicting them violates, as the scheduler counted
     */
    public record NodeVictims(List<Victim> pods, long numPdbViolations) {
        public NodeVictims {
            pods = List.copyOf(pods);
        }
    }

    /**
     * One victim pod.
     *
     * @param uid      its UID (may be empty for a full pod without one)
     * @param tenantId {@code namespace/name} for a full pod; {@code null} when only the UID was sent
     */
    public record Victim(String uid, String tenantId) {
    }

    /** Reads {@code ExtenderPreemptionArgs}. */
    public static PreemptionArgs parsePreemption(byte[] body) {
        String what = "ExtenderPreemptionArgs";
        ObjectNode root = object(body, what);
        Map<String, JsonNode> fields = fields(root, what, Set.of("pod", "nodenametovictims", "nodenametometavictims"));
        Pod pod = pod(fields, what);
        JsonNode full = fields.get("nodenametovictims");
        JsonNode meta = fields.get("nodenametometavictims");
        boolean hasFull = full != null && !full.isNull();
        boolean hasMeta = meta != null && !meta.isNull();
        if (hasFull == hasMeta) {
            throw new BadRequestException(400, what + ": exactly one of NodeNameToVictims (nodeCacheCapable: false) and "
                    + "NodeNameToMetaVictims (nodeCacheCapable: true) must be given, " + (hasFull ? "both were" : "neither was"));
        }
        String mf = what + (hasMeta ? ".NodeNameToMetaVictims" : ".NodeNameToVictims");
        JsonNode map = hasMeta ? meta : full;
        if (!map.isObject()) {
            throw BadRequestException.badValue(mf, map.getNodeType().toString().toLowerCase(Locale.ROOT),
                    "must be an object of node name to victims");
        }
        Map<String, NodeVictims> nodes = new LinkedHashMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = map.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            String f = mf + "[" + e.getKey() + "]";
            if (e.getKey().isBlank()) {
                throw BadRequestException.badValue(f, e.getKey(), "a node name must not be blank");
            }
            nodes.put(e.getKey(), victims(e.getValue(), f, hasMeta));
        }
        return new PreemptionArgs(pod, hasMeta, nodes);
    }

    private static NodeVictims victims(JsonNode v, String f, boolean byUid) {
        if (!v.isObject()) {
            throw BadRequestException.badValue(f, v.getNodeType().toString().toLowerCase(Locale.ROOT),
                    "must be a " + (byUid ? "MetaVictims" : "Victims") + " object");
        }
        Map<String, JsonNode> vf = fields((ObjectNode) v, f, Set.of("pods", "numpdbviolations"));
        JsonNode pdb = vf.get("numpdbviolations");
        long violations = 0;
        if (pdb != null && !pdb.isNull()) {
            if (!pdb.isIntegralNumber() || !pdb.canConvertToLong() || pdb.asLong() < 0) {
                throw BadRequestException.badValue(f + ".NumPDBViolations", pdb, "must be a whole number, at least 0");
            }
            violations = pdb.asLong();
        }
        List<Victim> out = new ArrayList<>();
        JsonNode pods = vf.get("pods");
        if (pods != null && !pods.isNull()) {
            if (!pods.isArray()) {
                throw BadRequestException.badValue(f + ".Pods", pods.getNodeType().toString().toLowerCase(Locale.ROOT),
                        "must be an array");
            }
            for (int i = 0; i < pods.size(); i++) {
                String pf = f + ".Pods[" + i + "]";
                JsonNode p = pods.get(i);
                if (!p.isObject()) {
                    throw BadRequestException.badValue(pf, p.getNodeType().toString().toLowerCase(Locale.ROOT),
                            "must be a " + (byUid ? "MetaPod" : "Pod") + " object");
                }
                out.add(byUid ? new Victim(text(fields((ObjectNode) p, pf, Set.of("uid")), "uid", pf + ".UID", true), null)
                        : victimPod(p, pf));
            }
        }
        return new NodeVictims(out, violations);
    }

    private static Victim victimPod(JsonNode json, String f) {
        Pod pod = convert(json, Pod.class, f);
        var m = pod.getMetadata();
        if (m == null || m.getName() == null || m.getName().isBlank()) {
            throw BadRequestException.badValue(f + ".metadata.name", m == null ? null : m.getName(), "is required");
        }
        if (m.getNamespace() == null || m.getNamespace().isBlank()) {
            throw BadRequestException.badValue(f + ".metadata.namespace", m.getNamespace(), "is required");
        }
        return new Victim(m.getUid() == null ? "" : m.getUid(), PodClaims.tenantOf(m.getNamespace(), m.getName()));
    }

    /** The required {@code Pod} of a request, checked to have a name and namespace. */
    private static Pod pod(Map<String, JsonNode> fields, String what) {
        return podOf(fields.get("pod"), what);
    }

    /** The required {@code Pod} of a request in fabric8's model, checked to have a name and namespace; a 400 if not. */
    static Pod podOf(JsonNode podJson, String what) {
        if (podJson == null || podJson.isNull()) {
            throw BadRequestException.badValue(what + ".Pod", null, "is required");
        }
        if (!podJson.isObject()) {
            throw BadRequestException.badValue(what + ".Pod", podJson.getNodeType().toString().toLowerCase(Locale.ROOT),
                    "must be a Pod object");
        }
        return named(convert(podJson, Pod.class, what + ".Pod"));
    }

    /** {@code pod}, checked to have a name and namespace; a 400 if not. */
    private static Pod named(Pod pod) {
        PodClaims.tenantOf(pod);
        return pod;
    }

    /** Reads {@code ExtenderArgs}. */
    public static Args parseArgs(byte[] body) {
        return parseArgs(body, NodeNameTable.EMPTY);
    }

    /**
     * As {@link #parseArgs(byte[])}; a candidate name that {@code known} holds is given as
     * {@code known}'s own string (equal to the one sent).
     */
    static Args parseArgs(byte[] body, NodeNameTable known) {
        return parseArgs(body, known, null);
    }

    /**
     * As {@link #parseArgs(byte[], NodeNameTable)}, taking the pod from {@code pods} when the same bytes
     * were read before ({@code pods} may be null).
     */
    static Args parseArgs(byte[] body, NodeNameTable known, RecentPods pods) {
        return parseArgs(body, known, pods, null);
    }

    /**
     * As {@link #parseArgs(byte[], NodeNameTable, RecentPods)}, taking the names from {@code filtered}
     * when the request lists, byte for byte, the names a filter passed for the same pod bytes
     * ({@code prioritize} after {@code filter}); {@code filtered} may be null.
     */
    static Args parseArgs(byte[] body, NodeNameTable known, RecentPods pods, FilteredNames filtered) {
        NamesArgsReader.Read fast = NamesArgsReader.read(body, STRICT, known, pods, filtered);
        if (fast != null) {
            Pod pod = fast.pod();
            if (!fast.recent()) {
                pod = pod != null ? named(pod) : podOf(fast.podTree(), "ExtenderArgs");
                if (pods != null) {
                    pods.file(body, fast.podStart(), fast.podLength(), pod);   // only a pod read without a problem
                }
            }
            return new Args(pod, true, fast.names(), Map.of(), null);
        }
        return parseArgsInFull(body);
    }

    /** {@link #parseArgs} without its fast path ({@link NamesArgsReader}): the whole body as a tree first. */
    static Args parseArgsInFull(byte[] body) {
        ObjectNode root = object(body, "ExtenderArgs");
        Map<String, JsonNode> fields = fields(root, "ExtenderArgs", Set.of("pod", "nodes", "nodenames"));
        Pod pod = pod(fields, "ExtenderArgs");
        JsonNode nodesJson = fields.get("nodes");
        JsonNode namesJson = fields.get("nodenames");
        boolean hasNodes = nodesJson != null && !nodesJson.isNull();
        boolean hasNames = namesJson != null && !namesJson.isNull();
        if (hasNodes == hasNames) {
            throw new BadRequestException(400, "ExtenderArgs: exactly one of Nodes (nodeCacheCapable: false) and NodeNames "
                    + "(nodeCacheCapable: true) must be given, " + (hasNodes ? "both were" : "neither was"));
        }
        if (hasNames) {
            if (!namesJson.isArray()) {
                throw BadRequestException.badValue("ExtenderArgs.NodeNames", namesJson.getNodeType().toString().toLowerCase(Locale.ROOT),
                        "must be an array of node names");
            }
            Set<String> names = new LinkedHashSet<>();
            for (int i = 0; i < namesJson.size(); i++) {
                JsonNode n = namesJson.get(i);
                if (!n.isTextual() || n.asText().isBlank()) {
                    throw BadRequestException.badValue("ExtenderArgs.NodeNames[" + i + "]", n, "must be a non-blank string");
                }
                if (!names.add(n.asText())) {
                    throw BadRequestException.badValue("ExtenderArgs.NodeNames[" + i + "]", n.asText(), "is listed twice");
                }
            }
            return new Args(pod, true, new ArrayList<>(names), Map.of(), null);
        }
        if (!nodesJson.isObject()) {
            throw BadRequestException.badValue("ExtenderArgs.Nodes", nodesJson.getNodeType().toString().toLowerCase(Locale.ROOT),
                    "must be a NodeList object");
        }
        JsonNode items = nodesJson.get("items");
        Map<String, NodeEntry> nodes = new LinkedHashMap<>();
        if (items != null && !items.isNull()) {
            if (!items.isArray()) {
                throw BadRequestException.badValue("ExtenderArgs.Nodes.items", items.getNodeType().toString().toLowerCase(Locale.ROOT),
                        "must be an array of Node objects");
            }
            for (int i = 0; i < items.size(); i++) {
                String f = "ExtenderArgs.Nodes.items[" + i + "]";
                JsonNode item = items.get(i);
                if (!item.isObject()) {
                    throw BadRequestException.badValue(f, item.getNodeType().toString().toLowerCase(Locale.ROOT), "must be a Node object");
                }
                Node model = convert(item, Node.class, f);
                String name = model.getMetadata() == null ? null : model.getMetadata().getName();
                if (name == null || name.isBlank()) {
                    throw BadRequestException.badValue(f + ".metadata.name", name, "is required");
                }
                if (nodes.putIfAbsent(name, new NodeEntry(item, model)) != null) {
                    throw BadRequestException.badValue(f + ".metadata.name", name, "is listed twice");
                }
            }
        }
        return new Args(pod, false, new ArrayList<>(nodes.keySet()), nodes, (ObjectNode) nodesJson);
    }

    /** Reads {@code ExtenderBindingArgs}. */
    public static ExtenderProtocol.BindingArgs parseBinding(byte[] body) {
        ObjectNode root = object(body, "ExtenderBindingArgs");
        Map<String, JsonNode> fields = fields(root, "ExtenderBindingArgs", Set.of("podname", "podnamespace", "poduid", "node"));
        String name = text(fields, "podname", "ExtenderBindingArgs.PodName", true);
        String ns = text(fields, "podnamespace", "ExtenderBindingArgs.PodNamespace", true);
        // the scheduler always sends the UID: without it a pod recreated under the same name could be bound in its place
        String uid = text(fields, "poduid", "ExtenderBindingArgs.PodUID", true);
        String node = text(fields, "node", "ExtenderBindingArgs.Node", true);
        return new ExtenderProtocol.BindingArgs(name, ns, uid, node);
    }

    /** The filter reply's NodeList: the request's NodeList with only the {@code keep} items, as sent. */
    public static ObjectNode nodeListOf(Args args, List<String> keep) {
        ObjectNode out = args.nodeList().deepCopy();
        ArrayNode items = out.putArray("items");
        for (String name : keep) {
            items.add(args.nodes().get(name).json());
        }
        return out;
    }

    /** Compact JSON of a reply. */
    public static byte[] write(Object reply) {
        if (ReplyWriter.handles(reply)) {
            return ReplyWriter.write(reply, WRITER);
        }
        try {
            return WRITER.writeValueAsBytes(reply);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write reply " + reply.getClass().getSimpleName(), e);
        }
    }

    /** As {@link #write(Object)}, into {@code out} (the reply is written once, where it is sent from). */
    static void write(Object reply, ReplyBuffer out) {
        if (ReplyWriter.handles(reply)) {
            ReplyWriter.write(reply, WRITER, out);
            return;
        }
        try {
            WRITER.writeValue(out, reply);
        } catch (IOException e) {
            throw new IllegalStateException("cannot write reply " + reply.getClass().getSimpleName(), e);
        }
    }

    /** Compact JSON text of any value. */
    public static String writeString(Object value) {
        return new String(write(value), java.nio.charset.StandardCharsets.UTF_8);
    }

    /** Reads a Kubernetes object (Pod, Node) from JSON text, for tests and tools; 400 on malformed input. */
    public static <T> T readKube(String json, Class<T> type) {
        return convert(object(json.getBytes(java.nio.charset.StandardCharsets.UTF_8), type.getSimpleName()), type, type.getSimpleName());
    }

    // ------------------------------------------------------------ internals

    private static ObjectNode object(byte[] body, String what) {
        if (body == null || body.length == 0) {
            throw new BadRequestException(400, what + ": the request body is empty; a JSON object is required");
        }
        JsonNode root;
        try {
            root = STRICT.readTree(body);
        } catch (IOException e) {
            throw new BadRequestException(400, what + ": malformed JSON: " + message(e), e);
        }
        if (root == null || root.isMissingNode()) {
            throw new BadRequestException(400, what + ": the request body is empty; a JSON object is required");
        }
        if (!root.isObject()) {
            throw new BadRequestException(400, what + ": must be a JSON object, was " + root.getNodeType().toString().toLowerCase(Locale.ROOT));
        }
        return (ObjectNode) root;
    }

    /** Known keys, lower-cased; the same key twice in different case is refused. */
    private static Map<String, JsonNode> fields(ObjectNode root, String what, Set<String> known) {
        Map<String, JsonNode> out = new LinkedHashMap<>();
        Map<String, String> spelled = new LinkedHashMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = root.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            String k = e.getKey().toLowerCase(Locale.ROOT);
            if (!known.contains(k)) {
                continue;
            }
            String before = spelled.putIfAbsent(k, e.getKey());
            if (before != null) {
                throw BadRequestException.badValue(what + "." + e.getKey(), e.getValue(),
                        "duplicates key " + before + " (keys are matched case-insensitively)");
            }
            out.put(k, e.getValue());
        }
        return out;
    }

    private static String text(Map<String, JsonNode> fields, String key, String field, boolean required) {
        JsonNode n = fields.get(key);
        if (n == null || n.isNull()) {
            if (required) {
                throw BadRequestException.badValue(field, null, "is required");
            }
            return null;
        }
        if (!n.isTextual()) {
            throw BadRequestException.badValue(field, n, "must be a string");
        }
        if (required && n.asText().isBlank()) {
            throw BadRequestException.badValue(field, n.asText(), "must not be blank");
        }
        return n.asText();
    }

    private static <T> T convert(JsonNode json, Class<T> type, String field) {
        try {
            return KUBE.treeToValue(json, type);
        } catch (JsonProcessingException | IllegalArgumentException e) {
            throw new BadRequestException(400, field + ": cannot be read as a Kubernetes " + type.getSimpleName() + ": "
                    + message(e), e);
        }
    }

    private static String message(Exception e) {
        if (e instanceof JsonProcessingException j) {
            String m = io.qgpu.json.JsonInput.problem(j);
            if (j.getLocation() != null && j.getLocation().getLineNr() > 0) {
                m += " (line " + j.getLocation().getLineNr() + ", column " + j.getLocation().getColumnNr() + ")";
            }
            return m;
        }
        return String.valueOf(e.getMessage());
    }
}
