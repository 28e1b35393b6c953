package io.qgpu.core.ledger.internal;

import io.qgpu.api.Placement;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.core.ledger.ReserveResult;
import java.util.List;
import java.util.Optional;

/**
 * Reserve and release on one structure: the tenant table's protocol ({@link TenantTable}) around
 * the node's compare-and-set, with affinity groups kept in step. A reservation takes effect at the
 * compare-and-set that installs it on the node (after Admission re-validated it against that very
 * node state), a release at the one that takes it off.
 *
 * <p>Thread safety: stateless; safe under the ledger's read lock from any number of threads.
 */
public final class Reservations {

    private Reservations() {
    }

    /** Reserves every slice of the placement on its node, or nothing. */
    public static ReserveResult reserve(Structure s, Placement placement) {
        NodeSlot slot = s.slot(placement.nodeName());
        if (slot == null) {
            return refused(placement.tenantId(), Reason.of(ReasonCode.UNKNOWN_TARGET, placement.nodeName(), "no such node"));
        }
        return s.tenants().reserve(placement, p -> install(s, slot, p));
    }

    /** Releases the tenant; empty if it held nothing (or another release of it won). */
    public static Optional<Placement> release(Structure s, String tenantId) {
        return s.tenants().release(tenantId, p -> remove(s, p));
    }

    private static ReserveResult install(Structure s, NodeSlot slot, Placement p) {
        Optional<String> label = p.claim().locality().affinity();
        if (label.isEmpty()) {
            return commit(s, slot, p);
        }
        ReserveResult[] out = new ReserveResult[1];
        s.affinity().compute(label.get(), (k, group) -> {
            if (group != null && !group.matches(p)) {
                out[0] = refused(p.tenantId(), Reason.of(ReasonCode.AFFINITY, p.nodeName(),
                        "label " + k + " is bound to " + group.node() + " " + group.gpus()));
                return group;
            }
            // computed before the compare-and-set, so that nothing can fail after it
            AffinityGroup joined = group == null ? AffinityGroup.of(p) : group.plus(1);
            out[0] = commit(s, slot, p);
            return out[0].reserved() ? joined : group;
        });
        return out[0];
    }

    /** Admission against the current node state, then compare-and-set; retried on a lost race. */
    private static ReserveResult commit(Structure s, NodeSlot slot, Placement p) {
        while (true) {
            var current = slot.get();
            Admission.Result r = Admission.reserve(current, p, s.rules());
            if (r instanceof Admission.Rejected rejected) {
                return new ReserveResult.Refused(p.tenantId(), rejected.reasons());
            }
            if (slot.compareAndSet(current, ((Admission.Admitted) r).next())) {
                s.ring().changed(slot.position());
                return new ReserveResult.Reserved(p);
            }
        }
    }

    private static void remove(Structure s, Placement p) {
        NodeSlot slot = s.slot(p.nodeName());
        if (slot == null) {
            return;
        }
        Optional<String> label = p.claim().locality().affinity();
        if (label.isPresent()) {
            s.affinity().computeIfPresent(label.get(), (k, g) -> {
                takeOff(s, slot, p.tenantId());
                return g.minusOne();
            });
        } else {
            takeOff(s, slot, p.tenantId());
        }
    }

    private static void takeOff(Structure s, NodeSlot slot, String tenantId) {
        slot.update(n -> Admission.release(n, tenantId));
        s.ring().changed(slot.position());
    }

    private static ReserveResult refused(String tenantId, Reason reason) {
        return new ReserveResult.Refused(tenantId, List.of(reason));
    }
}
