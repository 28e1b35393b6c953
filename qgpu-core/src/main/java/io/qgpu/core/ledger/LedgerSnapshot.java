package io.qgpu.core.ledger;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.Validate;
import java.util.List;

/**
 * Everything a ledger holds, as one immutable value: its rules, its nodes (with GPU health) and
 * every reservation. {@link Ledger#restore(LedgerSnapshot)} of a snapshot gives an identical ledger;
 * QgpuJson in qgpu-json (package io.qgpu.json) writes and reads it with a schema version.
 *
 * @param rules      granularity rules
 * @param nodes      nodes in ledger order
 * @param placements reservations in tenant-id order
 *
 * <p>Thread safety: immutable.
 */
public record LedgerSnapshot(GranularityRules rules, List<Node> nodes, List<Placement> placements) {
    public LedgerSnapshot {
        Validate.notNull("snapshot.rules", rules);
        nodes = Validate.list("snapshot.nodes", nodes);
        placements = Validate.list("snapshot.placements", placements);
    }
}
