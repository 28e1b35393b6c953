package io.qgpu.core.ledger.internal;

import io.qgpu.api.Placement;
import io.qgpu.api.Reason;
import io.qgpu.core.ledger.ReconcileReport;
import io.qgpu.core.ledger.ReconcileReport.Difference;
import io.qgpu.core.ledger.ReconcileReport.Kind;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * Reconcile: a new structure with the same nodes, health and rules, whose reservations are rebuilt
 * from an authoritative list, and the report of every difference from the current one.
 *
 * <p>Thread safety: stateless; reads every slot of the current structure, so it must run while no
 * change can (under the ledger's write lock).
 */
public final class Reconciler {

    private Reconciler() {
    }

    /** The reconciled structure (not yet published) and its report. */
    public record Outcome(Structure next, ReconcileReport report) {
    }

    /**
     * Replays {@code authoritative} onto the current nodes. What the ledger already holds unchanged
     * is replayed first, so that a newcomer that does not fit is the one refused, never a
     * reservation that was already admitted; the rest in tenant-id order.
     */
    public static Outcome reconcile(Structure current, Collection<Placement> authoritative) {
        Map<String, Placement> before = current.tenants().committed();
        List<Placement> ordered = SnapshotReplay.byTenant(authoritative);
        ordered.sort((x, y) -> Boolean.compare(!x.equals(before.get(x.tenantId())), !y.equals(before.get(y.tenantId()))));
        SnapshotReplay.Result built = SnapshotReplay.build(current.rules(), current.nodes(), ordered);
        Map<String, List<Reason>> refused = built.tenantRefusals();
        Map<String, Placement> after = built.structure().tenants().committed();
        Set<String> all = new TreeSet<>(before.keySet());
        all.addAll(after.keySet());
        all.addAll(refused.keySet());
        List<Difference> diffs = new ArrayList<>();
        for (String t : all) {
            difference(t, before.get(t), after.get(t), refused.getOrDefault(t, List.of()), diffs);
        }
        return new Outcome(built.structure(), new ReconcileReport(diffs));
    }

    private static void difference(String t, Placement was, Placement now, List<Reason> why, List<Difference> out) {
        if (!why.isEmpty()) {
            // refused; a tenant listed twice may also have been admitted once (then reported below too)
            out.add(new Difference(Kind.REFUSED, t, Optional.ofNullable(was), Optional.ofNullable(now), why));
        }
        if (was == null && now != null) {
            out.add(new Difference(Kind.ADDED, t, Optional.empty(), Optional.of(now), List.of()));
        } else if (was != null && now == null && why.isEmpty()) {
            out.add(new Difference(Kind.REMOVED, t, Optional.of(was), Optional.empty(), List.of()));
        } else if (was != null && now != null && !was.equals(now)) {
            out.add(new Difference(Kind.CHANGED, t, Optional.of(was), Optional.of(now), List.of()));
        }
    }
}
