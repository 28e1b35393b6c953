package io.qgpu.api;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/**
 * A node, the state of each of its GPUs, in the order of {@link Node#gpus()}, and the host
 * resources (CPU, host memory) reserved on it.
 *
 * <pre>{@code
 * NodeState s = ledger.node("node-a").orElseThrow();
 * s.cpuMillisFree();        // OptionalLong: capacity minus reservations; empty when CPU is not tracked
 * s.host().cpuMillisUsed(); // what tenants reserved, tracked or not
 * }</pre>
 *
 * @param node the node
 * @param gpus one state per GPU, same order as {@code node.gpus()}
 * @param host the host resources reserved on the node
 *
 * <p>Thread safety: immutable.
 */
public record NodeState(Node node, List<GpuState> gpus, HostState host) {

    public NodeState {
        Validate.notNull("nodeState.node", node);
        if (gpus == null || host == null || anyNull(gpus)) {
            // the names of the fields are built only for the messages (a ledger makes a state per change)
            gpus = Validate.list("nodeState[" + node.name() + "].gpus", gpus);
            Validate.notNull("nodeState[" + node.name() + "].host", host);
        }
        gpus = List.copyOf(gpus);
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

    /** A node state without host reservations. */
    public NodeState(Node node, List<GpuState> gpus) {
        this(node, gpus, HostState.empty());
    }

    public static NodeState empty(Node node) {
        List<GpuState> states = new ArrayList<>(node.gpus().size());
        for (GpuDevice g : node.gpus()) {
            states.add(GpuState.empty(g));
        }
        return new NodeState(node, states);
    }

    /** A copy with these GPU states and the same host reservations. */
    public NodeState withGpus(List<GpuState> next) {
        return new NodeState(node, next, host);
    }

    /** CPU still free, millicores: capacity minus reservations; empty when the node does not track CPU. */
    public OptionalLong cpuMillisFree() {
        OptionalLong cap = node.host().cpuMillis();
        return cap.isPresent() ? OptionalLong.of(cap.getAsLong() - host.cpuMillisUsed()) : OptionalLong.empty();
    }

    /** Host memory still free, bytes; empty when the node does not track host memory. */
    public OptionalLong hostMemoryFree() {
        OptionalLong cap = node.host().memoryBytes();
        return cap.isPresent() ? OptionalLong.of(cap.getAsLong() - host.memoryBytesUsed()) : OptionalLong.empty();
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

    private static boolean anyNull(List<?> values) {
        for (Object v : values) {
            if (v == null) {
                return true;
            }
        }
        return false;
    }
}
