package io.qgpu.kubernetes.dra;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qgpu.api.Placement;
import io.qgpu.api.QgpuException;
import io.qgpu.json.QgpuJson;
import io.qgpu.kubernetes.node.AtomicFiles;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The driver's prepared claims on disk, written whole with {@link AtomicFiles} before the kubelet gets an
 * answer, so that after {@code kill -9} the next start knows every claim it answered.
 *
 * <p>Format: {@code {"version": 1, "driver": "gpu.qgpu.io", "node": NAME, "bootId": ID (when known), "claims": [{"uid", "namespace",
 * "name", "placement": {...as QgpuJson writes it}, "devices": [{"requests": [...], "pool", "device",
 * "shareID" (or absent), "gpu", "cdiIds": [...]}]}]}}.
 *
 * <p>The boot id ({@code /proc/sys/kernel/random/boot_id}, {@link #currentBootId()}) is written with every
 * save; a file whose boot id is another than the node's now was written before a reboot, and {@link #load()}
 * says so ({@link ClaimStore.Saved#anotherBoot()}): its claims' containers are gone, and the kubelet prepares
 * again whatever it restarts. A file without a boot id (written by an older driver) is taken as of this boot.
 *
 * <p>Thread safety: not thread-safe; {@link PreparedClaims} calls it under its lock.
 */
final class DriverStateFile implements ClaimStore {
    static final int VERSION = 1;
    private static final ObjectMapper MAPPER = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    /** Where Linux gives the id of the current boot. */
    static final Path BOOT_ID = Path.of("/proc/sys/kernel/random/boot_id");

    private final Path path;
    private final String node;
    private final Optional<String> bootId;

    /** A state file of this node, stamped with the current boot id. */
    DriverStateFile(Path path, String node) {
        this(path, node, currentBootId());
    }

    /** A state file of this node, stamped with this boot id (empty: none known). */
    DriverStateFile(Path path, String node, Optional<String> bootId) {
        this.path = path.toAbsolutePath();
        this.node = node;
        this.bootId = bootId;
    }

    /** The id of the current boot, when this system tells it. */
    static Optional<String> currentBootId() {
        try {
            String id = Files.readString(BOOT_ID).trim();
            return id.isEmpty() ? Optional.empty() : Optional.of(id);
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    @Override
    public void save(List<PreparedClaim> claims) {
        ObjectNode root = MAPPER.createObjectNode();
        root.put("version", VERSION);
        root.put("driver", DraNames.DRIVER);
        root.put("node", node);
        bootId.ifPresent(b -> root.put("bootId", b));
        ArrayNode list = root.putArray("claims");
        try {
            for (PreparedClaim c : claims) {
                ObjectNode o = list.addObject();
                o.put("uid", c.uid()).put("namespace", c.namespace()).put("name", c.name());
                o.set("placement", MAPPER.readTree(QgpuJson.writePlacement(c.placement())));
                ArrayNode devices = o.putArray("devices");
                for (PreparedClaim.Device d : c.devices()) {
                    ObjectNode od = devices.addObject();
                    ArrayNode req = od.putArray("requests");
                    d.requestNames().forEach(req::add);
                    od.put("pool", d.pool()).put("device", d.device());
                    d.shareId().ifPresent(s -> od.put("shareID", s));
                    od.put("gpu", d.gpuUuid());
                    ArrayNode ids = od.putArray("cdiIds");
                    d.cdiIds().forEach(ids::add);
                }
            }
            AtomicFiles.write(path, MAPPER.writeValueAsBytes(root));
        } catch (IOException e) {
            throw new UncheckedIOException("state file " + path + " cannot be written: " + e.getMessage(), e);
        }
    }

    @Override
    public Optional<Saved> load() {
        JsonNode root;
        try {
            root = MAPPER.readTree(Files.readAllBytes(path));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            com.fasterxml.jackson.core.JsonLocation at = e.getLocation();
            throw bad("$", "is not valid JSON" + (at == null || at.getLineNr() < 1 ? ""
                    : " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")"));
        } catch (IOException e) {
            throw bad("$", "cannot be read (" + e.getMessage() + ")");
        }
        if (root == null || !root.isObject()) {
            throw bad("$", "must be a JSON object");
        }
        JsonNode v = root.get("version");
        if (v == null || !v.isInt() || v.intValue() != VERSION) {
            throw bad("$.version", v + " must be " + VERSION);
        }
        JsonNode n = root.get("node");
        if (n == null || !n.isTextual() || !n.textValue().equals(node)) {
            throw bad("$.node", n + " must be this node's name \"" + node + "\"");
        }
        JsonNode list = root.get("claims");
        if (list == null || !list.isArray()) {
            throw bad("$.claims", list + " must be an array");
        }
        JsonNode b = root.get("bootId");
        if (b != null && (!b.isTextual() || b.textValue().isBlank())) {
            throw bad("$.bootId", b + " must be a non-blank string");
        }
        List<PreparedClaim> out = new ArrayList<>();
        for (int i = 0; i < list.size(); i++) {
            out.add(claim(list.get(i), "$.claims[" + i + "]"));
        }
        Optional<String> another = Optional.empty();
        if (b != null && bootId.isPresent() && !b.textValue().equals(bootId.get())) {
            another = Optional.of("saved in boot " + b.textValue() + ", the node now runs boot " + bootId.get());
        }
        return Optional.of(new Saved(out, another));
    }

    private PreparedClaim claim(JsonNode o, String at) {
        if (!o.isObject()) {
            throw bad(at, o + " must be an object");
        }
        JsonNode p = o.get("placement");
        if (p == null || !p.isObject()) {
            throw bad(at + ".placement", p + " must be an object");
        }
        Placement placement;
        try {
            placement = QgpuJson.readPlacement(p.toString());
        } catch (QgpuException e) {
            throw bad(at + ".placement", e.getMessage());
        }
        JsonNode devices = o.get("devices");
        if (devices == null || !devices.isArray()) {
            throw bad(at + ".devices", devices + " must be an array");
        }
        List<PreparedClaim.Device> ds = new ArrayList<>();
        for (int i = 0; i < devices.size(); i++) {
            String da = at + ".devices[" + i + "]";
            JsonNode d = devices.get(i);
            JsonNode share = d.get("shareID");
            ds.add(new PreparedClaim.Device(texts(d.get("requests"), da + ".requests"), text(d.get("pool"), da + ".pool"),
                    text(d.get("device"), da + ".device"),
                    share == null ? Optional.empty() : Optional.of(text(share, da + ".shareID")),
                    text(d.get("gpu"), da + ".gpu"), texts(d.get("cdiIds"), da + ".cdiIds")));
        }
        try {
            return new PreparedClaim(text(o.get("uid"), at + ".uid"), text(o.get("namespace"), at + ".namespace"),
                    text(o.get("name"), at + ".name"), placement, ds);
        } catch (IllegalArgumentException e) {
            throw bad(at, e.getMessage());
        }
    }

    private List<String> texts(JsonNode a, String at) {
        if (a == null || !a.isArray()) {
            throw bad(at, a + " must be an array of strings");
        }
        List<String> out = new ArrayList<>();
        for (int i = 0; i < a.size(); i++) {
            out.add(text(a.get(i), at + "[" + i + "]"));
        }
        return out;
    }

    private String text(JsonNode v, String at) {
        if (v == null || !v.isTextual() || v.textValue().isBlank()) {
            throw bad(at, v + " must be a non-blank string");
        }
        return v.textValue();
    }

    private IllegalStateException bad(String jsonPath, String rule) {
        return new IllegalStateException("state file " + path + ": " + jsonPath + ": " + rule);
    }
}
