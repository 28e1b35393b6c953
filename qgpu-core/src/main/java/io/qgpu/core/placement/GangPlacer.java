package io.qgpu.core.placement;

import io.qgpu.api.Claim;
import io.qgpu.api.Gang;
import io.qgpu.api.GangResult;
import io.qgpu.api.GangScope;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Validate;
import io.qgpu.core.ledger.BatchResult;
import io.qgpu.core.ledger.Ledger;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * Places a {@link Gang} all or nothing with a {@link PlacementEngine}'s rules and commits it to the
 * engine's ledger with one {@link Ledger#commit} (see {@link GangResult}).
 *
 * <pre>{@code
 * GangPlacer placer = new GangPlacer(engine);
 * Gang job = Gang.builder("train-7")
 *         .member(Claim.builder("train-7-0").gpus(2).exclusive().build())
 *         .member(Claim.builder("train-7-1").gpus(2).exclusive().build())
 *         .together(GangScope.sameLabel("rack"))
 *         .build();
 * if (placer.place(job) instanceof GangResult.Placed p) {
 *     p.placements();                     // one per member, all committed
 * }
 * Gang pod = Gang.replicas(Claim.builder("infer-7").memoryGiB(4).build(), 4);   // one node, spread over its GPUs
 * placer.place(pod);
 * placer.release(pod);                    // every replica, in one ledger commit
 * }</pre>
 *
 * <h2>How</h2>
 * The nodes are split into domains by the gang's scope: one domain of every node
 * ({@link GangScope#anywhere()}), one per node ({@link GangScope#sameNode()} and
 * {@link GangScope#sameNodeSpread()}), or one per value of the
 * label ({@link GangScope#sameLabel}, values in ascending order; nodes without the label are not
 * used). Each attempt starts from a private copy of the whole ledger ({@link Ledger#copy()}: every
 * reservation whole, with its host resources, host-only tenants, and every affinity label bound
 * where it is). In each domain, in turn, the members are placed on that copy one after the other,
 * the most GPUs first (ties in member order), by the engine's own pipeline restricted to the
 * domain's nodes (a one-node domain as {@link PlacementEngine#placeOn}; the nodes outside a larger
 * domain are refused with {@code GANG} "outside the gang's domain"), each member seeing the ones
 * placed before it; then the trial is taken off the copy again. With {@code sameNodeSpread} each
 * member goes to the GPUs of the node that hold the fewest members so far (see {@code GpuSpread}):
 * distinct GPUs first, then stacked evenly; a node is tried when it has as many GPUs as the largest
 * member asks for. The first domain that takes every
 * member is committed; if
 * a node changed meanwhile and the ledger refuses the batch, the whole search restarts from the
 * current state, at most {@code maxCommitAttempts} times in all ({@code CONFLICT} after that). When
 * no domain takes every member, the answer gives each member's refusal in the domain that took the
 * most members (the first such), a {@code GANG} reason for the members that fitted there, and a
 * general {@code GANG} reason naming that domain.
 *
 * <h2>What others see</h2>
 * Nothing of a gang is written to the ledger before its one {@link Ledger#commit}, and a refused
 * gang writes nothing. While the commit runs, concurrent reservations and releases (a
 * {@link PlacementEngine#place} included) wait for it and are judged against the ledger before or
 * after the whole gang, never between two members; a {@link Ledger#placement} read of a member waits
 * too, so a reader that sees one member placed sees every member placed (until they are released).
 * Lock-free reads of node states ({@link Ledger#nodes}) and bulk reads ({@link Ledger#placements})
 * may show some members before others during the commit. After {@link #place} returns, either every
 * member is committed or none is.
 *
 * <h2>Cost</h2>
 * Each attempt copies the ledger once (linear in nodes and reservations, under the ledger's
 * exclusive lock as {@link Ledger#snapshot()}); each domain tried places every member once on the
 * copy, so a call costs about as many single placements as members times domains tried; with
 * {@code sameNode} that is one single-node try per node that has at least as many GPUs as the
 * members together.
 *
 * <p>Thread safety: thread-safe, as the engine is.
 */
public final class GangPlacer {

    private final PlacementEngine engine;

    public GangPlacer(PlacementEngine engine) {
        this.engine = Validate.notNull("gangPlacer.engine", engine);
    }

    /** Places every member of the gang and commits them together, or commits nothing. */
    public GangResult place(Gang gang) {
        Validate.notNull("gang", gang);
        Ledger ledger = engine.ledger();
        List<Reason> general = new ArrayList<>();
        for (Claim c : gang.members()) {
            ledger.placement(c.tenantId()).ifPresent(p -> general.add(Reason.of(ReasonCode.DUPLICATE_TENANT,
                    c.tenantId(), "already reserved on " + p.nodeName())));
        }
        if (!general.isEmpty()) {
            return new GangResult.Unschedulable(gang.name(), Map.of(), general);
        }
        BatchResult.Refused lost = null;
        for (int attempt = 1; attempt <= engine.config().maxCommitAttempts(); attempt++) {
            Ledger copy = ledger.copy();
            Map<String, List<NodeState>> domains = domains(gang, copy.nodes());
            if (domains.isEmpty()) {
                return new GangResult.Unschedulable(gang.name(), Map.of(), List.of(noDomain(gang)));
            }
            PlacementEngine whole = engine.onLedger(copy, null);
            Trial best = null;
            for (Map.Entry<String, List<NodeState>> d : domains.entrySet()) {
                Trial t = trial(gang, d.getKey(), d.getValue(), copy, whole);
                if (t.failed.isEmpty()) {
                    best = t;
                    break;
                }
                if (best == null || t.placed.size() > best.placed.size()) {
                    best = t;
                }
            }
            if (!java.util.Objects.requireNonNull(best, "best: domains is not empty").failed.isEmpty()) {
                return unschedulable(gang, best, domains.size());
            }
            List<Placement> ordered = gang.tenantIds().stream().map(best.placed::get).toList();
            BatchResult r = ledger.commit(List.of(), ordered);
            if (r instanceof BatchResult.Committed) {
                return new GangResult.Placed(gang.name(), ordered);
            }
            lost = (BatchResult.Refused) r;
        }
        return new GangResult.Unschedulable(gang.name(), Map.of(), List.of(Reason.of(ReasonCode.CONFLICT, gang.name(),
                "the ledger refused the gang's commit " + engine.config().maxCommitAttempts()
                        + " times (other placements took the room): " + java.util.Objects.requireNonNull(lost, "lost: maxCommitAttempts >= 1").summary())));
    }

    /**
     * Releases every member of the gang that is reserved, in one {@link Ledger#commit}: others see all of
     * them held or all of them released, never some (a member released meanwhile by someone else is
     * skipped; a member released and reserved again while this runs makes it read the ledger again, at
     * most {@code maxCommitAttempts} times).
     *
     * @return the reservations released, in member order (empty when none was reserved)
     * @throws io.qgpu.core.ledger.LedgerStateException when the ledger changed the members under every attempt
     */
    public List<Placement> release(Gang gang) {
        Validate.notNull("gang", gang);
        Ledger ledger = engine.ledger();
        BatchResult.Refused lost = null;
        for (int attempt = 1; attempt <= engine.config().maxCommitAttempts(); attempt++) {
            List<Placement> held = new ArrayList<>();
            for (String id : gang.tenantIds()) {
                ledger.placement(id).ifPresent(held::add);
            }
            if (held.isEmpty()) {
                return List.of();
            }
            BatchResult r = ledger.commit(held, List.of());
            if (r instanceof BatchResult.Committed) {
                return List.copyOf(held);
            }
            lost = (BatchResult.Refused) r;
        }
        throw new io.qgpu.core.ledger.LedgerStateException("gang " + gang.name() + ": the ledger refused its release "
                + engine.config().maxCommitAttempts() + " times: " + java.util.Objects.requireNonNull(lost, "lost: maxCommitAttempts >= 1").summary(),
                lost.reasons().values().stream().flatMap(List::stream).toList());
    }

    /** The members placed (by tenant id) and refused in one domain, on the attempt's copy of the ledger. */
    private record Trial(String domain, Map<String, Placement> placed, Map<String, PlacementResult.Unschedulable> failed) {
    }

    /**
     * Places the members on {@code copy} within the domain's nodes, then releases them from the copy
     * again (the copy is shared by the attempt's domains). {@code whole} is an engine over the copy.
     */
    private Trial trial(Gang gang, String domain, List<NodeState> nodes, Ledger copy, PlacementEngine whole) {
        Map<String, Placement> placed = new LinkedHashMap<>();
        Function<Claim, PlacementResult> place;
        if (gang.scope() instanceof GangScope.SameNodeSpread) {
            NodeState only = nodes.get(0);
            place = c -> GpuSpread.place(c, copy.node(only.name()).orElse(only), placed.values(), whole);
        } else if (gang.scope() instanceof GangScope.Anywhere) {
            place = whole::place;
        } else if (nodes.size() == 1) {
            String only = nodes.get(0).name();
            place = c -> whole.placeOn(c, only);
        } else {
            Set<String> names = new HashSet<>();
            nodes.forEach(n -> names.add(n.name()));
            PlacementEngine within = engine.onLedger(copy, (claim, node, view) -> names.contains(node.name()) ? List.of()
                    : List.of(Reason.of(ReasonCode.GANG, node.name(), "outside the gang's domain " + domain)));
            place = within::place;
        }
        List<Claim> order = new ArrayList<>(gang.members());
        order.sort(Comparator.comparingInt(Claim::gpuCount).reversed());
        Map<String, PlacementResult.Unschedulable> failed = new LinkedHashMap<>();
        for (Claim c : order) {
            PlacementResult r = place.apply(c);
            if (r instanceof PlacementResult.Placed p) {
                placed.put(c.tenantId(), p.placement());
            } else {
                failed.put(c.tenantId(), (PlacementResult.Unschedulable) r);
            }
        }
        placed.keySet().forEach(copy::release);
        return new Trial(domain, placed, failed);
    }

    private static GangResult unschedulable(Gang gang, Trial best, int tried) {
        Map<String, PlacementResult.Unschedulable> members = new TreeMap<>(best.failed);
        best.placed.forEach((id, p) -> members.put(id, new PlacementResult.Unschedulable(id, Map.of(),
                List.of(Reason.of(ReasonCode.GANG, id, "fits on " + p.nodeName() + " in " + best.domain
                        + ", but the gang " + gang.name() + " does not: " + String.join(", ", best.failed.keySet())
                        + " cannot be placed there")))));
        Reason why = Reason.of(ReasonCode.GANG, gang.name(), "no domain takes every member (" + tried
                + " tried); the best, " + best.domain + ", takes " + best.placed.size() + " of " + gang.members().size());
        return new GangResult.Unschedulable(gang.name(), members, List.of(why));
    }

    /** The nodes split by the gang's scope, by domain name, in trial order; each list in cluster order. */
    static Map<String, List<NodeState>> domains(Gang gang, List<NodeState> nodes) {
        Map<String, List<NodeState>> out = new LinkedHashMap<>();
        GangScope scope = gang.scope();
        if (scope instanceof GangScope.SameLabel l) {
            TreeMap<String, List<NodeState>> byValue = new TreeMap<>();
            for (NodeState n : nodes) {
                String v = n.node().labels().get(l.labelKey());
                if (v != null) {
                    byValue.computeIfAbsent(v, k -> new ArrayList<>()).add(n);
                }
            }
            byValue.forEach((v, ns) -> out.put(l.labelKey() + "=" + v, ns));
        } else if (scope instanceof GangScope.SameNode || scope instanceof GangScope.SameNodeSpread) {
            int gpus = neededGpus(gang);
            for (NodeState n : nodes) {
                if (n.gpus().size() >= gpus) {
                    out.put("node " + n.name(), List.of(n));
                }
            }
        } else if (!nodes.isEmpty()) {
            out.put("the cluster", nodes);
        }
        return out;
    }

    /**
     * The GPUs a node needs to be a one-node domain: the members' sum on {@code sameNode}, the largest
     * member's on {@code sameNodeSpread} (its members may share GPUs).
     */
    private static int neededGpus(Gang gang) {
        return gang.scope() instanceof GangScope.SameNodeSpread
                ? gang.members().stream().mapToInt(Claim::gpuCount).max().orElse(0)
                : gang.members().stream().mapToInt(Claim::gpuCount).sum();
    }

    private static Reason noDomain(Gang gang) {
        String what;
        if (gang.scope() instanceof GangScope.SameLabel l) {
            what = "no node carries the label " + l.labelKey();
        } else if (gang.scope() instanceof GangScope.SameNode) {
            what = "no node has the " + neededGpus(gang) + " GPUs the members ask for together";
        } else if (gang.scope() instanceof GangScope.SameNodeSpread) {
            what = "no node has the " + neededGpus(gang) + " GPUs its largest member asks for";
        } else {
            what = "the ledger has no nodes";
        }
        return Reason.of(ReasonCode.GANG, gang.name(), what);
    }
}
