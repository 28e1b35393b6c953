package io.qgpu.json;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.MapperFeature;
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
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * JSON for the model: inventories, claims, placements and ledger snapshots. Reading is strict:
 * unknown fields, wrong types, trailing tokens and missing required fields are refused with a
 * {@link QgpuJsonException} naming the path, line and column (a value the model refuses is reported
 * the same way, at the path of the file where it was written). The readers of inventories, nodes and
 * snapshots also refuse, the same way, values that are almost certainly mistakes: {@code "gpus": null}
 * on a node, a label value that is not a string, a GPU of more than {@link #MAX_GPU_MEMORY_BYTES}.
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

    /**
     * The most memory one GPU of an inventory, node or snapshot may list: 1 PiB (the largest GPUs hold a few
     * hundred GB; more is a typo, and with 1024 such GPUs a node's sums would no longer fit a long).
     */
    public static final long MAX_GPU_MEMORY_BYTES = 1L << 50;

    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY)
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
            .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
            .enable(SerializationFeature.INDENT_OUTPUT)
            .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS)
            .build();

    private QgpuJson() {
    }

    /** A copy of the strict mapper this class uses, for callers that map their own types alongside. */
    public static ObjectMapper mapper() {
        return MAPPER.copy();
    }

    // ------------------------------------------------------------ inventory

    public static Inventory readInventory(String json) {
        return readInventory(JsonInput.parse("", json, ""));
    }

    /** Reads an inventory file; errors name the file, the JSON path and the line. */
    public static Inventory readInventory(Path file) {
        return readInventory(JsonInput.read(file, ""));
    }

    public static Inventory readInventory(JsonInput in) {
        InventoryChecks.nodes(in);
        Dto.InventoryDto dto = in.bind("", Dto.InventoryDto.class);
        if (dto.schemaVersion() != null && dto.schemaVersion() != SCHEMA_VERSION) {
            throw in.error("schemaVersion", "must be " + SCHEMA_VERSION);
        }
        Dto.RulesDto rulesDto = dto.rules();
        GranularityRules rules = rulesDto == null ? GranularityRules.ofDefaults()
                : convert(in, "rules", "rules", rulesDto::toModel);
        List<Node> nodes = nodes(in, dto.nodes());
        List<Placement> holdings;
        try {
            holdings = holdings(Dto.orEmpty(dto.nodes()), nodes);
        } catch (InvalidValueException e) {
            // holdings() names the file's own paths (nodes[i].gpus[g].tenants[t]...)
            throw in.error(e.field(), e.rule(), e);
        }
        return new Inventory(rules, nodes, holdings);
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
            // per tenant, in the order first listed: its first listing and the GPUs that list it
            java.util.Map<String, Listing> listings = new java.util.LinkedHashMap<>();
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
                    Listing seen = listings.computeIfAbsent(id, k -> new Listing(f, h, new ArrayList<>()));
                    if (!seen.holding().equals(h)) {
                        throw new InvalidValueException(f, id, "differs from its listing at " + seen.field()
                                + "; a tenant has the same slice on each of its GPUs");
                    }
                    if (seen.gpus().contains(g)) {
                        throw new InvalidValueException(f + ".tenant", id, "is listed twice on this GPU");
                    }
                    seen.gpus().add(g);
                }
            }
            for (Listing listing : listings.values()) {
                Claim claim = listing.holding().claim(listing.field(), listing.gpus().size());
                List<Slice> slices = new ArrayList<>();
                for (int g : listing.gpus()) {
                    io.qgpu.api.GpuDevice d = node.gpus().get(g);
                    slices.add(new Slice(d.uuid(), claim.exclusive() ? d.memoryBytes() : claim.memoryPerGpuBytes(),
                            claim.computeRequest(), claim.computeLimit()));
                }
                out.add(new Placement(claim, node.name(), slices));
            }
            List<HostDto.HostTenantDto> hostOnly = Dto.orEmpty(dtos.get(i).hostTenants());
            for (int t = 0; t < hostOnly.size(); t++) {
                String f = "nodes[" + i + "].hostTenants[" + t + "]";
                Placement p = Dto.required(f, hostOnly.get(t)).toModel(f, node.name());
                String other = nodeOf.putIfAbsent(p.tenantId(), node.name());
                if (other != null) {
                    throw new InvalidValueException(f + ".tenant", p.tenantId(), "is also listed on node " + other);
                }
                out.add(p);
            }
        }
        return out;
    }

    /** A tenant's first listing in an inventory's {@code tenants} lists, at {@code field}, and the GPUs that list it. */
    private record Listing(String field, Dto.HoldingDto holding, List<Integer> gpus) {
    }

    public static Node readNode(String json) {
        JsonInput in = JsonInput.parse("", json, "");
        InventoryChecks.node(in, "", in.root());
        return convert(in, "", "node", () -> in.bind("", Dto.NodeDto.class).toModel("node"));
    }

    public static String writeNode(Node node) {
        return write(Dto.NodeDto.of(node));
    }

    // ------------------------------------------------------------ claims

    /** Reads a JSON array of claims. */
    public static List<Claim> readClaims(String json) {
        return readClaims(JsonInput.parse("", json, "claims"));
    }

    /** Reads a file holding a JSON array of claims; errors name the file and {@code claims[i].key}. */
    public static List<Claim> readClaims(Path file) {
        return readClaims(JsonInput.read(file, "claims"));
    }

    /** Reads the claims of an input whose top-level value is an array of claims. */
    public static List<Claim> readClaims(JsonInput in) {
        List<Dto.ClaimDto> dtos = in.bind("", new TypeReference<List<Dto.ClaimDto>>() { });
        List<Claim> out = new ArrayList<>(dtos.size());
        for (int i = 0; i < dtos.size(); i++) {
            out.add(claim(in, in.rootName() + "[" + i + "]", dtos.get(i)));
        }
        return out;
    }

    public static Claim readClaim(String json) {
        return readClaim(JsonInput.parse("", json, ""), "");
    }

    /** Reads the claim at {@code path} of an input, for formats that embed claims (ledger operations). */
    public static Claim readClaim(JsonInput in, String path) {
        return claim(in, path, in.bind(path, Dto.ClaimDto.class));
    }

    private static Claim claim(JsonInput in, String path, Dto.@Nullable ClaimDto dto) {
        if (dto == null) {
            throw in.error(path, "must be a claim object, not null");
        }
        return convert(in, path, "claim", dto::toModel);
    }

    public static String writeClaims(List<Claim> claims) {
        return write(claims.stream().map(Dto.ClaimDto::of).toList());
    }

    // ------------------------------------------------------------ placements

    public static Placement readPlacement(String json) {
        JsonInput in = JsonInput.parse("", json, "");
        return convert(in, "", "placement", () -> in.bind("", Dto.PlacementDto.class).toModel());
    }

    /** Reads a JSON array of placements. */
    public static List<Placement> readPlacements(String json) {
        JsonInput in = JsonInput.parse("", json, "placements");
        return placements(in, in.rootName(), in.bind("", new TypeReference<List<Dto.PlacementDto>>() { }));
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
        return readSnapshot(JsonInput.parse("", json, ""));
    }

    /** Reads a snapshot file; errors name the file, the JSON path and the line. */
    public static LedgerSnapshot readSnapshot(Path file) {
        return readSnapshot(JsonInput.read(file, ""));
    }

    public static LedgerSnapshot readSnapshot(JsonInput in) {
        InventoryChecks.nodes(in);
        Dto.SnapshotDto dto = in.bind("", Dto.SnapshotDto.class);
        if (dto.schemaVersion() == null) {
            throw in.error("schemaVersion", "is required");
        }
        if (dto.schemaVersion() != SCHEMA_VERSION) {
            throw in.error("schemaVersion", "must be " + SCHEMA_VERSION + " (this version of qgpu reads no other)");
        }
        Dto.RulesDto rulesDto = dto.rules();
        if (rulesDto == null) {
            throw in.error("rules", "is required");
        }
        GranularityRules rules = convert(in, "rules", "rules", rulesDto::toModel);
        List<Node> nodes = nodes(in, dto.nodes());
        return new LedgerSnapshot(rules, nodes, placements(in, "placements", Dto.orEmpty(dto.placements())));
    }

    // ------------------------------------------------------------ internals

    private static List<Placement> placements(JsonInput in, String path, List<Dto.PlacementDto> dtos) {
        List<Placement> out = new ArrayList<>();
        for (int i = 0; i < dtos.size(); i++) {
            String at = path + "[" + i + "]";
            Dto.PlacementDto p = dtos.get(i);
            if (p == null) {
                throw in.error(at, "must be a placement object, not null");
            }
            out.add(convert(in, at, "placement", p::toModel));
        }
        return out;
    }

    private static List<Node> nodes(JsonInput in, @Nullable List<Dto.NodeDto> dtos) {
        List<Node> nodes = new ArrayList<>();
        List<Dto.NodeDto> list = Dto.orEmpty(dtos);
        Map<String, Integer> names = new HashMap<>();
        Map<String, String> uuids = new HashMap<>();
        for (int i = 0; i < list.size(); i++) {
            String at = "nodes[" + i + "]";
            Dto.NodeDto d = list.get(i);
            if (d == null) {
                throw in.error(at, "must be a node object, not null");
            }
            Node n = node(in, at, d);
            Integer first = names.putIfAbsent(n.name(), i);
            if (first != null) {
                throw in.error(at + ".name", "duplicate node name: nodes[" + first + "] has it too");
            }
            for (int g = 0; g < n.gpus().size(); g++) {
                String other = uuids.putIfAbsent(n.gpus().get(g).uuid(), at);
                if (other != null) {
                    throw in.error(at + ".gpus[" + g + "].uuid", "duplicate GPU UUID: a GPU of " + other + " has it too");
                }
            }
            nodes.add(n);
        }
        return nodes;
    }

    /** A node; an error about one of its links also names the link by its node and GPU pair. */
    private static Node node(JsonInput in, String at, Dto.NodeDto d) {
        try {
            return d.toModel("node");
        } catch (InvalidValueException e) {
            QgpuJsonException x = in.translate(at, "node", e);
            java.util.regex.Matcher link = java.util.regex.Pattern.compile("^(.*\\.links\\[\\d+])").matcher(x.path());
            com.fasterxml.jackson.databind.JsonNode l = link.find() ? in.at(link.group(1)) : null;
            if (l == null || l.get("a") == null || l.get("b") == null) {
                throw x;
            }
            throw in.error(x.path(), x.rule() + " (the link between GPUs " + l.get("a") + " and " + l.get("b") + " of node "
                    + (d.name() == null ? at : d.name()) + ")", e);
        }
    }

    private static <T> T convert(JsonInput in, String path, String selfName, Supplier<T> conversion) {
        try {
            return conversion.get();
        } catch (InvalidValueException e) {
            throw in.translate(path, selfName, e);
        }
    }

    /** The strict mapper every reader shares. */
    static ObjectMapper strictMapper() {
        return MAPPER;
    }

    private static String write(Object dto) {
        try {
            return MAPPER.writeValueAsString(dto) + "\n";
        } catch (JsonProcessingException e) {
            throw new QgpuJsonException("", "cannot write JSON: " + e.getOriginalMessage(), e);
        }
    }
}
