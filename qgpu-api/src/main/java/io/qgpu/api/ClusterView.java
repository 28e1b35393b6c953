package io.qgpu.api;

import java.util.Collection;
import java.util.Optional;

/**
 * A read-only view of what is reserved where. The ledger implements it; filters and scorers read it.
 * Each {@link NodeState} returned is an immutable snapshot of one node.
 */
public interface ClusterView {

    /** The granularity rules the ledger enforces. */
    GranularityRules rules();

    /** Every node, in a stable order. */
    Collection<NodeState> nodes();

    Optional<NodeState> node(String name);

    /** Where a tenant is, if it holds a reservation. */
    Optional<Placement> placement(String tenantId);
}
