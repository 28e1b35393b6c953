package io.qgpu.core.json;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.qgpu.api.Claim;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.Slice;
import io.qgpu.core.ledger.LedgerSnapshot;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * JSON for the model: inventories, claims, placements and ledger snapshots. Reading is strict:
 * unknown fields, wrong types, trailing tokens and missing required fields are refused with a
 * {@link QgpuJsonException} (naming the path, line and column) or an {@link InvalidValueException}
 * (naming the model field and the value).
 *
 * <pre>{@code
 * Inventory inv = QgpuJson.readInventory(Files.readString(Path.of("inventory.json")));
 * Ledger ledger = Ledger.create(inv.rules(), inv.nodes());
 * String json = QgpuJson.writeSnapshot(ledger.snapshot());
 * ledger.restore(QgpuJson.readSnapshot(json));   // identical ledger
 * }</pre>
 *
 * <p>Snapshots carry {@code "schemaVersion": 1}; any other version is refused.
 *
 * <p>Thread safety: stateless; safe from any thread.
 */
public final class QgpuJson {

    /** The snapshot and inventory schema version this code writes and reads. */
    public static final int SCHEMA_VERSION = 1;

    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY)
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .enable(SerializationFeature.INDENT_OUTPUT)
            .build();

    private QgpuJson() {
    }

    /** A copy of the strict mapper this class uses, for callers that map their own types alongside. */
    public static ObjectMapper mapper() {
        return MAPPER.copy();
    }

    // ------------------------------------------------------------ inventory

    public static Inventory readInventory(String json) {
        Dto.InventoryDto dto = read(json, Dto.InventoryDto.class);
        if (dto.schemaVersion() != null && dto.schemaVersion() != SCHEMA_VERSION) {
            throw new InvalidValueException("inventory.schemaVersion", dto.schemaVersion(), "must be " + SCHEMA_VERSION);
        }
        GranularityRules rules = dto.rules() == null ? GranularityRules.ofDefaults() : dto.rules().toModel();
        List<Node> nodes = nodes(dto.nodes());
        return new Inventory(rules, nodes, holdings(Dto.orEmpty(dto.nodes()), nodes));
    }

    /** The inventory, each holding listed under {@code tenants} of every GPU it has a slice on. */
    public static String writeInventory(Inventory inventory) {
        return write(new Dto.InventoryDto(SCHEMA_VERSION, Dto.RulesDto.of(inventory.rules()),
                inventory.nodes().stream().map(n -> Dto.NodeDto.of(n, inventory.holdings())).toList()));
    }

    /**
     * The placements the inventory's {@code tenants} lists describe: per node, one placement per
     * tenant with a slice on each GPU that lists it. Every listing of a tenant must agree (same claim
     * fields); a tenant on two nodes is refused.
     */
    private static List<Placement> holdings(List<Dto.NodeDto> dtos, List<Node> nodes) {
        List<Placement> out = new ArrayList<>();
        java.util.Map<String, String> nodeOf = new java.util.HashMap<>();
        for (int i = 0; i < dtos.size(); i++) {
            Node node = nodes.get(i);
            List<Dto.GpuDto> gpus = Dto.orEmpty(dtos.get(i).gpus());
            java.util.Map<String, List<Integer>> gpusOf = new java.util.LinkedHashMap<>();
            java.util.Map<String, String> firstField = new java.util.HashMap<>();
            java.util.Map<String, Dto.HoldingDto> first = new java.util.HashMap<>();
            for (int g = 0; g < gpus.size(); g++) {
                List<Dto.HoldingDto> tenants = Dto.orEmpty(gpus.get(g).tenants());
                for (int t = 0; t < tenants.size(); t++) {
                    String f = "nodes[" + i + "].gpus[" + g + "].tenants[" + t + "]";
                    Dto.HoldingDto h = Dto.required(f, tenants.get(t));
                    String id = Dto.required(f + ".tenant", h.tenant());
                    String other = nodeOf.putIfAbsent(id, node.name());
                    if (other != null && !other.equals(node.name())) {
                        throw new InvalidValueException(f + ".tenant", id, "is also listed on node " + other
                                + "; a tenant's GPUs are on one node");
                    }
                    Dto.HoldingDto seen = first.putIfAbsent(id, h);
                    if (seen != null && !seen.equals(h)) {
                        throw new InvalidValueException(f, id, "differs from its listing at " + firstField.get(id)
                                + "; a tenant has the same slice on each of its GPUs");
                    }
                    firstField.putIfAbsent(id, f);
                    List<Integer> on = gpusOf.computeIfAbsent(id, k -> new ArrayList<>());
                    if (on.contains(g)) {
                        throw new InvalidValueException(f + ".tenant", id, "is listed twice on this GPU");
                    }
                    on.add(g);
                }
            }
            for (java.util.Map.Entry<String, List<Integer>> e : gpusOf.entrySet()) {
                String f = firstField.get(e.getKey());
                Claim claim = first.get(e.getKey()).claim(f, e.getValue().size());
                List<Slice> slices = new ArrayList<>();
                for (int g : e.getValue()) {
                    io.qgpu.api.GpuDevice d = node.gpus().get(g);
                    slices.add(new Slice(d.uuid(), claim.exclusive() ? d.memoryBytes() : claim.memoryPerGpuBytes(),
                            claim.computeRequest(), claim.computeLimit()));
                }
                out.add(new Placement(claim, node.name(), slices));
            }
        }
        return out;
    }

    public static Node readNode(String json) {
        return read(json, Dto.NodeDto.class).toModel("node");
    }

    public static String writeNode(Node node) {
        return write(Dto.NodeDto.of(node));
    }

    // ------------------------------------------------------------ claims

    /** Reads a JSON array of claims. */
    public static List<Claim> readClaims(String json) {
        List<Dto.ClaimDto> dtos = read(json, new TypeReference<List<Dto.ClaimDto>>() { });
        List<Claim> out = new ArrayList<>(dtos.size());
        for (int i = 0; i < dtos.size(); i++) {
            out.add(Dto.required("claims[" + i + "]", dtos.get(i)).toModel());
        }
        return out;
    }

    public static Claim readClaim(String json) {
        return read(json, Dto.ClaimDto.class).toModel();
    }

    public static String writeClaims(List<Claim> claims) {
        return write(claims.stream().map(Dto.ClaimDto::of).toList());
    }

    // ------------------------------------------------------------ placements

    public static Placement readPlacement(String json) {
        return read(json, Dto.PlacementDto.class).toModel();
    }

    /** Reads a JSON array of placements. */
    public static List<Placement> readPlacements(String json) {
        List<Dto.PlacementDto> dtos = read(json, new TypeReference<List<Dto.PlacementDto>>() { });
        return dtos.stream().map(d -> Dto.required("placements[]", d).toModel()).collect(Collectors.toList());
    }

    /** A placement with its derived container environment. */
    public static String writePlacement(Placement placement) {
        return write(Dto.PlacementDto.of(placement));
    }

    public static String writePlacements(List<Placement> placements) {
        return write(placements.stream().map(Dto.PlacementDto::of).toList());
    }

    // ------------------------------------------------------------ snapshots

    public static String writeSnapshot(LedgerSnapshot snapshot) {
        return write(new Dto.SnapshotDto(SCHEMA_VERSION, Dto.RulesDto.of(snapshot.rules()),
                snapshot.nodes().stream().map(Dto.NodeDto::of).toList(),
                snapshot.placements().stream().map(Dto.PlacementDto::of).toList()));
    }

    /**
     * Reads a snapshot. Only the format is checked here; {@link io.qgpu.core.ledger.Ledger#restore}
     * checks consistency (oversubscription, unknown GPUs) and leaves the ledger untouched on failure.
     */
    public static LedgerSnapshot readSnapshot(String json) {
        Dto.SnapshotDto dto = read(json, Dto.SnapshotDto.class);
        if (dto.schemaVersion() == null) {
            throw new InvalidValueException("snapshot.schemaVersion", null, "is required");
        }
        if (dto.schemaVersion() != SCHEMA_VERSION) {
            throw new InvalidValueException("snapshot.schemaVersion", dto.schemaVersion(),
                    "must be " + SCHEMA_VERSION + " (this version of qgpu reads no other)");
        }
        GranularityRules rules = Dto.required("snapshot.rules", dto.rules()).toModel();
        List<Placement> placements = new ArrayList<>();
        for (Dto.PlacementDto p : Dto.orEmpty(dto.placements())) {
            placements.add(Dto.required("snapshot.placements[]", p).toModel());
        }
        return new LedgerSnapshot(rules, nodes(dto.nodes()), placements);
    }

    // ------------------------------------------------------------ internals

    private static List<Node> nodes(List<Dto.NodeDto> dtos) {
        List<Node> nodes = new ArrayList<>();
        List<Dto.NodeDto> in = Dto.orEmpty(dtos);
        for (int i = 0; i < in.size(); i++) {
            nodes.add(Dto.required("nodes[" + i + "]", in.get(i)).toModel("nodes[" + i + "]"));
        }
        return nodes;
    }

    private static <T> T read(String json, Class<T> type) {
        return read(json, MAPPER.constructType(type));
    }

    private static <T> T read(String json, TypeReference<T> type) {
        return read(json, MAPPER.constructType(type));
    }

    private static <T> T read(String json, JavaType type) {
        if (json == null) {
            throw new InvalidValueException("json", null, "must not be null");
        }
        try {
            T value = MAPPER.readValue(json, type);
            if (value == null) {
                throw new QgpuJsonException("", "document is empty or null", null);
            }
            return value;
        } catch (JsonProcessingException e) {
            throw translate(e);
        }
    }

    private static QgpuJsonException translate(JsonProcessingException e) {
        String path = "";
        if (e instanceof JsonMappingException m) {
            StringBuilder sb = new StringBuilder();
            for (JsonMappingException.Reference r : m.getPath()) {
                if (r.getFieldName() != null) {
                    if (sb.length() > 0) {
                        sb.append('.');
                    }
                    sb.append(r.getFieldName());
                } else if (r.getIndex() >= 0) {
                    sb.append('[').append(r.getIndex()).append(']');
                }
            }
            path = sb.toString();
        }
        JsonLocation loc = e.getLocation();
        String where = loc == null ? "" : " (line " + loc.getLineNr() + ", column " + loc.getColumnNr() + ")";
        return new QgpuJsonException(path, e.getOriginalMessage() + where, e);
    }

    private static String write(Object dto) {
        try {
            return MAPPER.writeValueAsString(dto) + "\n";
        } catch (JsonProcessingException e) {
            throw new QgpuJsonException("", "cannot write JSON: " + e.getOriginalMessage(), e);
        }
    }
}
