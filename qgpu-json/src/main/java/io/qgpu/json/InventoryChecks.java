package io.qgpu.json;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * What the readers of inventories, nodes and ledger snapshots refuse before binding: values the wire
 * records would take but that are almost certainly mistakes. Each refusal is a {@link QgpuJsonException}
 * naming the source, the JSON path as written, the value, and the line and column.
 * <ul>
 *   <li>{@code "gpus": null} on a node: leave the key out or write {@code []} for a node without GPUs;</li>
 *   <li>a label value that is not a string ({@code "pool": 7}): Kubernetes label values are strings, so
 *       a number would be matched as text that the user never wrote;</li>
 *   <li>a GPU of more than {@link QgpuJson#MAX_GPU_MEMORY_BYTES} (1 PiB; the largest GPUs hold a few hundred
 *       GB): a typo, and with 1024 such GPUs a node's sums would no longer fit a long.</li>
 * </ul>
 * They run on the tree, before binding, so that the value and the key are the ones the user wrote
 * ({@code memoryGiB} or {@code memoryBytes}) and a {@code null} is told from a key left out.
 *
 * <p>Thread safety: stateless; safe from any thread.
 */
final class InventoryChecks {

    private InventoryChecks() {
    }

    /** Checks the nodes of an inventory or snapshot: the top-level object's {@code nodes} array. */
    static void nodes(JsonInput in) {
        JsonNode nodes = in.root().get("nodes");
        if (nodes == null || !nodes.isArray()) {
            return; // the reader says what is missing
        }
        for (int i = 0; i < nodes.size(); i++) {
            node(in, "nodes[" + i + "]", nodes.get(i));
        }
    }

    /**
     * Checks one node object.
     *
     * @param at where it is in the input: {@code nodes[2]}, or empty for a node that is the whole input
     */
    static void node(JsonInput in, String at, JsonNode node) {
        if (!node.isObject()) {
            return; // the reader says what a node is
        }
        JsonNode gpus = node.get("gpus");
        if (gpus != null && gpus.isNull()) {
            throw in.error(JsonInput.key(at, "gpus"),
                    "must be an array of GPUs; for a node without GPUs leave \"gpus\" out or write []");
        }
        JsonNode labels = node.get("labels");
        if (labels != null && labels.isObject()) {
            for (Map.Entry<String, JsonNode> e : labels.properties()) {
                if (!e.getValue().isTextual()) {
                    throw in.error(JsonInput.key(JsonInput.key(at, "labels"), e.getKey()),
                            "must be a string (Kubernetes label values are strings; write it in double quotes)");
                }
            }
        }
        if (gpus != null && gpus.isArray()) {
            for (int j = 0; j < gpus.size(); j++) {
                JsonNode g = gpus.get(j);
                String gat = JsonInput.key(at, "gpus") + "[" + j + "]";
                memory(in, gat + ".memoryGiB", g.get("memoryGiB"), 1L << 30);
                memory(in, gat + ".memoryBytes", g.get("memoryBytes"), 1);
            }
        }
    }

    private static void memory(JsonInput in, String at, @Nullable JsonNode value, long unit) {
        if (value == null || !value.isIntegralNumber() || !value.canConvertToLong()) {
            return; // the reader refuses what is not a whole number in range
        }
        long max = QgpuJson.MAX_GPU_MEMORY_BYTES / unit;
        if (value.asLong() > max) {
            throw in.error(at, "is more memory than any GPU has: at most " + max + (unit == 1 ? " bytes" : " GiB") + " (1 PiB)");
        }
    }
}
