package io.qgpu.kubernetes.deviceplugin;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qgpu.api.Placement;
import io.qgpu.api.QgpuException;
import io.qgpu.api.Validate;
import io.qgpu.json.QgpuJson;
import io.qgpu.kubernetes.node.AtomicFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The plugin's memory across restarts: which virtual id is on which GPU, and the placement behind
 * each allocation. Written after every change with {@link AtomicFiles} (a temporary file in the same
 * directory, forced to disk and renamed over the old file atomically), so that a crash leaves the old
 * or the new state, never a torn one.
 *
 * <pre>{@code
 * StateFile f = new StateFile(Path.of("/var/lib/qgpu/device-plugin-state.json"));
 * f.save("node-a", allocations);
 * List<Allocation> back = f.load("node-a").orElse(List.of());
 * }</pre>
 *
 * <p>Format: {@code {"version": 1, "node": NAME, "allocations": [{"deviceIds": [...], "gpuOf": {id: uuid},
 * "pod": "ns/name" or null, "placement": {...as QgpuJson writes it}, "replicas": [{...}, ...]}]}}; {@code replicas}
 * only for a container whose ids are stacked replicas (see {@link Allocation}); a file without it reads as before.
 *
 * <p>Thread safety: not thread-safe; the pool calls it under its lock.
 */
public final class StateFile implements AllocationStore {
    /** The format version this class writes and reads. */
    public static final int VERSION = 1;

    private static final ObjectMapper MAPPER = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private final Path path;

    public StateFile(Path path) {
        this.path = Validate.notNull("stateFile.path", path).toAbsolutePath();
    }

    /** The file. */
    public Path path() {
        return path;
    }

    @Override
    public String toString() {
        return "state file " + path;
    }

    /** Writes the allocations atomically. */
    @Override
    public void save(String node, List<Allocation> allocations) {
        ObjectNode root = MAPPER.createObjectNode();
        root.put("version", VERSION);
        root.put("node", node);
        ArrayNode list = root.putArray("allocations");
        try {
            for (Allocation a : allocations) {
                ObjectNode o = list.addObject();
                ArrayNode ids = o.putArray("deviceIds");
                a.deviceIds().forEach(ids::add);
                ObjectNode gpuOf = o.putObject("gpuOf");
                a.deviceIds().forEach(id -> gpuOf.put(id, a.gpuOf().get(id)));
                if (a.pod().isPresent()) {
                    o.put("pod", a.pod().get());
                } else {
                    o.putNull("pod");
                }
                o.set("placement", MAPPER.readTree(QgpuJson.writePlacement(a.placement())));
                if (!a.replicas().isEmpty()) {
                    ArrayNode rs = o.putArray("replicas");
                    for (Placement r : a.replicas()) {
                        rs.add(MAPPER.readTree(QgpuJson.writePlacement(r)));
                    }
                }
            }
            AtomicFiles.write(path, MAPPER.writeValueAsBytes(root));
        } catch (IOException e) {
            throw new UncheckedIOException("state file " + path + " cannot be written: " + e.getMessage(), e);
        }
    }

    /**
     * Reads the allocations back; empty when the file does not exist.
     *
     * @throws StateFileException naming the file, the JSON path and the value when it cannot be read
     *                            or was written for another node
     */
    @Override
    public Optional<List<Allocation>> load(String node) {
        JsonNode root;
        try {
            root = MAPPER.readTree(Files.readAllBytes(path));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            throw new StateFileException(path, "$", "cannot be read as JSON: " + e.getMessage());
        }
        if (root == null || !root.isObject()) {
            throw new StateFileException(path, "$", "must be a JSON object");
        }
        JsonNode version = root.get("version");
        if (version == null || !version.isInt() || version.intValue() != VERSION) {
            throw new StateFileException(path, "$.version", version + " must be " + VERSION);
        }
        JsonNode n = root.get("node");
        if (n == null || !n.isTextual() || !n.textValue().equals(node)) {
            throw new StateFileException(path, "$.node", n + " must be this node's name \"" + node + "\"");
        }
        JsonNode list = root.get("allocations");
        if (list == null || !list.isArray()) {
            throw new StateFileException(path, "$.allocations", list + " must be an array");
        }
        List<Allocation> out = new ArrayList<>();
        for (int i = 0; i < list.size(); i++) {
            out.add(allocation(list.get(i), "$.allocations[" + i + "]"));
        }
        return Optional.of(List.copyOf(out));
    }

    private Allocation allocation(JsonNode o, String at) {
        if (!o.isObject()) {
            throw new StateFileException(path, at, o + " must be an object");
        }
        JsonNode ids = o.get("deviceIds");
        if (ids == null || !ids.isArray() || ids.isEmpty()) {
            throw new StateFileException(path, at + ".deviceIds", ids + " must be a non-empty array of strings");
        }
        List<String> deviceIds = new ArrayList<>();
        for (int i = 0; i < ids.size(); i++) {
            deviceIds.add(text(ids.get(i), at + ".deviceIds[" + i + "]"));
        }
        JsonNode g = o.get("gpuOf");
        if (g == null || !g.isObject()) {
            throw new StateFileException(path, at + ".gpuOf", g + " must be an object");
        }
        Map<String, String> gpuOf = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : g.properties()) {
            gpuOf.put(e.getKey(), text(e.getValue(), at + ".gpuOf[\"" + e.getKey() + "\"]"));
        }
        JsonNode pod = o.get("pod");
        Optional<String> podKey = pod == null || pod.isNull() ? Optional.empty() : Optional.of(text(pod, at + ".pod"));
        JsonNode p = o.get("placement");
        if (p == null || !p.isObject()) {
            throw new StateFileException(path, at + ".placement", p + " must be an object");
        }
        Placement placement;
        try {
            placement = QgpuJson.readPlacement(p.toString());
        } catch (QgpuException e) {
            throw new StateFileException(path, at + ".placement", e.getMessage());
        }
        List<Placement> replicas = new ArrayList<>();
        JsonNode rs = o.get("replicas");
        if (rs != null && !rs.isNull()) {
            if (!rs.isArray()) {
                throw new StateFileException(path, at + ".replicas", rs + " must be an array of placements");
            }
            for (int i = 0; i < rs.size(); i++) {
                try {
                    replicas.add(QgpuJson.readPlacement(rs.get(i).toString()));
                } catch (QgpuException e) {
                    throw new StateFileException(path, at + ".replicas[" + i + "]", e.getMessage());
                }
            }
        }
        try {
            return new Allocation(deviceIds, gpuOf, placement, podKey, replicas);
        } catch (IllegalArgumentException | QgpuException e) {
            throw new StateFileException(path, at, e.getMessage());
        }
    }

    private String text(JsonNode v, String at) {
        if (v == null || !v.isTextual() || v.textValue().isBlank()) {
            throw new StateFileException(path, at, v + " must be a non-blank string");
        }
        return v.textValue();
    }

    /** The state file cannot be used; names the file, the JSON path and the rule. */
    public static final class StateFileException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        StateFileException(Path file, String jsonPath, String rule) {
            super("state file " + file + ": " + jsonPath + ": " + rule);
        }
    }
}
