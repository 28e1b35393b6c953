package io.qgpu.core.placement;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuState;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Holding;
import io.qgpu.api.HostHolding;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.NodeRejection;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.PreemptionPlan;
import io.qgpu.api.PreemptionResult;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Slice;
import io.qgpu.api.Validate;
import io.qgpu.core.ledger.AdmissionRules;
import io.qgpu.core.ledger.BatchResult;
import io.qgpu.core.ledger.Ledger;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * Proposes and commits preemption plans: for a claim that does not fit, which tenants to evict and
 * where the claim goes then ({@link PreemptionPlan}).
 *
 * <pre>{@code
 * PreemptionPlanner planner = new PreemptionPlanner(engine);
 * Claim urgent = Claim.builder("infer-9").memoryGiB(12).compute(50, 100)
 *         .priority(PriorityClass.ONLINE).priorityWithinClass(10).build();
 * if (engine.place(urgent) instanceof PlacementResult.Unschedulable
 *         && planner.plan(urgent) instanceof PreemptionPlan.Proposed plan
 *         && planner.commit(plan) instanceof PreemptionResult.Committed done) {
 *     done.evicted().forEach(v -> kill(v.tenantId()));    // already released in the ledger
 *     start(done.placement());
 * }
 * }</pre>
 *
 * <h2>The plan</h2>
 * Only tenants the claim {@link Claim#outranks outranks} may be evicted: every online claim outranks
 * every offline one, and within one class the higher {@link Claim#priorityWithinClass()} wins;
 * equal rank is never evicted. On each node whose labels match, the planner first tries the claim
 * with no eviction; then sets of the node's lower-ranked tenants, the fewest tenants first, and
 * among sets of one size the least reserved memory first, then the least guaranteed compute (sum
 * over the victims' slices), then tenant ids; at most {@code maxVictims} tenants and
 * {@code maxSetsPerNode} sets per node. The lower-ranked tenants of a node are those holding a GPU
 * slice or host resources there (a host-only tenant too). A set is tried on a private copy of the
 * whole ledger ({@link Ledger#copy()}, made once per plan: every reservation whole, with its host
 * resources, host-only tenants, and affinity labels bound where they are): the victims are
 * released from the copy, the claim is placed on that node by the engine's own pipeline (filters,
 * scores, GPU choice, {@link PlacementEngine#placeOn}), and the copy is put back as it was; the
 * first set that fits is the node's plan. Over the nodes the plan with the fewest victims wins, then the
 * least memory, then the least compute, then cluster order. Every other node gets its reason:
 * its plan and why it lost, no lower-ranked tenant, or what is still missing with every lower-ranked
 * tenant evicted.
 *
 * <h2>Commit</h2>
 * {@link #commit} releases the victims and reserves the claim with one {@link Ledger#commit}: atomic
 * with respect to every other placement, so no concurrent placement can take the room the victims
 * free. It is refused ({@link PreemptionResult.Stale}, nothing changed) when a victim's reservation is
 * no longer exactly the planned one or the claim no longer fits after the evictions.
 *
 * <h2>Cost</h2>
 * A plan copies the ledger once (linear in nodes and reservations, under the ledger's exclusive
 * lock as {@link Ledger#snapshot()}), then costs per node one single-node placement and, per victim
 * set tried, two batch commits on the copy and one single-node placement.
 *
 * <p>Thread safety: thread-safe; {@link #plan} works on a copy of a consistent cut of the ledger and
 * holds no lock while it plans, so a plan may be stale by the time it is committed, which the commit
 * detects.
 */
public final class PreemptionPlanner {
    /** Default most victims per node. */
    public static final int DEFAULT_MAX_VICTIMS = 8;
    /** Default most victim sets tried per node. */
    public static final int DEFAULT_MAX_SETS_PER_NODE = 2_000;

    private final PlacementEngine engine;
    private final int maxVictims;
    private final int maxSetsPerNode;

    /** A planner with {@link #DEFAULT_MAX_VICTIMS} and {@link #DEFAULT_MAX_SETS_PER_NODE}. */
    public PreemptionPlanner(PlacementEngine engine) {
        this(engine, DEFAULT_MAX_VICTIMS, DEFAULT_MAX_SETS_PER_NODE);
    }

    /**
     * @param maxVictims     most tenants one plan evicts, 1..64
     * @param maxSetsPerNode most victim sets tried per node, 1..1,000,000
     */
    public PreemptionPlanner(PlacementEngine engine, int maxVictims, int maxSetsPerNode) {
        this.engine = Validate.notNull("preemptionPlanner.engine", engine);
        this.maxVictims = Validate.between("preemptionPlanner.maxVictims", maxVictims, 1, 64);
        this.maxSetsPerNode = Validate.between("preemptionPlanner.maxSetsPerNode", maxSetsPerNode, 1, 1_000_000);
    }

    /** A plan for the claim against the ledger's current state, over every node; commits nothing. */
    public PreemptionPlan plan(Claim claim) {
        return plan(claim, null, p -> true);
    }

    /**
     * A plan restricted to some nodes and victims (as a scheduler that proposed its own candidates
     * asks): only the nodes named, and only tenants the claim outranks that {@code mayEvict} also
     * accepts. Commits nothing.
     *
     * @param nodes    the nodes to consider, or {@code null} for every node; names unknown to the ledger are ignored
     * @param mayEvict which of the lower-ranked tenants may be victims
     */
    @SuppressWarnings("ReferenceEquality") // identity meant: every plan but the chosen one
    public PreemptionPlan plan(Claim claim, @Nullable Set<String> nodes, Predicate<Placement> mayEvict) {
        Validate.notNull("claim", claim);
        Validate.notNull("mayEvict", mayEvict);
        Ledger ledger = engine.ledger();
        String id = claim.tenantId();
        Optional<Placement> held = ledger.placement(id);
        if (held.isPresent()) {
            return impossible(id, Reason.of(ReasonCode.DUPLICATE_TENANT, id, "already reserved on " + held.get().nodeName()));
        }
        GranularityRules rules = ledger.rules();
        try {
            rules.validate(claim);
        } catch (InvalidValueException e) {
            return impossible(id, Reason.of(ReasonCode.GRANULARITY, id, Refusals.message(e)));
        }
        Scratch scratch = new Scratch();
        List<NodeState> candidates = scratch.copy.nodes();
        if (nodes != null) {
            candidates = candidates.stream().filter(n -> nodes.contains(n.name())).toList();
        }
        if (candidates.isEmpty()) {
            return impossible(id, Reason.of(ReasonCode.UNKNOWN_TARGET, id, nodes == null ? "the ledger has no nodes"
                    : "none of the nodes " + new java.util.TreeSet<>(nodes) + " is in the ledger"));
        }
        Map<String, NodePlan> plans = new LinkedHashMap<>();
        Map<String, List<Reason>> reasons = new LinkedHashMap<>();
        NodePlan best = null;
        for (int i = 0; i < candidates.size(); i++) {
            NodeState ns = candidates.get(i);
            NodePlan np = planNode(claim, ns, i, rules, mayEvict, reasons, scratch);
            if (np != null) {
                plans.put(ns.name(), np);
                if (best == null || NodePlan.ORDER.compare(np, best) < 0) {
                    best = np;
                }
            }
        }
        if (best == null) {
            return new PreemptionPlan.Impossible(id, reasons, List.of());
        }
        for (NodePlan np : plans.values()) {
            if (np != best) {
                reasons.put(np.placement.nodeName(), List.of(Reason.of(ReasonCode.PREEMPTION, np.placement.nodeName(),
                        "a plan here evicts " + np.describe() + "; the chosen plan on " + best.placement.nodeName()
                                + " evicts " + best.describe())));
            }
        }
        return new PreemptionPlan.Proposed(best.placement, best.victims, reasons);
    }

    /**
     * Releases the plan's victims and reserves its claim in one step, or changes nothing.
     *
     * @return {@link PreemptionResult.Committed} naming the evicted tenants, or {@link PreemptionResult.Stale}
     */
    public PreemptionResult commit(PreemptionPlan.Proposed plan) {
        Validate.notNull("plan", plan);
        BatchResult r = engine.ledger().commit(plan.victims(), List.of(plan.placement()));
        if (r instanceof BatchResult.Committed c) {
            return new PreemptionResult.Committed(plan.placement(), c.released());
        }
        List<Reason> why = new ArrayList<>();
        ((BatchResult.Refused) r).reasons().values().forEach(why::addAll);
        return new PreemptionResult.Stale(plan.tenantId(), why);
    }

    // ------------------------------------------------------------------ one node

    /** A node's plan: its victims and where the claim goes, with the victims' reserved memory and compute. */
    private record NodePlan(int order, Placement placement, List<Placement> victims, long memory, long compute) {
        static final Comparator<NodePlan> ORDER = Comparator.comparingInt((NodePlan p) -> p.victims.size())
                .thenComparingLong(NodePlan::memory).thenComparingLong(NodePlan::compute).thenComparingInt(NodePlan::order);

        String describe() {
            return victims.size() + (victims.size() == 1 ? " tenant" : " tenants") + " holding "
                    + String.format(Locale.ROOT, "%.1f", (double) memory / GpuDevice.GIB) + " GiB and " + compute
                    + "% guaranteed compute " + victims.stream().map(Placement::tenantId).toList();
        }
    }

    private @Nullable NodePlan planNode(Claim claim, NodeState ns, int order, GranularityRules rules, Predicate<Placement> mayEvict,
                              Map<String, List<Reason>> reasons, Scratch scratch) {
        List<Reason> labels = AdmissionRules.checkNode(ns.node(), claim);
        if (!labels.isEmpty()) {
            reasons.put(ns.name(), labels);
            return null;
        }
        PlacementResult now = scratch.tryPlace(claim, ns.name(), List.of(), rules);
        if (now instanceof PlacementResult.Placed p) {
            return new NodePlan(order, p.placement(), List.of(), 0, 0);
        }
        List<Placement> eligible = lowerRanked(claim, ns, scratch.copy);
        eligible.removeIf(mayEvict.negate());
        if (eligible.isEmpty()) {
            reasons.put(ns.name(), List.of(Reason.of(ReasonCode.PREEMPTION, ns.name(), "no tenant here that may be evicted"
                    + " ranks below the claim (" + claim.priority().wireName() + ", priority " + claim.priorityWithinClass() + ")")));
            return null;
        }
        eligible.sort(Comparator.comparingLong(PreemptionPlanner::memoryOf).thenComparingLong(PreemptionPlanner::computeOf)
                .thenComparing(Placement::tenantId));
        int tried = 0;
        for (int k = 1; k <= Math.min(maxVictims, eligible.size()) && tried < maxSetsPerNode; k++) {
            List<List<Placement>> sets = subsets(eligible, k, maxSetsPerNode - tried);
            sets.sort(Comparator.comparingLong((List<Placement> s) -> s.stream().mapToLong(PreemptionPlanner::memoryOf).sum())
                    .thenComparingLong(s -> s.stream().mapToLong(PreemptionPlanner::computeOf).sum()));
            for (List<Placement> victims : sets) {
                tried++;
                if (scratch.tryPlace(claim, ns.name(), victims, rules) instanceof PlacementResult.Placed p) {
                    return new NodePlan(order, p.placement(), victims,
                            victims.stream().mapToLong(PreemptionPlanner::memoryOf).sum(),
                            victims.stream().mapToLong(PreemptionPlanner::computeOf).sum());
                }
            }
        }
        List<Reason> why = new ArrayList<>();
        why.add(Reason.of(ReasonCode.PREEMPTION, ns.name(), "no set of at most " + maxVictims + " of the " + eligible.size()
                + " lower-ranked tenants makes room (" + tried + " sets tried, at most " + maxSetsPerNode + ")"
                + (eligible.size() <= maxVictims ? "; with all of them evicted:" : "")));
        if (eligible.size() <= maxVictims
                && scratch.tryPlace(claim, ns.name(), eligible, null) instanceof PlacementResult.Unschedulable u) {
            NodeRejection r = u.nodes().get(ns.name());
            why.addAll(r != null ? r.all() : u.general());
        }
        reasons.put(ns.name(), why);
        return null;
    }

    /**
     * The node's tenants that the claim outranks, as the copy holds them: every tenant with a GPU
     * slice or host resources on the node.
     */
    private static List<Placement> lowerRanked(Claim claim, NodeState ns, Ledger copy) {
        Set<String> ids = new LinkedHashSet<>();
        for (GpuState g : ns.gpus()) {
            for (Holding h : g.holdings()) {
                ids.add(h.tenantId());
            }
        }
        for (HostHolding h : ns.host().holdings()) {
            ids.add(h.tenantId());
        }
        List<Placement> out = new ArrayList<>();
        for (String t : ids) {
            copy.placement(t).filter(p -> p.nodeName().equals(ns.name()) && claim.outranks(p.claim())).ifPresent(out::add);
        }
        return out;
    }

    /**
     * The private copy of the ledger a plan tries its moves on ({@link Ledger#copy()}), and an engine
     * like the planner's over it. Used by one {@link #plan} call only.
     */
    private final class Scratch {
        Ledger copy;
        PlacementEngine scratch;

        Scratch() {
            reset();
        }

        private void reset() {
            copy = engine.ledger().copy();
            scratch = engine.onLedger(copy, null);
        }

        /**
         * The claim placed on the node by the engine's pipeline once the victims are released; the
         * copy is left as it was. With {@code rules} given, a set whose node has fewer GPUs passing
         * the admission rules than the claim needs is answered {@code null} without placing. Also
         * {@code null} when the victims are no longer reserved as given in the copy (possible only
         * after the copy was made again, see below).
         */
        @Nullable PlacementResult tryPlace(Claim claim, String node, List<Placement> victims, @Nullable GranularityRules rules) {
            if (!victims.isEmpty() && !(copy.commit(victims, List.of()) instanceof BatchResult.Committed)) {
                return null;
            }
            try {
                if (rules != null && !victims.isEmpty() && !mayFit(claim, copy.node(node).orElseThrow(), rules)) {
                    return null;
                }
                PlacementResult r = scratch.placeOn(claim, node);
                if (r instanceof PlacementResult.Placed) {
                    copy.release(claim.tenantId());
                }
                return r;
            } finally {
                // putting the victims back restores the state they were admitted to; should the
                // admission order ever matter (it cannot for memory, compute, tenants or host
                // resources), the copy is made again rather than left short of tenants
                if (!victims.isEmpty() && !(copy.commit(List.of(), victims) instanceof BatchResult.Committed)) {
                    reset();
                }
            }
        }
    }

    /** A quick necessary condition: enough GPUs pass the admission rules on their own. */
    private static boolean mayFit(Claim claim, NodeState ns, GranularityRules rules) {
        if (claim.hostOnly()) {
            return true;
        }
        int ok = 0;
        for (GpuState g : ns.gpus()) {
            long mem = claim.exclusive() ? g.device().memoryBytes() : claim.memoryPerGpuBytes();
            if (AdmissionRules.checkGpu(g, claim, mem, rules).isEmpty() && ++ok >= claim.gpuCount()) {
                return true;
            }
        }
        return false;
    }

    /** Up to {@code limit} subsets of size {@code k}, in lexicographic order of positions. */
    static <T> List<List<T>> subsets(List<T> items, int k, int limit) {
        List<List<T>> out = new ArrayList<>();
        extend(items, k, limit, 0, new ArrayList<>(k), out);
        return out;
    }

    /** Adds to {@code out} every completion of {@code prefix} with items from {@code from} on, until {@code limit}. */
    private static <T> void extend(List<T> items, int k, int limit, int from, List<T> prefix, List<List<T>> out) {
        if (prefix.size() == k) {
            out.add(List.copyOf(prefix));
            return;
        }
        for (int i = from; i <= items.size() - (k - prefix.size()) && out.size() < limit; i++) {
            prefix.add(items.get(i));
            extend(items, k, limit, i + 1, prefix, out);
            prefix.remove(prefix.size() - 1);
        }
    }

    private static long memoryOf(Placement p) {
        return p.slices().stream().mapToLong(Slice::memoryBytes).sum();
    }

    private static long computeOf(Placement p) {
        return p.slices().stream().mapToLong(Slice::computeRequest).sum();
    }

    private static PreemptionPlan impossible(String id, Reason r) {
        return new PreemptionPlan.Impossible(id, Map.of(), List.of(r));
    }
}
