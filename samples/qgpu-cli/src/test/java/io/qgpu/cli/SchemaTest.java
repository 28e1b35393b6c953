package io.qgpu.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.QgpuException;
import io.qgpu.json.QgpuJson;
import io.qgpu.json.QgpuJsonException;
import io.qgpu.testkit.sim.scenario.ScenarioFile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every shipped example validates against its JSON Schema in {@code schemas/} (checked with the
 * networknt JSON Schema validator, draft 2020-12), and schema and reader agree on keys: for every
 * object in every example, an unknown key is refused by both, a removed key the schema requires is
 * refused by the reader, and a key the reader reports as required is required by the schema.
 */
class SchemaTest {

    static final Path ROOT = CliConsistencyTest.ROOT;
    static final Path SCHEMAS = ROOT.resolve("schemas");
    static final ObjectMapper JSON = new ObjectMapper();

    /** One file format: its schema, its reader and the shipped files in it. */
    record Format(String schema, Consumer<Path> reader, List<Path> examples) {
    }

    static List<Path> files(String dir, String glob) {
        try (Stream<Path> s = Files.list(ROOT.resolve(dir))) {
            return s.filter(p -> p.getFileName().toString().matches(glob)).sorted().toList();
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    static String text(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    static Map<String, Format> formats() {
        Map<String, Format> f = new TreeMap<>();
        List<Path> inventories = new ArrayList<>(files("samples/qgpu-cli/examples", "inventory.*\\.json|ledger-inventory\\.json"));
        inventories.add(ROOT.resolve("qgpu-kubernetes/scheduler-extender/examples/inventory.json"));
        f.put("inventory", new Format("inventory.schema.json", QgpuJson::readInventory, inventories));
        f.put("node", new Format("node.schema.json", p -> QgpuJson.readNode(text(p)),
                List.of(ROOT.resolve("qgpu-kubernetes/scheduler-extender/examples/node-gpu-a.json"))));
        f.put("claims", new Format("claims.schema.json", QgpuJson::readClaims, files("samples/qgpu-cli/examples", "claims-.*\\.json")));
        f.put("ledger-operations", new Format("ledger-operations.schema.json", LedgerOperations::read,
                files("samples/qgpu-cli/examples", "ledger-operations\\.json")));
        f.put("snapshot", new Format("snapshot.schema.json", QgpuJson::readSnapshot,
                files("samples/qgpu-cli/examples", "ledger-snapshot\\.json")));
        f.put("scenario", new Format("scenario.schema.json", ScenarioFile::read, files("samples/qgpu-cli/scenarios", ".*\\.json")));
        return f;
    }

    static JsonSchema schema(String name) {
        return JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012)
                .getSchema(SchemaLocation.of(SCHEMAS.resolve(name).toUri().toString()));
    }

    @Test
    void everySchemaIsUsedAndEveryShippedExampleValidates() throws Exception {
        Map<String, Format> formats = formats();
        Set<String> used = new java.util.HashSet<>();
        formats.values().forEach(f -> used.add(f.schema()));
        used.add("placement.schema.json");
        try (Stream<Path> s = Files.list(SCHEMAS)) {
            s.forEach(p -> assertTrue(used.contains(p.getFileName().toString()), "no test for " + p));
        }
        int n = 0;
        for (Format f : formats.values()) {
            JsonSchema schema = schema(f.schema());
            assertFalse(f.examples().isEmpty(), f.schema());
            for (Path example : f.examples()) {
                Set<ValidationMessage> errors = schema.validate(JSON.readTree(example.toFile()));
                assertEquals(Set.of(), errors, example.toString());
                f.reader().accept(example);
                n++;
            }
        }
        assertTrue(n >= 16, "examples checked: " + n);
    }

    @Test
    void whatQgpuWritesValidatesToo(@TempDir Path tmp) throws Exception {
        Path out = tmp.resolve("placements.json");
        LedgerCommandTest.run("place", "--inventory", ROOT.resolve("samples/qgpu-cli/examples/inventory.json").toString(),
                "--claims", ROOT.resolve("samples/qgpu-cli/examples/claims-multi-gpu.json").toString(), "--out", out.toString());
        JsonNode placements = JSON.readTree(out.toFile()).get("placements");
        assertTrue(placements.size() > 0);
        JsonSchema placement = schema("placement.schema.json");
        for (JsonNode p : placements) {
            assertEquals(Set.of(), placement.validate(p), p.toString());
            QgpuJson.readPlacement(p.toString());
        }
        Path snap = tmp.resolve("snap.json");
        LedgerCommandTest.run("ledger", ROOT.resolve("samples/qgpu-cli/examples/ledger-inventory.json").toString(),
                ROOT.resolve("samples/qgpu-cli/examples/ledger-operations.json").toString(), "--snapshot", snap.toString());
        assertEquals(Set.of(), schema("snapshot.schema.json").validate(JSON.readTree(snap.toFile())));
    }

    @Test
    void theRulesBooleansAreValidNextToAPresetAndInCustomRules() throws Exception {
        JsonSchema inventory = schema("inventory.schema.json");
        String custom = "\"name\": \"mine\", \"memoryUnitBytes\": 1048576, \"minMemoryBytes\": 1048576, \"computeUnit\": 1,"
                + " \"maxTenantsPerGpu\": 8, \"memoryPerTenantSlotBytes\": 0";
        for (String rules : List.of("\"name\": \"qgpu\", \"shareMigInstances\": true",
                "\"name\": \"hami\", \"admitZeroRequestOnBookedGpu\": true, \"shareMigInstances\": false",
                custom + ", \"shareMigInstances\": true, \"admitZeroRequestOnBookedGpu\": true")) {
            String doc = "{\"schemaVersion\": 1, \"rules\": {" + rules + "}}";
            assertEquals(Set.of(), inventory.validate(JSON.readTree(doc)), doc);
            QgpuJson.readInventory(doc);
        }
        String notBoolean = "{\"schemaVersion\": 1, \"rules\": {\"name\": \"qgpu\", \"shareMigInstances\": \"yes\"}}";
        assertFalse(inventory.validate(JSON.readTree(notBoolean)).isEmpty(), notBoolean);
    }

    @Test
    void schemaAndReaderAgreeOnUnknownAndRequiredKeys(@TempDir Path tmp) throws Exception {
        int variants = 0;
        for (Map.Entry<String, Format> e : formats().entrySet()) {
            Format f = e.getValue();
            JsonSchema schema = schema(f.schema());
            for (Path example : f.examples().subList(0, Math.min(2, f.examples().size()))) {
                JsonNode doc = JSON.readTree(example.toFile());
                for (String pointer : objects(doc, "")) {
                    // an unknown key: both refuse
                    JsonNode unknown = doc.deepCopy();
                    ((ObjectNode) unknown.at(pointer)).set("unknownKey", JSON.createObjectNode());
                    String where = example.getFileName() + " " + pointer + "/unknownKey";
                    assertFalse(schema.validate(unknown).isEmpty(), "schema accepts " + where);
                    assertTrue(refusal(f, unknown, tmp, example) != null, "reader accepts " + where);
                    variants++;
                    // each key removed in turn
                    for (Iterator<String> it = doc.at(pointer).fieldNames(); it.hasNext(); ) {
                        String key = it.next();
                        JsonNode removed = doc.deepCopy();
                        ((ObjectNode) removed.at(pointer)).remove(key);
                        boolean schemaOk = schema.validate(removed).isEmpty();
                        RuntimeException refused = refusal(f, removed, tmp, example);
                        String what = example.getFileName() + " without " + pointer + "/" + key;
                        if (!schemaOk) {
                            assertTrue(refused != null, "the schema requires it, the reader does not: " + what);
                        }
                        if (refused != null && rule(refused).startsWith("is required")) {
                            assertFalse(schemaOk, "the reader requires it, the schema does not: " + what + ": " + refused.getMessage());
                        }
                        variants++;
                    }
                }
            }
        }
        assertTrue(variants > 300, "variants: " + variants);
    }

    /** The reader's typed refusal of a document, or null when it reads it; any other exception fails the test. */
    private static RuntimeException refusal(Format f, JsonNode doc, Path tmp, Path example) throws IOException {
        Path file = tmp.resolve(example.getFileName());
        Files.writeString(file, JSON.writeValueAsString(doc));
        try {
            f.reader().accept(file);
            return null;
        } catch (QgpuException | UsageException e) {
            return e;
        }
    }

    private static String rule(RuntimeException e) {
        if (e instanceof QgpuJsonException j) {
            return j.rule();
        }
        if (e instanceof InvalidValueException v) {
            return v.rule();
        }
        return e.getMessage();
    }

    /** JSON pointers of every object in the tree. */
    private static List<String> objects(JsonNode n, String pointer) {
        List<String> out = new ArrayList<>();
        if (n.isObject()) {
            out.add(pointer);
            for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> f = it.next();
                out.addAll(objects(f.getValue(), pointer + "/" + f.getKey().replace("~", "~0").replace("/", "~1")));
            }
        } else if (n.isArray()) {
            for (int i = 0; i < n.size(); i++) {
                out.addAll(objects(n.get(i), pointer + "/" + i));
            }
        }
        return out;
    }
}
