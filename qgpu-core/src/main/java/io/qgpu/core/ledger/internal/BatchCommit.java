package io.qgpu.core.ledger.internal;

import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.core.ledger.BatchResult;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Releases some tenants and reserves some placements as one step, or changes nothing. Runs only
 * under the ledger's write lock, so no reservation, release or health change runs meanwhile.
 *
 * <p>Two phases. <b>Validate</b>: every release names a committed tenant; every reservation's id is
 * new and distinct; the next state of every touched node is computed from its current state by the
 * same pure {@link Admission} functions as a single reservation (the releases first, then the
 * reservations in the order given), and the affinity groups are simulated alongside. Any refusal
 * returns {@link BatchResult.Refused} before anything is touched. <b>Apply</b>: the released
 * tenants' entries go to releasing and the new tenants' entries are added as pending (per-tenant
 * reads of them wait from here on), each touched node gets its computed state by compare-and-set,
 * the affinity groups are updated, then the new entries are committed and the released ones removed.
 *
 * <p>Thread safety: stateless; callers hold the ledger's write lock.
 */
public final class BatchCommit {

    private BatchCommit() {
    }

    /** Applies the batch on {@code s}, or refuses it and changes nothing. */
    public static BatchResult commit(Structure s, List<Placement> releases, List<Placement> reserves) {
        Map<String, List<Reason>> refused = new LinkedHashMap<>();
        List<TenantEntry> victims = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        for (Placement r : releases) {
            String id = r.tenantId();
            TenantEntry e = s.tenants().entry(id);
            if (!seen.add(id)) {
                refuse(refused, id, Reason.of(ReasonCode.DUPLICATE_TENANT, id, "named twice in the batch"));
            } else if (e == null || !e.isCommitted()) {
                refuse(refused, id, Reason.of(ReasonCode.UNKNOWN_TARGET, id, "not reserved, nothing to release"));
            } else if (!e.placement().equals(r)) {
                refuse(refused, id, Reason.of(ReasonCode.CONFLICT, id, "reserved now as " + e.placement().nodeName()
                        + " " + e.placement().gpuUuids() + ", not as the batch names it"));
            } else {
                victims.add(e);
            }
        }
        for (Placement p : reserves) {
            String id = p.tenantId();
            if (!seen.add(id)) {
                refuse(refused, id, Reason.of(ReasonCode.DUPLICATE_TENANT, id, "named twice in the batch"));
            } else if (s.tenants().entry(id) != null) {
                refuse(refused, id, Reason.of(ReasonCode.DUPLICATE_TENANT, id, "already reserved"));
            }
        }
        IdentityHashMap<NodeSlot, NodeState[]> states = new IdentityHashMap<>();  // slot -> {current, next}
        Map<String, Optional<AffinityGroup>> groups = new HashMap<>();
        for (TenantEntry v : victims) {
            Placement p = v.placement();
            NodeSlot slot = s.slot(p.nodeName());
            if (slot != null) {
                NodeState[] st = states.computeIfAbsent(slot, k -> new NodeState[] {k.get(), k.get()});
                st[1] = Admission.release(st[1], p.tenantId());
            }
            p.claim().locality().affinity().ifPresent(l ->
                    groups.put(l, group(s, groups, l).map(AffinityGroup::minusOne)));
        }
        for (Placement p : reserves) {
            NodeSlot slot = s.slot(p.nodeName());
            if (slot == null) {
                refuse(refused, p.tenantId(), Reason.of(ReasonCode.UNKNOWN_TARGET, p.nodeName(), "no such node"));
                continue;
            }
            NodeState[] st = states.computeIfAbsent(slot, k -> new NodeState[] {k.get(), k.get()});
            Admission.Result r = Admission.reserve(st[1], p, s.rules());
            if (r instanceof Admission.Rejected rejected) {
                refused.computeIfAbsent(p.tenantId(), k -> new ArrayList<>()).addAll(rejected.reasons());
                continue;
            }
            st[1] = ((Admission.Admitted) r).next();
            Optional<String> label = p.claim().locality().affinity();
            if (label.isPresent()) {
                Optional<AffinityGroup> g = group(s, groups, label.get());
                if (g.isPresent() && !g.get().matches(p)) {
                    refuse(refused, p.tenantId(), Reason.of(ReasonCode.AFFINITY, p.nodeName(),
                            "label " + label.get() + " is bound to " + g.get().node() + " " + g.get().gpus()));
                } else {
                    groups.put(label.get(), Optional.of(g.map(x -> x.plus(1)).orElseGet(() -> AffinityGroup.of(p))));
                }
            }
        }
        if (!refused.isEmpty()) {
            return new BatchResult.Refused(refused);
        }
        return apply(s, victims, reserves, states, groups);
    }

    private static BatchResult apply(Structure s, List<TenantEntry> victims, List<Placement> reserves,
                                     IdentityHashMap<NodeSlot, NodeState[]> states, Map<String, Optional<AffinityGroup>> groups) {
        List<TenantEntry> releasing = new ArrayList<>();
        List<TenantEntry> pending = new ArrayList<>();
        boolean done = false;
        try {
            for (TenantEntry v : victims) {
                if (!v.startRelease()) {
                    throw new IllegalStateException("tenant " + v.placement().tenantId() + " released during a batch");
                }
                releasing.add(v);
            }
            for (Placement p : reserves) {
                TenantEntry e = s.tenants().putPending(p);
                if (e == null) {
                    throw new IllegalStateException("tenant " + p.tenantId() + " reserved during a batch");
                }
                pending.add(e);
            }
            // nothing else changes a node while the write lock is held, so every compare-and-set succeeds
            for (Map.Entry<NodeSlot, NodeState[]> e : states.entrySet()) {
                if (!e.getKey().compareAndSet(e.getValue()[0], e.getValue()[1])) {
                    throw new IllegalStateException("node " + e.getKey().name() + " changed during a batch");
                }
                s.ring().changed(e.getKey().position());
            }
            groups.forEach((label, g) -> {
                if (g.isPresent()) {
                    s.affinity().put(label, g.get());
                } else {
                    s.affinity().remove(label);
                }
            });
            done = true;
        } finally {
            for (TenantEntry e : pending) {
                s.tenants().settle(e, done);
            }
            for (TenantEntry v : releasing) {
                if (done) {
                    s.tenants().finishRelease(v);
                } else {
                    v.resolve(true);
                }
            }
        }
        return new BatchResult.Committed(victims.stream().map(TenantEntry::placement).toList(), reserves);
    }

    private static Optional<AffinityGroup> group(Structure s, Map<String, Optional<AffinityGroup>> groups, String label) {
        Optional<AffinityGroup> g = groups.get(label);
        return g != null ? g : Optional.ofNullable(s.affinity().get(label));
    }

    private static void refuse(Map<String, List<Reason>> refused, String id, Reason r) {
        refused.computeIfAbsent(id, k -> new ArrayList<>()).add(r);
    }
}
