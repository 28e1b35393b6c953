package io.qgpu.kubernetes.extender;

import io.fabric8.kubernetes.api.model.Pod;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuState;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.QgpuException;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Validate;
import io.qgpu.json.QgpuJson;
import io.qgpu.core.ledger.AdmissionRules;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.ReconcileReport;
import io.qgpu.core.placement.PlacementConfig;
import io.qgpu.core.placement.PlacementEngine;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The extender's logic on top of qgpu's {@link PlacementEngine} and {@link Ledger}.
 *
 * <ul>
 *   <li><b>filter</b>: the engine's {@link PlacementEngine#check} over the candidate nodes only
 *       decides which nodes can take the pod now. A refused node goes to
 *       {@code FailedAndUnresolvableNodes} when it could not take the pod even if it were empty (too
 *       few GPUs that are healthy, of a selected model, open to the pod's class and large enough; no
 *       qgpu inventory at all), else to {@code FailedNodes} with the engine's one reason for the node,
 *       from the node's summaries (what was short, by how much). Each node's answer comes from a memo
 *       ({@code FitCache}) while the node's state is unchanged since the same claim shape was last
 *       checked on it, else from the engine; the memo answers what the engine would.</li>
 *   <li><b>prioritize</b>: each feasible candidate's engine total from the same check (node policy
 *       term plus its best GPU set's topology and load terms), min-max normalised over the feasible
 *       candidates to 1..10 ({@link #scores}); 0 for nodes that do not fit.</li>
 *   <li><b>bind</b>: commits first (the engine places the pod on the chosen node, {@link PlacementEngine#placeOn}, and reserves it in
 *       the ledger), then records the decision on the pod and binds it through the
 *       {@link ClusterApi}. If that fails, the reservation is released and the answer carries the
 *       error: the ledger and the cluster never disagree.</li>
 * </ul>
 *
 * <p>Tenant id: {@code namespace/name}. The pod UID of each reservation is remembered: a bind for a
 * new pod that took over the name of one still held (the delete event not seen yet) releases the old
 * reservation, and a delete event for an old UID never releases the new pod's.
 *
 * <pre>{@code
 * Ledger ledger = Ledger.create(inventory.rules(), inventory.nodes());
 * GpuExtender ext = new GpuExtender(ledger, PlacementConfig.defaults(), new DemoCluster());
 * ExtenderServer.builder(ext).port(8888).build().start();
 * }</pre>
 *
 * <p>Thread safety: thread-safe. Filter and prioritize only read. Bind and the pod events
 * ({@link #podGone}) of one tenant are serialised by a striped lock; {@link #reconcile} excludes them
 * all while it rebuilds the ledger.
 */
public final class GpuExtender implements Extender {
    private static final Logger LOG = LoggerFactory.getLogger(GpuExtender.class);
    private static final int STRIPES = 64;

    private final Ledger ledger;
    private final PlacementEngine engine;
    private final PodClaims claims;
    /** The claims of the last pods: filter, prioritize and (in the demo mode) bind ask for the same pod object's. */
    private final RecentClaims recentClaims;
    private final ClusterApi cluster;
    private final NodeInventory inventory;
    private final Map<String, String> uids = new ConcurrentHashMap<>();
    /**
     * Per tenant, the nodes its last filter passed (the filter reply's own unmodifiable list, kept as
     * it is: a set made of it cost a quarter of the extender's time at 500 candidates, the hashes of
     * names such as {@code node-1234} crowding the set's probe sequences); bind refuses any other node.
     * Cleared by bind and when the pod goes; at most {@link #FILTERED_LIMIT} tenants are kept (the
     * oldest go first), and a tenant with no entry (the extender restarted between filter and bind) is
     * checked by placement alone.
     */
    private final Map<String, List<String>> filtered = java.util.Collections.synchronizedMap(
            new LinkedHashMap<>(16, 0.75f, false) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<String, List<String>> eldest) {
                    return size() > FILTERED_LIMIT;
                }
            });
    static final int FILTERED_LIMIT = 10_000;
    private final ReentrantReadWriteLock structure = new ReentrantReadWriteLock();
    private final ReentrantLock[] stripes = new ReentrantLock[STRIPES];
    private final PreemptVerb preemption;
    private final FitCache checks;

    public GpuExtender(Ledger ledger, PlacementConfig config, ClusterApi cluster) {
        this.ledger = Validate.notNull("ledger", ledger);
        this.cluster = Validate.notNull("cluster", cluster);
        this.claims = new PodClaims(ledger.rules());
        this.recentClaims = new RecentClaims(claims);
        this.inventory = new NodeInventory(ledger);
        this.engine = PlacementEngine.builder(ledger).config(Validate.notNull("config", config)).build();
        for (int i = 0; i < STRIPES; i++) {
            stripes[i] = new ReentrantLock();
        }
        this.preemption = new PreemptVerb(ledger, engine, claims, uids);
        NodeChecks byEngine = NodeChecks.of(engine);
        // the memo keeps, with each refusal, whether the node could take the shape empty (the answer
        // filter needs for it), so that a node the memo settles is not checked GPU by GPU again
        this.checks = new FitCache(ledger, config, (claim, names) -> classified(claim, byEngine.check(claim, names)),
                FitCache.DEFAULT_MAX_ENTRIES);
    }

    public Ledger ledger() {
        return ledger;
    }

    public NodeInventory inventory() {
        return inventory;
    }

    /** Node checks of filter and prioritize answered from the memo, and by the engine, so far. */
    long[] checkCounts() {
        return checks.counts();
    }

    // ------------------------------------------------------------------ filter and prioritize

    /** The ledger's node names, by position (built again after a structural change). */
    @Override
    public NodeNameTable nodeNames() {
        return checks.names();
    }

    @Override
    public ExtenderProtocol.FilterResult filter(ExtenderRequests.Args args) {
        Optional<Claim> claim = prepare(args);
        List<String> names = args.nodeNames();
        Map<String, String> failed = new LinkedHashMap<>();
        Map<String, String> unresolvable = new LinkedHashMap<>();
        List<String> fit;
        if (claim.isEmpty()) {
            fit = names;
        } else {
            NodeChecks.Checked checked = checks.check(claim.get(), names);
            Fit passed = new Fit(names, checked.size());
            for (int j = 0; j < checked.size(); j++) {
                if (checked.fits(j)) {
                    passed.add(j, checked);
                    continue;
                }
                String name = checked.name(j);
                Reason why = checked.reason(j);
                Optional<String> never = checked.resolvable(j) ? Optional.empty() : unresolvable(claim.get(), name, why);
                if (never.isPresent()) {
                    unresolvable.put(name, never.get());
                } else {
                    failed.put(name, checked.message(j));
                }
            }
            fit = passed.list();
            filtered.put(claim.get().tenantId(), fit);
        }
        return args.byNames() ? ExtenderProtocol.FilterResult.ofNames(fit, failed, unresolvable)
                : ExtenderProtocol.FilterResult.ofNodes(ExtenderRequests.nodeListOf(args, fit), failed, unresolvable);
    }

    /**
     * The names a filter passes, in request order, as one unmodifiable list made once: with their
     * positions when the request's names came with them ({@link CandidateNames}), so that the reply
     * writer and bind find them by position too.
     */
    private static final class Fit {
        private final CandidateNames from;
        private final String[] names;
        private final int[] positions;
        private int size;

        Fit(List<String> asked, int capacity) {
            this.from = asked instanceof CandidateNames c ? c : null;
            this.names = new String[capacity];
            this.positions = from == null ? null : new int[capacity];
        }

        /** Adds the name asked at {@code askedIndex}; by its position alone where it has one (CandidateNames reads the table's name). */
        void add(int askedIndex, NodeChecks.Checked checked) {
            int p = positions != null ? from.position(askedIndex) : -1;
            if (positions != null) {
                positions[size] = p;
            }
            if (p < 0) {
                names[size] = checked.name(askedIndex);
            }
            size++;
        }

        List<String> list() {
            return from != null ? new CandidateNames(names, positions, size, from.table())
                    : java.util.Collections.unmodifiableList(java.util.Arrays.asList(names).subList(0, size));
        }
    }

    /** The {@code preempt} verb: see {@link PreemptVerb}. */
    @Override
    public ExtenderProtocol.PreemptionResult preempt(ExtenderRequests.PreemptionArgs args) {
        return preemption.answer(args);
    }

    @Override
    public List<ExtenderProtocol.HostPriority> prioritize(ExtenderRequests.Args args) {
        Optional<Claim> claim = prepare(args);
        List<String> names = args.nodeNames();
        long[] scores = claim.isPresent() ? scores(checks.check(claim.get(), names)) : new long[names.size()];
        return new Priorities(names, scores);
    }

    /**
     * The engine's totals on the extender's 0..10 scale, min-max normalised over the feasible
     * candidates: the best total scores 10, the worst feasible one 1, the others in proportion
     * (rounded); when every candidate has the same total, all score 10. Nodes that do not fit
     * score {@link ExtenderProtocol#MIN_PRIORITY} (0). So the ranking is the engine's, at the scale's
     * resolution. By the index of the name asked.
     */
    static long[] scores(NodeChecks.Checked checked) {
        long[] out = new long[checked.size()];   // MIN_PRIORITY is 0
        double min = Double.POSITIVE_INFINITY;
        double max = Double.NEGATIVE_INFINITY;
        for (int j = 0; j < checked.size(); j++) {
            if (checked.fits(j)) {
                min = Math.min(min, checked.total(j));
                max = Math.max(max, checked.total(j));
            }
        }
        double range = max - min;
        for (int j = 0; j < checked.size(); j++) {
            if (checked.fits(j)) {
                long s = range > 1e-12
                        ? 1 + Math.round((checked.total(j) - min) / range * (ExtenderProtocol.MAX_PRIORITY - 1))
                        : ExtenderProtocol.MAX_PRIORITY;
                out[j] = s;
            }
        }
        return out;
    }

    private Optional<Claim> prepare(ExtenderRequests.Args args) {
        if (cluster instanceof DemoCluster demo) {
            demo.remember(args.pod());
        }
        for (ExtenderRequests.NodeEntry n : args.nodes().values()) {
            inventory.sync(n.model());
        }
        return recentClaims.claimOf(args.pod());
    }

    /**
     * {@code checked} with each refused node's {@link NodeChecks.Checked#resolvable} answered: true
     * where the node could take the claim if it were empty.
     */
    private NodeChecks.Checked classified(Claim claim, NodeChecks.Checked checked) {
        boolean[] resolvable = new boolean[checked.size()];
        for (int j = 0; j < checked.size(); j++) {
            resolvable[j] = !checked.fits(j) && unresolvable(claim, checked.name(j), checked.reason(j)).isEmpty();
        }
        return new NodeChecks.Checked(checked.names(), checked.totals(), checked.reasons(), resolvable);
    }

    /**
     * Why a node refused with {@code why} could not take the claim even if it held nothing (filter's
     * {@code FailedAndUnresolvableNodes}); empty when it could (preemption may help: {@code FailedNodes}).
     */
    private Optional<String> unresolvable(Claim claim, String name, Reason why) {
        Optional<NodeState> state = why.code() == ReasonCode.UNKNOWN_TARGET ? Optional.empty() : ledger.node(name);
        if (state.isEmpty()) {
            return Optional.of("node has no qgpu inventory (annotation " + QgpuAnnotations.INVENTORY + " or the static inventory)");
        }
        return neverFits(claim, state.get());
    }

    /**
     * Why the node could not take the claim even if it held nothing: fewer GPUs than asked for that
     * pass the static admission rules on an empty GPU, or a node-level mismatch; empty when it could.
     */
    private Optional<String> neverFits(Claim claim, NodeState state) {
        List<Reason> node = new ArrayList<>(AdmissionRules.checkNode(state.node(), claim));
        node.addAll(AdmissionRules.checkHost(NodeState.empty(state.node()), claim));   // more than the node has at all
        if (!node.isEmpty()) {
            return Optional.of(node.stream().map(Reason::message).collect(Collectors.joining("; ")));
        }
        int usable = 0;
        List<String> why = new ArrayList<>();
        for (GpuState g : state.gpus()) {
            GpuDevice d = g.device();
            long memory = claim.exclusive() ? d.memoryBytes() : claim.memoryPerGpuBytes();
            List<Reason> r = AdmissionRules.checkGpu(GpuState.empty(d), claim, memory, ledger.rules());
            if (r.isEmpty()) {
                usable++;
            } else {
                r.forEach(x -> why.add(x.message()));
            }
        }
        if (usable >= claim.gpuCount()) {
            return Optional.empty();
        }
        String head = Reason.shortOf(ReasonCode.NOT_ENOUGH_GPUS, state.name(), claim.gpuCount(), usable).message()
                + " (GPUs that could ever hold this pod)";
        return Optional.of(why.isEmpty() ? head : head + "; " + String.join("; ", why));
    }

    // ------------------------------------------------------------------ bind

    /** Whether bind's cluster calls wait on the API server ({@link ClusterApi#waitsOnNetwork}). */
    @Override
    public boolean bindWaitsOnNetwork() {
        return cluster.waitsOnNetwork();
    }

    @Override
    public ExtenderProtocol.BindingResult bind(ExtenderProtocol.BindingArgs args) {
        String tenant = PodClaims.tenantOf(args.podNamespace(), args.podName());
        ReentrantLock lock = stripe(tenant);
        structure.readLock().lock();
        lock.lock();
        try {
            return bindLocked(tenant, args);
        } finally {
            lock.unlock();
            structure.readLock().unlock();
        }
    }

    private ExtenderProtocol.BindingResult bindLocked(String tenant, ExtenderProtocol.BindingArgs args) {
        Pod pod;
        try {
            Optional<Pod> found = cluster.pod(args.podNamespace(), args.podName());
            if (found.isEmpty()) {
                return error("pod " + tenant + " not found");
            }
            pod = found.get();
        } catch (ClusterApi.ClusterApiException e) {
            return error(e.getMessage());
        }
        String uid = pod.getMetadata().getUid();
        if (!args.podUid().isEmpty() && uid != null && !uid.isEmpty() && !uid.equals(args.podUid())) {
            return error("pod " + tenant + " now has UID " + uid + ", the scheduler asked to bind UID " + args.podUid());
        }
        if ((uid == null || uid.isEmpty()) && !args.podUid().isEmpty()) {
            uid = args.podUid();
        }
        Optional<Claim> claim = recentClaims.claimOf(pod);
        if (claim.isEmpty()) {
            try {
                cluster.bind(pod, args.node(), Map.of());
                return ExtenderProtocol.BindingResult.ok();
            } catch (ClusterApi.ClusterApiException e) {
                return error(e.getMessage());
            }
        }
        Optional<Placement> held = ledger.placement(tenant);
        if (held.isPresent()) {
            String heldUid = uids.get(tenant);
            if (uid != null && heldUid != null && !heldUid.equals(uid)) {
                engine.release(tenant);
                uids.remove(tenant);
                LOG.info("released {} held by an earlier pod (UID {}) of the same name", tenant, heldUid);
            } else if (held.get().nodeName().equals(args.node()) && args.node().equals(nodeNameOf(pod))) {
                return ExtenderProtocol.BindingResult.ok();
            } else {
                return error("pod " + tenant + " already holds GPUs on node " + held.get().nodeName());
            }
        }
        List<String> passed = filtered.get(tenant);
        if (passed != null && !passed.contains(args.node())) {
            return error("node " + args.node() + " did not pass the filter for pod " + tenant + " (it passed: "
                    + (passed.isEmpty() ? "none" : String.join(", ", new java.util.TreeSet<>(passed))) + ")");
        }
        if (uid != null) {
            uids.put(tenant, uid);
        }
        PlacementResult result = engine.placeOn(claim.get(), args.node());
        if (result instanceof PlacementResult.Unschedulable u) {
            uids.remove(tenant);
            return BindErrors.refused(tenant, args.node(), u);
        }
        Placement placement = ((PlacementResult.Placed) result).placement();
        boolean bound = false;
        try {
            cluster.bind(pod, args.node(), annotations(placement));
            bound = true;
            filtered.remove(tenant);
            LOG.info("bound {} to {} on {}", tenant, args.node(), placement.gpuUuids());
            return ExtenderProtocol.BindingResult.ok();
        } catch (ClusterApi.ClusterApiException e) {
            return error(e.getMessage());
        } finally {
            if (!bound) {
                engine.release(tenant);
                uids.remove(tenant);
                LOG.warn("bind of {} to {} failed; reservation released", tenant, args.node());
            }
        }
    }

    /** The annotations bind writes on the pod. */
    public static Map<String, String> annotations(Placement p) {
        Map<String, String> a = new LinkedHashMap<>();
        a.put(QgpuAnnotations.PLACEMENT, QgpuJson.writePlacement(p).trim());
        a.put(QgpuAnnotations.VISIBLE_DEVICES, String.join(",", p.gpuUuids()));
        a.put(QgpuAnnotations.NODE, p.nodeName());
        a.put(QgpuAnnotations.ENV, ExtenderRequests.writeString(p.environment()));
        return a;
    }

    private static String nodeNameOf(Pod pod) {
        return pod.getSpec() == null ? null : pod.getSpec().getNodeName();
    }

    private static ExtenderProtocol.BindingResult error(String message) {
        return BindErrors.error(message);
    }

    private ReentrantLock stripe(String tenant) {
        return stripes[Math.floorMod(tenant.hashCode(), STRIPES)];
    }

    // ------------------------------------------------------------------ cluster events

    /**
     * A pod was deleted or finished: releases its reservation, unless the reservation now belongs to a
     * newer pod of the same name (another UID).
     *
     * @return what was released
     */
    public Optional<Placement> podGone(Pod pod) {
        String tenant = PodClaims.tenantOf(pod);
        String uid = pod.getMetadata().getUid();
        ReentrantLock lock = stripe(tenant);
        structure.readLock().lock();
        lock.lock();
        try {
            String held = uids.get(tenant);
            if (held != null && uid != null && !held.equals(uid)) {
                return Optional.empty();
            }
            Optional<Placement> released = engine.release(tenant);
            uids.remove(tenant);
            filtered.remove(tenant);
            released.ifPresent(p -> LOG.info("pod {} gone: released {} on {}", tenant, p.gpuUuids(), p.nodeName()));
            return released;
        } finally {
            lock.unlock();
            structure.readLock().unlock();
        }
    }

    /**
     * Rebuilds the ledger's reservations from the bound pods' {@value QgpuAnnotations#PLACEMENT}
     * annotations (pods with a node, not finished). Annotations that cannot be read, or that name
     * another pod or node, are logged and left out. Logs every difference of the report.
     */
    public ReconcileReport reconcile(Collection<Pod> pods) {
        structure.writeLock().lock();
        try {
            List<Placement> bound = new ArrayList<>();
            Map<String, String> boundUids = new HashMap<>();
            for (Pod pod : pods) {
                Optional<Placement> p = boundPlacement(pod);
                if (p.isPresent()) {
                    bound.add(p.get());
                    if (pod.getMetadata().getUid() != null) {
                        boundUids.put(p.get().tenantId(), pod.getMetadata().getUid());
                    }
                }
            }
            ReconcileReport report = ledger.reconcile(bound);
            uids.clear();
            for (Placement p : ledger.placements()) {
                String u = boundUids.get(p.tenantId());
                if (u != null) {
                    uids.put(p.tenantId(), u);
                }
            }
            LOG.info("reconciled the ledger with {} bound pod(s): {} difference(s)", bound.size(), report.differences().size());
            for (ReconcileReport.Difference d : report.differences()) {
                if (d.kind() == ReconcileReport.Kind.REFUSED) {
                    LOG.warn("reconcile {} {}: {}", d.kind(), d.tenant(),
                            d.reasons().stream().map(Reason::message).collect(Collectors.joining("; ")));
                } else {
                    LOG.info("reconcile {} {}", d.kind(), d.tenant());
                }
            }
            return report;
        } finally {
            structure.writeLock().unlock();
        }
    }

    /** Whether a pod no longer holds its GPUs: it finished. */
    static boolean finished(Pod pod) {
        String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
        return "Succeeded".equals(phase) || "Failed".equals(phase);
    }

    /** The placement a bound, running pod carries, if any and if it is consistent with the pod. */
    static Optional<Placement> boundPlacement(Pod pod) {
        if (pod.getMetadata() == null || pod.getMetadata().getAnnotations() == null) {
            return Optional.empty();
        }
        String json = pod.getMetadata().getAnnotations().get(QgpuAnnotations.PLACEMENT);
        String node = nodeNameOf(pod);
        if (json == null || node == null || node.isEmpty() || finished(pod)) {
            return Optional.empty();
        }
        String tenant = PodClaims.tenantOf(pod.getMetadata().getNamespace(), pod.getMetadata().getName());
        try {
            Placement p = QgpuJson.readPlacement(json);
            if (!p.tenantId().equals(tenant)) {
                LOG.warn("pod {}: annotation {} is for tenant {}; ignored (copied from another pod?)", tenant,
                        QgpuAnnotations.PLACEMENT, p.tenantId());
                return Optional.empty();
            }
            if (!p.nodeName().equals(node)) {
                LOG.warn("pod {}: annotation {} names node {} but the pod runs on {}; ignored", tenant,
                        QgpuAnnotations.PLACEMENT, p.nodeName(), node);
                return Optional.empty();
            }
            return Optional.of(p);
        } catch (QgpuException e) {
            LOG.warn("pod {}: annotation {} cannot be read; ignored: {}", tenant, QgpuAnnotations.PLACEMENT, e.getMessage());
            return Optional.empty();
        }
    }
}
