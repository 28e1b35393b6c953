package io.qgpu.cli;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.Health;
import io.qgpu.api.Placement;
import io.qgpu.api.Slice;
import io.qgpu.json.JsonInput;
import io.qgpu.json.QgpuJson;
import io.qgpu.core.ledger.Ledger;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The ledger operations file of {@code qgpu ledger}: a JSON array of
 * {@code {"op": "reserve", "node": N, "gpus": [UUID...], "claim": {...}}},
 * {@code {"op": "release", "tenant": T}} and {@code {"op": "health", "gpu": UUID, "health": "healthy"|"unhealthy"}}.
 * Strict: a key that the operation does not take is refused, with the file, the path and the line.
 */
final class LedgerOperations {

    /** One operation as written; which keys it may have depends on {@code op}. */
    record OperationDto(String op, String node, List<String> gpus, JsonNode claim, String tenant, String gpu, String health) {
    }

    /** An operation read and checked. */
    sealed interface Operation permits Reserve, Release, SetHealth {
        /** Where it is written: {@code operations[3], line 12}. */
        String where();
    }

    record Reserve(String where, String node, List<String> gpus, Claim claim) implements Operation {
        /** What makes this reservation impossible to write down, in the file's terms; null when nothing does. */
        String problem() {
            Set<String> seen = new java.util.HashSet<>();
            for (String g : gpus) {
                if (!seen.add(g)) {
                    return "gpus lists " + g + " twice";
                }
            }
            if (!claim.hostOnly() && gpus.size() != claim.gpuCount()) {
                return "gpus lists " + gpus.size() + " GPU(s); the claim asks for " + claim.gpuCount() + " (its gpus)";
            }
            return null;
        }

        /** The placement this reservation asks for; an exclusive slice holds the GPU's whole memory. */
        Placement placement(Ledger ledger) {
            List<Slice> slices = new ArrayList<>();
            for (String uuid : gpus) {
                long memory = claim.memoryPerGpuBytes();
                if (claim.exclusive()) {
                    memory = ledger.node(node).flatMap(n -> n.node().gpu(uuid)).map(GpuDevice::memoryBytes).orElse(1L);
                }
                slices.add(new Slice(uuid, memory, claim.computeRequest(), claim.computeLimit()));
            }
            return new Placement(claim, node, slices);
        }
    }

    record Release(String where, String tenant) implements Operation {
    }

    record SetHealth(String where, String gpu, Health health) implements Operation {
    }

    /** The keys each operation takes besides {@code op}. */
    private static final Map<String, Set<String>> KEYS = Map.of(
            "reserve", Set.of("node", "gpus", "claim"),
            "release", Set.of("tenant"),
            "health", Set.of("gpu", "health"));

    private LedgerOperations() {
    }

    static List<Operation> read(Path file) {
        JsonInput in = JsonInput.read(file, "operations");
        if (in.root().isArray()) {
            for (int i = 0; i < in.root().size(); i++) {
                checkKeys(in, "operations[" + i + "]");
            }
        }
        List<OperationDto> dtos = in.bind("", new TypeReference<List<OperationDto>>() { });
        List<Operation> out = new ArrayList<>();
        for (int i = 0; i < dtos.size(); i++) {
            out.add(operation(in, "operations[" + i + "]", dtos.get(i)));
        }
        return out;
    }

    private static Operation operation(JsonInput in, String at, OperationDto d) {
        if (d == null) {
            throw in.error(at, "must be an operation object, not null");
        }
        int line = in.error(at, "").line();
        String where = in.source() + " " + at + (line > 0 ? ", line " + line : "");
        return switch (d.op()) {
            case "reserve" -> {
                String node = required(in, at, "node", d.node());
                List<String> gpus = required(in, at, "gpus", d.gpus());
                required(in, at, "claim", d.claim());
                Claim claim = QgpuJson.readClaim(in, at + ".claim");
                if (gpus.isEmpty() && !claim.hostOnly()) {
                    throw in.error(at + ".gpus", "must name at least one GPU UUID (only a host-only claim, gpus 0, names none)");
                }
                yield new Reserve(where, node, gpus, claim);
            }
            case "release" -> new Release(where, required(in, at, "tenant", d.tenant()));
            default -> {
                String gpu = required(in, at, "gpu", d.gpu());
                String h = required(in, at, "health", d.health());
                Health health = h.equals("healthy") ? Health.HEALTHY : h.equals("unhealthy") ? Health.UNHEALTHY : null;
                if (health == null) {
                    throw in.error(at + ".health", "must be healthy or unhealthy");
                }
                yield new SetHealth(where, gpu, health);
            }
        };
    }

    /** The operation's kind is known and it has only the keys that kind takes. */
    private static void checkKeys(JsonInput in, String at) {
        JsonNode node = in.at(at);
        if (node == null || !node.isObject()) {
            return; // binding says what is wrong
        }
        JsonNode op = node.get("op");
        if (op == null) {
            throw in.error(at + ".op", "is required: reserve, release or health");
        }
        Set<String> allowed = KEYS.get(op.asText());
        if (!op.isTextual() || allowed == null) {
            throw in.error(at + ".op", "must be reserve, release or health");
        }
        for (var it = node.fieldNames(); it.hasNext(); ) {
            String key = it.next();
            if (!key.equals("op") && !allowed.contains(key)) {
                throw in.error(at + "." + key, "a " + op.asText() + " operation does not take this key; it takes op, "
                        + String.join(", ", new TreeSet<>(allowed)));
            }
        }
    }

    private static <T> T required(JsonInput in, String at, String key, T value) {
        if (value == null) {
            throw in.error(at + "." + key, "is required");
        }
        return value;
    }
}
