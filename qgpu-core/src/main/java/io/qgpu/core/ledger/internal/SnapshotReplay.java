package io.qgpu.core.ledger.internal;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Health;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Validate;
import io.qgpu.core.ledger.LedgerStateException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Snapshot replay: builds a fresh structure from nodes and placements. The placements are replayed,
 * in the order given, onto the nodes with every GPU healthy, through the same {@link Admission}
 * rules as a live reservation; then the nodes' real health is applied, so that tenants displaced by
 * a failure survive a restore. What cannot be replayed is collected by key: a tenant id, or
 * {@code node:<name>} / {@code gpu:<uuid>} for a duplicate node or GPU.
 *
 * <p>Thread safety: stateless; the structure it builds is not published until it returns.
 */
public final class SnapshotReplay {

    private SnapshotReplay() {
    }

    /** A built structure and what was refused, by key. */
    public record Result(Structure structure, Map<String, List<Reason>> refused) {

        /**
         * The structure, or a {@link LedgerStateException} with every refusal.
         *
         * @throws LedgerStateException if anything was refused
         */
        public Structure orThrow(String message) {
            if (!refused.isEmpty()) {
                List<Reason> all = new ArrayList<>();
                refused.values().forEach(all::addAll);
                throw new LedgerStateException(message, all);
            }
            return structure;
        }

        /** The refusals of tenants only, without those of duplicate nodes and GPUs. */
        public Map<String, List<Reason>> tenantRefusals() {
            Map<String, List<Reason>> out = new LinkedHashMap<>();
            refused.forEach((k, v) -> {
                if (!k.startsWith("node:") && !k.startsWith("gpu:")) {
                    out.put(k, v);
                }
            });
            return out;
        }
    }

    /** Builds a structure; nothing is thrown for a refusal, see {@link Result}. */
    public static Result build(GranularityRules rules, Collection<Node> nodes, Collection<Placement> placements) {
        Validate.notNull("rules", rules);
        Validate.list("nodes", nodes);
        Validate.list("placements", placements);
        Map<String, List<Reason>> refused = new LinkedHashMap<>();
        Map<String, NodeState> byName = new LinkedHashMap<>();
        Map<String, String> gpuOwner = new HashMap<>();
        for (Node n : nodes) {
            if (byName.containsKey(n.name())) {
                refuse(refused, "node:" + n.name(), Reason.of(ReasonCode.UNKNOWN_TARGET, n.name(), "duplicate node"));
                continue;
            }
            Node healthy = n;
            for (GpuDevice g : n.gpus()) {
                String other = gpuOwner.putIfAbsent(g.uuid(), n.name());
                if (other != null) {
                    refuse(refused, "gpu:" + g.uuid(),
                            Reason.of(ReasonCode.UNKNOWN_TARGET, g.uuid(), "GPU on both " + other + " and " + n.name()));
                }
                if (!g.healthy()) {
                    healthy = healthy.withGpuHealth(g.uuid(), Health.HEALTHY);
                }
            }
            byName.put(n.name(), NodeState.empty(healthy));
        }
        long expected = Math.max(placements.size(), (long) gpuOwner.size() * TenantTable.EXPECTED_TENANTS_PER_GPU);
        Structure st = new Structure(rules, new ArrayList<>(byName.values()),
                new TenantTable((int) Math.min(Integer.MAX_VALUE, expected)), new ConcurrentHashMap<>());
        for (Placement p : placements) {
            List<Reason> why = replay(st, p);
            if (!why.isEmpty()) {
                refused.computeIfAbsent(p.tenantId(), k -> new ArrayList<>()).addAll(why);
            }
        }
        for (Node n : nodes) {
            NodeSlot slot = st.slot(n.name());
            for (GpuDevice g : n.gpus()) {
                // a duplicate node's GPUs are not on the slot of the first node of that name
                if (!g.healthy() && slot.get().node().positionOf(g.uuid()) >= 0) {
                    slot.set(HealthMarking.withHealth(slot.get(), g.uuid(), g.health()));
                }
            }
        }
        return new Result(st, refused);
    }

    /**
     * The placements in replay order: compute-request-0 tenants first, then by tenant id. Request-0
     * tenants book no guaranteed compute; admitted before the others, they pass the zero-request rule
     * in every state that some order of admissions could reach.
     */
    public static List<Placement> byTenant(Collection<Placement> placements) {
        List<Placement> ordered = new ArrayList<>(placements);
        ordered.sort(Comparator.comparing((Placement p) -> p.claim().computeRequest() != 0).thenComparing(Placement::tenantId));
        return ordered;
    }

    private static List<Reason> replay(Structure st, Placement p) {
        NodeSlot slot = st.slot(p.nodeName());
        if (slot == null) {
            return List.of(Reason.of(ReasonCode.UNKNOWN_TARGET, p.nodeName(), "no such node"));
        }
        if (st.tenants().contains(p.tenantId())) {
            return List.of(Reason.of(ReasonCode.DUPLICATE_TENANT, p.tenantId(), "listed twice"));
        }
        Optional<String> label = p.claim().locality().affinity();
        AffinityGroup g = label.map(st.affinity()::get).orElse(null);
        if (g != null && !g.matches(p)) {
            return List.of(Reason.of(ReasonCode.AFFINITY, p.nodeName(), "label " + label.get() + " is bound to "
                    + g.node() + " " + g.gpus()));
        }
        Admission.Result r = Admission.reserve(slot.get(), p, st.rules());
        if (r instanceof Admission.Rejected rej) {
            return rej.reasons();
        }
        slot.set(((Admission.Admitted) r).next());
        st.tenants().putCommitted(p);
        label.ifPresent(l -> st.affinity().put(l, g == null ? AffinityGroup.of(p) : g.plus(1)));
        return List.of();
    }

    private static void refuse(Map<String, List<Reason>> refused, String key, Reason reason) {
        refused.computeIfAbsent(key, k -> new ArrayList<>()).add(reason);
    }
}
