package io.qgpu.json;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.Validate;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.LedgerStateException;
import io.qgpu.core.ledger.LedgerSnapshot;
import java.util.List;

/**
 * What an inventory file holds: the granularity rules, the nodes, and the tenants already on the
 * GPUs (so a tool can start from a partly filled cluster).
 *
 * <pre>{@code
 * Inventory inv = QgpuJson.readInventory(json);
 * Ledger ledger = inv.ledger();   // the nodes with every holding reserved, or LedgerStateException
 * }</pre>
 *
 * @param rules    granularity rules (qGPU's when the file names none)
 * @param nodes    the nodes
 * @param holdings the tenants already placed, one placement per tenant (the file lists them per GPU
 *                 under {@code tenants}; a tenant listed on several GPUs of one node is one placement
 *                 with a slice on each)
 *
 * <p>Thread safety: immutable.
 */
public record Inventory(GranularityRules rules, List<Node> nodes, List<Placement> holdings) {
    public Inventory {
        Validate.notNull("inventory.rules", rules);
        nodes = Validate.list("inventory.nodes", nodes);
        holdings = Validate.list("inventory.holdings", holdings);
    }

    /** An inventory of empty GPUs. */
    public Inventory(GranularityRules rules, List<Node> nodes) {
        this(rules, nodes, List.of());
    }

    /**
     * A ledger over the nodes with every holding reserved; refuses holdings that do not fit (more
     * memory, guaranteed compute or tenants than a GPU has, unknown GPU) with
     * {@link LedgerStateException} naming each tenant and why.
     */
    public Ledger ledger() {
        return Ledger.of(new LedgerSnapshot(rules, nodes, holdings));
    }
}
