package io.qgpu.api;

import java.util.ArrayList;
import java.util.List;

/**
 * A node and the state of each of its GPUs, in the order of {@link Node#gpus()}.
 *
 * @param node the node
 * @param gpus one state per GPU, same order as {@code node.gpus()}
 *
 * <p>Thread safety: immutable.
 */
public record NodeState(Node node, List<GpuState> gpus) {

    public NodeState {
        Validate.notNull("nodeState.node", node);
        gpus = Validate.list("nodeState[" + node.name() + "].gpus", gpus);
        if (gpus.size() != node.gpus().size()) {
            throw new InvalidValueException("nodeState[" + node.name() + "].gpus.size", gpus.size(),
                    "must equal the node's GPU count " + node.gpus().size());
        }
        for (int i = 0; i < gpus.size(); i++) {
            if (!gpus.get(i).device().equals(node.gpus().get(i))) {
                throw new InvalidValueException("nodeState[" + node.name() + "].gpus[" + i + "]", gpus.get(i).uuid(),
                        "must be the node's GPU at that position");
            }
        }
    }

    public static NodeState empty(Node node) {
        List<GpuState> states = new ArrayList<>(node.gpus().size());
        for (GpuDevice g : node.gpus()) {
            states.add(GpuState.empty(g));
        }
        return new NodeState(node, states);
    }

    public String name() {
        return node.name();
    }

    /** The state of the GPU at {@code position}. */
    public GpuState gpu(int position) {
        return gpus.get(position);
    }

    public int tenants() {
        int n = 0;
        for (GpuState g : gpus) {
            n += g.tenants();
        }
        return n;
    }
}
