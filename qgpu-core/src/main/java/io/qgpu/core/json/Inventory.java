package io.qgpu.core.json;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.Validate;
import java.util.List;

/**
 * What an inventory file holds: the granularity rules and the nodes.
 *
 * @param rules granularity rules (qGPU's when the file names none)
 * @param nodes the nodes
 *
 * <p>Thread safety: immutable.
 */
public record Inventory(GranularityRules rules, List<Node> nodes) {
    public Inventory {
        Validate.notNull("inventory.rules", rules);
        nodes = Validate.list("inventory.nodes", nodes);
    }
}
