package io.qgpu.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A required key left out (or written {@code null}) is refused with a {@link QgpuJsonException} naming
 * the JSON path as the user wrote it, never a NullPointerException: every key of the wire records may
 * be absent, and each reader checks the ones it needs.
 */
class RequiredKeysTest {

    private static final String G0 = "{\"uuid\":\"G0\",\"index\":0,\"memoryGiB\":8}";
    private static final String G1 = "{\"uuid\":\"G1\",\"index\":1,\"memoryGiB\":8}";
    private static final String CLAIM = "{\"tenant\":\"a\",\"gpus\":1,\"memoryGiB\":1}";
    private static final String SNAP = "{\"schemaVersion\":1,\"rules\":{\"name\":\"qgpu\"},\"nodes\":[],\"placements\":[";

    static Stream<Arguments> missing() {
        Function<String, Object> claims = QgpuJson::readClaims;
        Function<String, Object> inventory = QgpuJson::readInventory;
        Function<String, Object> snapshot = QgpuJson::readSnapshot;
        Function<String, Object> placement = QgpuJson::readPlacement;
        Function<String, Object> node = QgpuJson::readNode;
        return Stream.of(
                Arguments.of(claims, "[{\"gpus\":1,\"memoryGiB\":1}]", "claims[0].tenant", "claims[0].tenant: is required (line 1, column 2)"),
                Arguments.of(claims, "[{\"tenant\":null,\"gpus\":1,\"memoryGiB\":1}]", "claims[0].tenant",
                        "claims[0].tenant = null: is required (line 1, column 3)"),
                Arguments.of(claims, "[{\"tenant\":\"a\",\"gpus\":1}]", "claims[0].memoryBytes",
                        "claims[0].memoryBytes: is required (memoryBytes or memoryGiB) (line 1, column 2)"),
                Arguments.of(claims, "[null]", "claims[0]", "claims[0] = null: must be a claim object, not null (line 1, column 2)"),
                Arguments.of(inventory, "{\"nodes\":[{\"gpus\":[" + G0 + "]}]}", "nodes[0].name",
                        "nodes[0].name: is required (line 1, column 11)"),
                Arguments.of(inventory, "{\"nodes\":[{\"name\":\"n\",\"gpus\":[{\"index\":0,\"memoryGiB\":8}]}]}", "nodes[0].gpus[0].uuid",
                        "nodes[0].gpus[0].uuid: is required (line 1, column 31)"),
                Arguments.of(inventory, "{\"nodes\":[{\"name\":\"n\",\"gpus\":[{\"uuid\":\"G0\",\"memoryGiB\":8}]}]}", "nodes[0].gpus[0].index",
                        "nodes[0].gpus[0].index: is required (line 1, column 31)"),
                Arguments.of(inventory, "{\"nodes\":[{\"name\":\"n\",\"gpus\":[null]}]}", "nodes[0].gpus[0]",
                        "nodes[0].gpus[0] = null: is required (line 1, column 31)"),
                Arguments.of(inventory, "{\"nodes\":[{\"name\":\"n\",\"gpus\":[" + G0 + "," + G1 + "],\"links\":[{\"a\":0,\"b\":1,\"link\":null}]}]}",
                        "nodes[0].links[0].link",
                        "nodes[0].links[0].link = null: is required (the link between GPUs 0 and 1 of node n) (line 1, column 130)"),
                Arguments.of(inventory, "{\"nodes\":[{\"name\":\"n\",\"gpus\":[" + G0 + "," + G1 + "],\"links\":[{\"b\":1,\"link\":\"NV2\"}]}]}",
                        "nodes[0].links[0].a", "nodes[0].links[0].a: is required (line 1, column 117)"),
                Arguments.of(inventory, "{\"nodes\":[null]}", "nodes[0]", "nodes[0] = null: must be a node object, not null (line 1, column 11)"),
                Arguments.of(inventory, "{\"rules\":{\"name\":\"mine\",\"memoryUnitBytes\":1},\"nodes\":[]}", "rules.minMemoryBytes",
                        "rules.minMemoryBytes: is required (line 1, column 2)"),
                Arguments.of(inventory, "{\"nodes\":[{\"name\":\"n\",\"gpus\":[{\"uuid\":\"G0\",\"index\":0,\"memoryGiB\":8,\"tenants\":[{\"memoryGiB\":1}]}]}]}",
                        "nodes[0].gpus[0].tenants[0].tenant", "nodes[0].gpus[0].tenants[0].tenant: is required (line 1, column 79)"),
                Arguments.of(inventory, "{\"nodes\":[{\"name\":\"n\",\"gpus\":[" + G0 + "],\"hostTenants\":[{\"tenant\":\"h\"}]}]}",
                        "nodes[0].hostTenants[0].host", "nodes[0].hostTenants[0].host: is required (line 1, column 85)"),
                Arguments.of(snapshot, "{\"schemaVersion\":1}", "rules", "rules: is required (line 1, column 1)"),
                Arguments.of(snapshot, "{\"rules\":{\"name\":\"qgpu\"}}", "schemaVersion", "schemaVersion: is required (line 1, column 1)"),
                Arguments.of(snapshot, SNAP + "{\"node\":\"n\"}]}", "placements[0].claim", "placements[0].claim: is required (line 1, column 69)"),
                Arguments.of(snapshot, SNAP + "{\"claim\":" + CLAIM + "}]}", "placements[0].node", "placements[0].node: is required (line 1, column 69)"),
                Arguments.of(snapshot, SNAP + "{\"claim\":" + CLAIM + ",\"node\":\"n\",\"slices\":[{\"gpu\":\"G0\",\"memoryBytes\":1,\"computeLimit\":1}]}]}",
                        "placements[0].slices[0].computeRequest", "placements[0].slices[0].computeRequest: is required (line 1, column 137)"),
                Arguments.of(snapshot, SNAP + "null]}", "placements[0]", "placements[0] = null: must be a placement object, not null (line 1, column 69)"),
                Arguments.of(placement, "{}", "claim", "claim: is required (line 1, column 1)"),
                Arguments.of(node, "{\"name\":\"n\",\"gpus\":[{\"uuid\":\"G\",\"index\":0}]}", "gpus[0].memoryBytes",
                        "gpus[0].memoryBytes: is required (memoryBytes or memoryGiB) (line 1, column 21)"));
    }

    @ParameterizedTest
    @MethodSource("missing")
    void aMissingRequiredKeyIsRefusedAtItsPath(Function<String, Object> read, String json, String path, String message) {
        QgpuJsonException e = assertThrows(QgpuJsonException.class, () -> read.apply(json));
        assertEquals(path, e.path());
        assertEquals(message, e.getMessage());
    }
}
