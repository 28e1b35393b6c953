package io.qgpu.api;

/**
 * Where the members of a {@link Gang} must be relative to each other.
 *
 * <pre>{@code
 * GangScope.anywhere();                                   // any nodes
 * GangScope.sameNode();                                   // all members on one node
 * GangScope.sameLabel("topology.kubernetes.io/rack");     // nodes with one value of this label
 * GangScope.sameNodeSpread();                             // one node, the members spread over its GPUs
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public sealed interface GangScope {

    /** Any nodes. */
    static GangScope anywhere() {
        return Anywhere.INSTANCE;
    }

    /** Every member on one node. */
    static GangScope sameNode() {
        return SameNode.INSTANCE;
    }

    /**
     * Every member on one node, spread over its GPUs: the replicas of one request (the N time-sliced
     * replicas a pod asks for). Each member goes to the GPUs that hold the fewest members placed before
     * it, so the members take distinct GPUs while the node has GPUs that can take one, and then stack
     * as evenly as the GPUs' room allows (4 single-GPU members on 2 GPUs with room for 2 each: 2 + 2).
     * Among the GPUs of equal count the engine's own rules choose. {@link Gang#replicas} builds such a
     * gang from one claim.
     */
    static GangScope sameNodeSpread() {
        return SameNodeSpread.INSTANCE;
    }

    /** Every member on nodes that carry {@code labelKey} with one value; nodes without it are not used. */
    static GangScope sameLabel(String labelKey) {
        return new SameLabel(labelKey);
    }

    /** Any nodes. */
    enum Anywhere implements GangScope { INSTANCE }

    /** Every member on one node. */
    enum SameNode implements GangScope { INSTANCE }

    /** Every member on one node, spread over its GPUs ({@link #sameNodeSpread()}). */
    enum SameNodeSpread implements GangScope { INSTANCE }

    /**
     * Every member on nodes with the same value of a node label (one rack, one NVLink domain).
     *
     * @param labelKey the node label's key
     */
    record SameLabel(String labelKey) implements GangScope {
        public SameLabel {
            Validate.notBlank("gang.scope.labelKey", labelKey);
        }
    }
}
