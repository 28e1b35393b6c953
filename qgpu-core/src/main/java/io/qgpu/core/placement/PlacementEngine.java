package io.qgpu.core.placement;

import io.qgpu.api.Claim;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Ticker;
import io.qgpu.api.Validate;
import io.qgpu.api.placement.GpuFilter;
import io.qgpu.api.placement.GpuSetScorer;
import io.qgpu.api.placement.NodeFilter;
import io.qgpu.api.placement.NodeScorer;
import io.qgpu.core.internal.LedgerFeeds;
import io.qgpu.core.internal.NodeFeed;
import io.qgpu.core.ledger.AdmissionRules;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.ReserveResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides where each claim goes and commits it to the {@link Ledger}: filter, score, select, commit.
 *
 * <pre>{@code
 * Ledger ledger = Ledger.create(GranularityRules.ofDefaults(), nodes);
 * PlacementEngine engine = PlacementEngine.builder(ledger)
 *         .config(PlacementConfig.builder()
 *                 .classPolicy(PriorityClass.ONLINE, PlacementPolicy.SPREAD, PlacementPolicy.SPREAD)
 *                 .classPolicy(PriorityClass.OFFLINE, PlacementPolicy.BINPACK, PlacementPolicy.BINPACK)
 *                 .build())
 *         .nodeFilter((claim, node, view) -> List.of())          // your own rules, if any
 *         .build();
 * PlacementResult r = engine.place(Claim.builder("infer-1").memoryGiB(8).compute(40, 70).build());
 * if (r instanceof PlacementResult.Placed p) {
 *     p.placement().environment();                             // NVIDIA_VISIBLE_DEVICES=...
 * } else if (r instanceof PlacementResult.Unschedulable u) {
 *     u.summary();                                             // "infer-1 unschedulable: 0/4000 nodes are available: 2950 insufficient GPU memory, ..."
 *     u.failedNodes();                                         // a bounded number of nodes: what was short, by how much
 * }
 * engine.check(claim, List.of("n1", "n2"));                    // these nodes only: fits (set, total) or one reason
 * engine.explain(claim).table();                               // every candidate's score and why
 * engine.release("infer-1");
 * }</pre>
 *
 * <h2>Pipeline</h2>
 * <ol>
 *   <li><b>General checks:</b> sizes follow the ledger's granularity rules, the tenant id is new.</li>
 *   <li><b>Filter:</b> GPUs by the ledger's own admission rules ({@link AdmissionRules}) and every
 *       registered {@link GpuFilter}; nodes by selectors ({@link AdmissionRules#checkNode}), every
 *       {@link NodeFilter}, free host CPU and memory, and enough admissible GPUs; affinity labels
 *       pin a claim to the GPUs its label already holds.</li>
 *   <li><b>Score nodes</b> by the node policy and every {@link NodeScorer}; the {@code shortlist}
 *       best go on (ties: cluster order).</li>
 *   <li><b>Score GPU sets</b> on each shortlisted node: NVLink clique and bandwidth, the look-ahead
 *       at what the set leaves for later multi-GPU claims, load by the GPU policy, every
 *       {@link GpuSetScorer}, the {@link FragmentationScorer} under the fragmentation policy; within
 *       a node NUMA, PCIe closeness and (one GPU) connectivity only break ties
 *       ({@link PlacementScores}).</li>
 *   <li><b>Select</b> the highest node score plus best set score (ties: the earlier node in
 *       cluster order, the lexicographically first set).</li>
 *   <li><b>Commit</b> through {@link Ledger#reserve}, which re-validates atomically; a lost race is
 *       retried from a fresh view up to {@code maxCommitAttempts} times, then answered
 *       {@code Unschedulable} with a {@code CONFLICT} reason.</li>
 * </ol>
 * The formulas, their defaults and the rules they give (NVLink first, the look-ahead, the
 * precedence within a node), the fragmentation term, gangs, preemption plans and replicas are in
 * docs/placement.md ("Pipeline", "Policies and formulas", "Fragmentation-aware policy"); policies
 * resolve per claim as {@link PlacementConfig#nodePolicyFor} and {@link PlacementConfig#gpuPolicyFor}
 * say.
 *
 * <h2>Cost</h2>
 * A per-node key per class (open GPUs, largest free memory and compute, load) is kept current from
 * the ledger's change feed, so a placement refreshes only the nodes that changed; for most claims an
 * index of the keys by free room hands out only nodes that may fit, best first. GPU sets are searched
 * on at most {@code shortlist} nodes, and no {@link Reason} is built unless the claim is refused; a
 * refusal is proved from the keys and summaries without visiting GPUs where they allow it.
 * docs/placement.md ("Refusals", "Thread safety and cost") has the details, docs/placement-measurements.md
 * ("A scheduling pass at scale") the measured figures.
 *
 * <h2>Thread safety</h2>
 * Thread-safe: {@link #place}, {@link #explain}, {@link #check} and {@link #release} may be called
 * from any number of threads. Configuration and SPIs are fixed at build time; the only mutable state
 * is the index of node keys, whose races are benign (a key only pre-filters and ranks; every decision
 * is checked against the node state it was made from, and an unschedulable answer relies on keys only
 * while none can lag). Placements never over-commit: every commit goes through {@link Ledger#reserve}.
 * Registered filters and scorers must be thread-safe.
 */
public final class PlacementEngine {
    private static final Logger LOG = LoggerFactory.getLogger(PlacementEngine.class);
    /** How many refused nodes a refusal details by default ({@link Builder#refusalDetail}). */
    public static final int DEFAULT_REFUSAL_DETAIL = 3;
    /** {@link Builder#refusalDetail} for every node's detail. */
    public static final int ALL_NODES = Integer.MAX_VALUE;

    private final Ledger ledger;
    private final PlacementConfig config;
    private final NodeFilter[] nodeFilters;
    private final GpuFilter[] gpuFilters;
    private final NodeScorer[] nodeScorers;
    private final double[] nodeScorerWeights;
    private final GpuSetScorer[] setScorers;
    private final double[] setScorerWeights;
    private final Ticker ticker;
    private final FragmentationScorer fragmentation;
    /** Flattened node states of the ledger's current structure; entries are checked by identity. */
    private final NodePass pass;
    private final Refusals refusals;
    private final int refusalDetail;
    private final Decisions decisions;
    private volatile @Nullable NodeIndex index;
    /** {@link #place}'s decider, made once (a bound method reference made per call showed in the pass's profile). */
    private final Decider anywhere;

    private PlacementEngine(Builder b) {
        this.ledger = b.ledger;
        this.config = b.config;
        this.nodeFilters = b.nodeFilters.toArray(new NodeFilter[0]);
        this.gpuFilters = b.gpuFilters.toArray(new GpuFilter[0]);
        this.nodeScorers = b.nodeScorers.toArray(new NodeScorer[0]);
        this.nodeScorerWeights = b.nodeScorerWeights.stream().mapToDouble(Double::doubleValue).toArray();
        // the fragmentation term goes last; it scores 0 for claims of another node policy
        this.fragmentation = b.fragmentation != null ? b.fragmentation : FragmentationScorer.sampling(RequestSample.DEFAULT_CAPACITY);
        this.fragmentation.bind(config);
        List<GpuSetScorer> sets = new ArrayList<>(b.setScorers);
        sets.add(fragmentation);
        this.setScorers = sets.toArray(new GpuSetScorer[0]);
        this.setScorerWeights = java.util.stream.DoubleStream.concat(b.setScorerWeights.stream().mapToDouble(Double::doubleValue),
                java.util.stream.DoubleStream.of(config.fragmentationWeight() * FragmentationScorer.WEIGHT_SCALE)).toArray();
        this.ticker = b.ticker;
        this.refusalDetail = b.refusalDetail;
        this.pass = new NodePass(ledger, config, nodeFilters, gpuFilters, nodeScorers, nodeScorerWeights, setScorers,
                setScorerWeights, b.setMemo.get());
        this.refusals = new Refusals(ledger, config, nodeFilters, gpuFilters, pass);
        this.decisions = new Decisions(pass, refusals, refusalDetail);
        this.anywhere = decisions::anywhere;
    }

    /** An engine with the default configuration and no extra filters or scorers. */
    public static PlacementEngine create(Ledger ledger) {
        return builder(ledger).build();
    }

    public static Builder builder(Ledger ledger) {
        return new Builder(ledger);
    }

    /** The ledger this engine commits to. */
    public Ledger ledger() {
        return ledger;
    }

    public PlacementConfig config() {
        return config;
    }

    /** The fragmentation term (its sample or fixed mix) used for claims whose node policy is {@code fragmentation}. */
    public FragmentationScorer fragmentation() {
        return fragmentation;
    }

    // ------------------------------------------------------------------ public operations

    /**
     * Places the claim and commits it to the ledger.
     *
     * @return {@link PlacementResult.Placed} with the committed placement, or
     *         {@link PlacementResult.Unschedulable} with the nodes counted per cause and the reasons
     *         for every GPU of at most {@link Builder#refusalDetail} nodes (or a general reason:
     *         granularity, duplicate tenant, no nodes, or {@code CONFLICT} when the commit lost the
     *         race {@code maxCommitAttempts} times)
     */
    public PlacementResult place(Claim claim) {
        return decideAndCommit(claim, anywhere);
    }

    /** One decision on a fresh view: a {@link Placement} to commit, or the final {@link PlacementResult}. */
    private interface Decider {
        Object decide(ClaimShape c, NodeIndex idx, GranularityRules rules);
    }

    /**
     * The general checks, then decide and commit, deciding again on a fresh view after a lost commit
     * race, at most {@code maxCommitAttempts} times in all.
     */
    private PlacementResult decideAndCommit(Claim claim, Decider decider) {
        Validate.notNull("claim", claim);
        GranularityRules rules = ledger.rules();
        List<Reason> general = refusals.generalReasons(claim, rules);
        if (!general.isEmpty()) {
            return new PlacementResult.Unschedulable(claim.tenantId(), Map.of(), general);
        }
        ClaimShape c = new ClaimShape(claim, config, rules);
        fragmentation.record(claim);
        ReserveResult.Refused last = null;
        String lastNode = null;
        for (int attempt = 1; attempt <= config.maxCommitAttempts(); attempt++) {
            NodeIndex idx = index();
            Object decided = decider.decide(c, idx, idx.feed.rules());
            if (decided instanceof PlacementResult answer) {
                return answer;
            }
            Placement p = (Placement) decided;
            ReserveResult r = ledger.reserve(p);
            if (r instanceof ReserveResult.Reserved reserved) {
                return new PlacementResult.Placed(reserved.placement());
            }
            ReserveResult.Refused refused = (ReserveResult.Refused) r;
            for (Reason why : refused.reasons()) {
                if (why.code() == ReasonCode.DUPLICATE_TENANT || why.code() == ReasonCode.GRANULARITY) {
                    return new PlacementResult.Unschedulable(claim.tenantId(), Map.of(), refused.reasons());
                }
            }
            last = refused;
            lastNode = p.nodeName();
            if (LOG.isDebugEnabled()) {
                LOG.debug("{}: commit on {} refused (attempt {} of {}): {}", claim.tenantId(), lastNode, attempt,
                        config.maxCommitAttempts(), refused.summary());
            }
        }
        return refusals.conflict(claim, java.util.Objects.requireNonNull(lastNode, "lastNode"), java.util.Objects.requireNonNull(last, "last"));   // maxCommitAttempts >= 1
    }

    /**
     * Every candidate's score and why, and the reasons every other node was refused, for the current
     * ledger state. Commits nothing. {@link PlacementExplanation#chosen()} is what {@link #place} would
     * commit from the same state.
     */
    public PlacementExplanation explain(Claim claim) {
        Validate.notNull("claim", claim);
        long t0 = ticker.read();
        GranularityRules rules = ledger.rules();
        ClaimShape c = new ClaimShape(claim, config, rules);
        List<Reason> general = refusals.generalReasons(claim, rules);
        if (!general.isEmpty()) {
            return new PlacementExplanation(claim.tenantId(), c.nodePolicy, c.gpuPolicy, List.of(), Map.of(), general,
                    Optional.empty(), ticker.read() - t0);
        }
        return Explanations.build(c, index(), pass, refusals, explainer(), ticker, t0);
    }

    /**
     * An engine with this one's configuration, filters, scorers and clock over another ledger (a
     * private copy, {@link Ledger#copy()}, for trying placements that nobody else may see), with
     * {@code extra} (may be null) as one more node filter after this engine's own.
     */
    PlacementEngine onLedger(Ledger other, @Nullable NodeFilter extra) {
        Builder b = new Builder(other).config(config).ticker(ticker);
        b.refusalDetail = refusalDetail;
        b.nodeFilters.addAll(List.of(nodeFilters));
        if (extra != null) {
            b.nodeFilters.add(extra);
        }
        b.gpuFilters.addAll(List.of(gpuFilters));
        for (int i = 0; i < nodeScorers.length; i++) {
            b.nodeScorer(nodeScorers[i], nodeScorerWeights[i]);
        }
        for (int i = 0; i < setScorers.length - 1; i++) {   // the last is the fragmentation term
            b.gpuSetScorer(setScorers[i], setScorerWeights[i]);
        }
        b.fragmentation = fragmentation.frozen();   // trial placements score alike and sample nothing
        return b.build();
    }

    /**
     * Whether each named node can take the claim now, in the order asked: the GPU set and total
     * {@link #place} would rank the node by, or one reason from the node's summaries (the cause the
     * refusals of {@link #place} count it under). Visits only the named nodes. Commits nothing; the
     * claim's tenant may already hold a reservation (the check is about the nodes, not the tenant).
     * A name the ledger does not know is refused with {@code UNKNOWN_TARGET}; a claim that breaks the
     * granularity rules is refused on every node with {@code GRANULARITY}.
     */
    public List<NodeFit> check(Claim claim, List<String> nodeNames) {
        Validate.notNull("claim", claim);
        Validate.notNull("nodeNames", nodeNames);
        NodeIndex idx = index();
        GranularityRules rules = idx.feed.rules();
        return decisions.check(claim, new ClaimShape(claim, config, rules), nodeNames, idx, rules);
    }

    /**
     * Places the claim on the named node only and commits it: what {@link #place} would do if that
     * node were the whole cluster (the GPU set {@link #check} gives for the node), with the same
     * commit retries. Visits only that node (and, for a claim with an affinity label, the nodes'
     * summaries to find the label's GPUs). A refusal carries the node's full detail.
     */
    public PlacementResult placeOn(Claim claim, String nodeName) {
        Validate.notBlank("nodeName", nodeName);
        return decideAndCommit(claim, (c, idx, rules) -> decisions.onNode(c, nodeName, idx, rules));
    }

    /** Releases a tenant through the ledger ({@link Ledger#release}); idempotent. */
    public Optional<Placement> release(String tenantId) {
        return ledger.release(tenantId);
    }

    /**
     * The index of the ledger's current structure, brought up to date: only the nodes changed since
     * the last placement are refreshed (all of them after a structural change or a feed overflow).
     */
    private NodeIndex index() {
        NodeFeed feed = LedgerFeeds.of(ledger);
        NodeIndex idx = index;
        if (idx == null || idx.feed != feed) {
            idx = new NodeIndex(feed);
            index = idx;
        } else {
            idx.sync();
        }
        return idx;
    }

    // ------------------------------------------------------------------ explain

    private ExplainTerms explainer() {
        return new ExplainTerms(config, nodeScorers, nodeScorerWeights, setScorers, setScorerWeights, ledger);
    }

    // ------------------------------------------------------------------ builder

    /**
     * Fail-fast builder. Filters and scorers run in the order registered; scorer weights must be
     * finite and {@code >= 0}.
     */
    public static final class Builder {
        private final Ledger ledger;
        private PlacementConfig config = PlacementConfig.defaults();
        private final List<NodeFilter> nodeFilters = new ArrayList<>();
        private final List<GpuFilter> gpuFilters = new ArrayList<>();
        private final List<NodeScorer> nodeScorers = new ArrayList<>();
        private final List<Double> nodeScorerWeights = new ArrayList<>();
        private final List<GpuSetScorer> setScorers = new ArrayList<>();
        private final List<Double> setScorerWeights = new ArrayList<>();
        private Ticker ticker = Ticker.system();
        private int refusalDetail = DEFAULT_REFUSAL_DETAIL;
        private @Nullable FragmentationScorer fragmentation;
        /** The engine's memo of best sets ({@link SetMemo}); tests replace it (none, or a broken one). */
        java.util.function.Supplier<@Nullable SetMemo> setMemo = SetMemo::new;

        private Builder(Ledger ledger) {
            this.ledger = Validate.notNull("placementEngine.ledger", ledger);
        }

        public Builder config(PlacementConfig c) {
            this.config = Validate.notNull("placementEngine.config", c);
            return this;
        }

        /** Shorthand for a config with these engine-level default policies. */
        public Builder policies(PlacementPolicy node, PlacementPolicy gpu) {
            this.config = config.toBuilder().nodePolicy(node).gpuPolicy(gpu).build();
            return this;
        }

        public Builder nodeFilter(NodeFilter f) {
            nodeFilters.add(Validate.notNull("placementEngine.nodeFilter", f));
            return this;
        }

        public Builder gpuFilter(GpuFilter f) {
            gpuFilters.add(Validate.notNull("placementEngine.gpuFilter", f));
            return this;
        }

        public Builder nodeScorer(NodeScorer s, double weight) {
            Validate.notNull("placementEngine.nodeScorer", s);
            Validate.notBlank("placementEngine.nodeScorer.name", s.name());
            nodeScorers.add(s);
            nodeScorerWeights.add(PlacementConfig.weight("placementEngine.nodeScorer[" + s.name() + "].weight", weight));
            return this;
        }

        public Builder gpuSetScorer(GpuSetScorer s, double weight) {
            Validate.notNull("placementEngine.gpuSetScorer", s);
            Validate.notBlank("placementEngine.gpuSetScorer.name", s.name());
            setScorers.add(s);
            setScorerWeights.add(PlacementConfig.weight("placementEngine.gpuSetScorer[" + s.name() + "].weight", weight));
            return this;
        }

        /**
         * How many refused nodes an {@code Unschedulable} from {@link #place} details in full (per node
         * and per GPU, as {@link #explain} gives them); the causes are counted over every node
         * regardless. Default {@value PlacementEngine#DEFAULT_REFUSAL_DETAIL};
         * {@link PlacementEngine#ALL_NODES} details every node. At least 0.
         */
        public Builder refusalDetail(int nodes) {
            this.refusalDetail = Validate.atLeast("placementEngine.refusalDetail", nodes, 0);
            return this;
        }

        /**
         * The fragmentation term for claims whose node policy is {@code fragmentation}: a fixed mix or a
         * sliding sample, with or without host CPU; by default a sample of the last
         * {@link RequestSample#DEFAULT_CAPACITY} claims without CPU. One scorer per engine.
         */
        public Builder fragmentation(FragmentationScorer s) {
            this.fragmentation = Validate.notNull("placementEngine.fragmentation", s);
            return this;
        }

        /** The clock for {@link PlacementExplanation#elapsedNanos()}; {@link Ticker#system()} by default. */
        public Builder ticker(Ticker t) {
            this.ticker = Validate.notNull("placementEngine.ticker", t);
            return this;
        }

        public PlacementEngine build() {
            return new PlacementEngine(this);
        }
    }
}
