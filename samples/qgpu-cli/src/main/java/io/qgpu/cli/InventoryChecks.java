package io.qgpu.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.qgpu.json.JsonInput;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Map;

/**
 * What the CLI refuses in an inventory or a ledger snapshot before the shared reader
 * ({@code QgpuJson}) sees it: values that reader takes but that are almost certainly mistakes.
 * Each refusal is the reader's own kind of error, naming the file, the JSON path as written, the
 * value, and the line and column.
 * <ul>
 *   <li>{@code "gpus": null} on a node: leave the key out or write {@code []} for a node without GPUs;</li>
 *   <li>a label value that is not a string ({@code "pool": 7}): Kubernetes label values are strings, so
 *       a number would be matched as text that the user never wrote;</li>
 *   <li>a GPU of more than {@link #MAX_GPU_MEMORY_BYTES} (1 PiB; the largest GPUs hold a few hundred GB): a
 *       typo, and with 1024 such GPUs a node's sums would no longer fit a long.</li>
 * </ul>
 *
 * <p>Thread safety: stateless.
 */
final class InventoryChecks {

    /** The most memory one GPU may list: 1 PiB. */
    static final long MAX_GPU_MEMORY_BYTES = 1L << 50;

    private InventoryChecks() {
    }

    /**
     * Checks the nodes of an inventory or snapshot file.
     *
     * @throws io.qgpu.json.QgpuJsonException naming the file, the path, the value and the rule
     */
    static void check(Path file) {
        JsonInput in = JsonInput.read(file, "");
        JsonNode nodes = in.root().get("nodes");
        if (nodes == null || !nodes.isArray()) {
            return; // the reader says what is missing
        }
        for (int i = 0; i < nodes.size(); i++) {
            String at = "nodes[" + i + "]";
            JsonNode node = nodes.get(i);
            if (!node.isObject()) {
                continue;
            }
            JsonNode gpus = node.get("gpus");
            if (gpus != null && gpus.isNull()) {
                throw in.error(at + ".gpus", "must be an array of GPUs; for a node without GPUs leave \"gpus\" out or write []");
            }
            JsonNode labels = node.get("labels");
            if (labels != null && labels.isObject()) {
                for (Iterator<Map.Entry<String, JsonNode>> it = labels.fields(); it.hasNext(); ) {
                    Map.Entry<String, JsonNode> e = it.next();
                    if (!e.getValue().isTextual()) {
                        String key = e.getKey().matches("[A-Za-z0-9_-]+") ? "." + e.getKey() : "[\"" + e.getKey() + "\"]";
                        throw in.error(at + ".labels" + key, "must be a string (Kubernetes label values are strings;"
                                + " write it in double quotes)");
                    }
                }
            }
            if (gpus != null && gpus.isArray()) {
                for (int j = 0; j < gpus.size(); j++) {
                    JsonNode g = gpus.get(j);
                    String gat = at + ".gpus[" + j + "]";
                    memory(in, gat + ".memoryGiB", g.get("memoryGiB"), 1L << 30);
                    memory(in, gat + ".memoryBytes", g.get("memoryBytes"), 1);
                }
            }
        }
    }

    private static void memory(JsonInput in, String at, JsonNode value, long unit) {
        if (value == null || !value.isIntegralNumber() || !value.canConvertToLong()) {
            return; // the reader refuses what is not a whole number in range
        }
        if (value.asLong() > MAX_GPU_MEMORY_BYTES / unit) {
            throw in.error(at, "is more memory than any GPU has: at most " + MAX_GPU_MEMORY_BYTES / unit
                    + (unit == 1 ? " bytes" : " GiB") + " (1 PiB)");
        }
    }
}
