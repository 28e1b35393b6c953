package io.qgpu.testkit.property;

import io.qgpu.api.Validate;
import io.qgpu.json.Inventory;
import java.util.List;

/**
 * A cluster and the operations to run against a fresh scheduler over it.
 *
 * <pre>{@code
 * PropertyScenario s = QgpuGens.scenarios(InventoryOptions.defaults(), ClaimOptions.defaults(), 30)
 *         .generate(new SplittableRandom(7));
 * s.inventory().nodes();
 * s.ops();
 * }</pre>
 *
 * @param inventory rules and nodes
 * @param ops       operations, in order
 *
 * <p>Thread safety: immutable.
 */
public record PropertyScenario(Inventory inventory, List<Op> ops) {
    public PropertyScenario {
        Validate.notNull("scenario.inventory", inventory);
        ops = Validate.list("scenario.ops", ops);
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("PropertyScenario ").append(Describe.inventory(inventory)).append("\n  ops:");
        for (int i = 0; i < ops.size(); i++) {
            sb.append("\n    ").append(i).append(": ").append(ops.get(i));
        }
        return sb.toString();
    }
}
