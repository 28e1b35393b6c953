package io.qgpu.core.ledger.internal;

import io.qgpu.api.NodeState;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;

/**
 * One node's current state, an immutable {@link NodeState} replaced by compare-and-set, and its
 * position in its structure (a new structure makes new slots).
 *
 * <p>Thread safety: thread-safe.
 */
public final class NodeSlot {
    private final String name;
    private final int position;
    private final AtomicReference<NodeState> state;

    NodeSlot(String name, NodeState initial, int position) {
        this.name = name;
        this.position = position;
        this.state = new AtomicReference<>(initial);
    }

    public String name() {
        return name;
    }

    public int position() {
        return position;
    }

    public NodeState get() {
        return state.get();
    }

    boolean compareAndSet(NodeState expected, NodeState next) {
        return state.compareAndSet(expected, next);
    }

    NodeState update(UnaryOperator<NodeState> change) {
        return state.updateAndGet(change);
    }

    /** Only while the slot is not published yet (snapshot replay). */
    void set(NodeState next) {
        state.set(next);
    }
}
