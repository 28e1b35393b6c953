package io.qgpu.core.ledger;

import io.qgpu.api.Placement;
import io.qgpu.api.Reason;
import io.qgpu.api.Validate;
import java.util.List;
import java.util.Optional;

/**
 * Every difference {@link Ledger#reconcile} found between the ledger and the authoritative list of
 * bound allocations, and what it did about it.
 *
 * @param differences one entry per tenant that differed, in tenant-id order
 *
 * <p>Thread safety: immutable.
 */
public record ReconcileReport(List<Difference> differences) {

    public ReconcileReport {
        differences = Validate.list("reconcile.differences", differences);
    }

    public boolean inSync() {
        return differences.isEmpty();
    }

    public List<Difference> of(Kind kind) {
        return differences.stream().filter(d -> d.kind() == kind).toList();
    }

    /** What kind of difference. */
    public enum Kind {
        /** Bound but missing from the ledger: now reserved. */
        ADDED,
        /** In the ledger but not bound: released. */
        REMOVED,
        /** Bound elsewhere or with another size than the ledger had: replaced by the bound one. */
        CHANGED,
        /** Bound, but the ledger cannot hold it (unknown GPU, oversubscription, duplicate): left out. */
        REFUSED
    }

    /**
     * One tenant whose reservation the ledger and the bound placements disagreed on.
     *
     * @param kind    what differed
     * @param tenant  the tenant
     * @param before  what the ledger held
     * @param after   what it holds now
     * @param reasons for {@link Kind#REFUSED}, why
     */
    public record Difference(Kind kind, String tenant, Optional<Placement> before, Optional<Placement> after,
                             List<Reason> reasons) {
        public Difference {
            Validate.notNull("difference.kind", kind);
            Validate.notBlank("difference.tenant", tenant);
            Validate.notNull("difference.before", before);
            Validate.notNull("difference.after", after);
            reasons = Validate.list("difference.reasons", reasons);
        }
    }
}
