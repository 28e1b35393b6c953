package io.qgpu.core.placement;

import io.qgpu.api.Claim;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Validate;
import java.util.EnumMap;
import java.util.Map;

/**
 * How the {@link PlacementEngine} chooses among candidates: the node-level and GPU-level policies
 * (engine defaults, per priority class defaults, and the claim's own overrides), the weights of the
 * built-in score terms, and the bounds of the search. See {@link PlacementEngine} for the formulas.
 *
 * <pre>{@code
 * PlacementConfig cfg = PlacementConfig.builder()
 *         .nodePolicy(PlacementPolicy.BINPACK).gpuPolicy(PlacementPolicy.BINPACK)
 *         .classPolicy(PriorityClass.ONLINE, PlacementPolicy.SPREAD, PlacementPolicy.SPREAD)  // spread online
 *         .maxCommitAttempts(5)
 *         .build();
 * cfg.gpuPolicyFor(claim);   // claim.gpuPolicy(), else the class default, else gpuPolicy
 * }</pre>
 *
 * <p>Policy resolution for a claim, at each level separately: the claim's override
 * ({@link Claim#nodePolicy()}, {@link Claim#gpuPolicy()}), else the default of the claim's
 * priority class if one is set, else the engine default.
 *
 * @param nodePolicy         engine default at node level (default {@code binpack})
 * @param gpuPolicy          engine default at GPU level (default {@code spread}, as HAMi)
 * @param nodePolicyByClass  per priority class node-level defaults (may be empty)
 * @param gpuPolicyByClass   per priority class GPU-level defaults (may be empty)
 * @param maxCommitAttempts  how many times a placement is decided and committed before a lost race
 *                           is reported as {@code CONFLICT} (1..1000, default 8)
 * @param shortlist          how many best nodes by node score get their GPU sets searched (1.., default 8)
 * @param exhaustiveSetLimit up to this many candidate GPU sets per node are enumerated; beyond, a
 *                           greedy search with local improvement is used (1.., default 5000)
 * @param greedySeeds        seeds of the greedy set search (1.., default 8)
 * @param nodeWeight         weight of the node policy term (>= 0, default 1)
 * @param cliqueWeight       weight of the "every pair NVLink" term of a GPU set (>= 0, default 2)
 * @param linkWeight         weight of the mean link quality of a GPU set (>= 0, default 0.5)
 * @param loadWeight         weight of the GPU policy (load) term of a GPU set (>= 0, default 0.5)
 * @param leftoverWeight     weight of the look-ahead: how well the free GPUs a set leaves behind are
 *                           still connected, relative to the best set of the node (>= 0, default 0.5)
 * @param numaWeight         weight of the share of pairs of a set on one CPU NUMA node: within a node a
 *                           tie-break after NVLink bandwidth (scaled by {@link PlacementScores#TIE_BREAK}),
 *                           across nodes this weight (>= 0, default 0.1)
 * @param pcieWeight         weight of the PCIe closeness of a set's pairs: within a node the tie-break
 *                           after one NUMA node (scaled likewise), across nodes this weight (>= 0, default 0.05)
 * @param fragmentationWeight points a candidate loses per GPU of expected fragmentation it adds, for
 *                           claims whose node policy is {@code fragmentation} ({@link FragmentationScorer};
 *                           >= 0, default 100)
 *
 * <p>Thread safety: immutable.
 */
public record PlacementConfig(PlacementPolicy nodePolicy, PlacementPolicy gpuPolicy,
                              Map<PriorityClass, PlacementPolicy> nodePolicyByClass,
                              Map<PriorityClass, PlacementPolicy> gpuPolicyByClass,
                              int maxCommitAttempts, int shortlist, int exhaustiveSetLimit, int greedySeeds,
                              double nodeWeight, double cliqueWeight, double linkWeight, double loadWeight,
                              double leftoverWeight, double numaWeight, double pcieWeight, double fragmentationWeight) {

    public PlacementConfig {
        Validate.notNull("placementConfig.nodePolicy", nodePolicy);
        Validate.notNull("placementConfig.gpuPolicy", gpuPolicy);
        nodePolicyByClass = copy("placementConfig.nodePolicyByClass", nodePolicyByClass);
        gpuPolicyByClass = copy("placementConfig.gpuPolicyByClass", gpuPolicyByClass);
        Validate.between("placementConfig.maxCommitAttempts", maxCommitAttempts, 1, 1000);
        Validate.atLeast("placementConfig.shortlist", shortlist, 1);
        Validate.atLeast("placementConfig.exhaustiveSetLimit", exhaustiveSetLimit, 1);
        Validate.atLeast("placementConfig.greedySeeds", greedySeeds, 1);
        weight("placementConfig.nodeWeight", nodeWeight);
        weight("placementConfig.cliqueWeight", cliqueWeight);
        weight("placementConfig.linkWeight", linkWeight);
        weight("placementConfig.loadWeight", loadWeight);
        weight("placementConfig.leftoverWeight", leftoverWeight);
        weight("placementConfig.numaWeight", numaWeight);
        weight("placementConfig.pcieWeight", pcieWeight);
        weight("placementConfig.fragmentationWeight", fragmentationWeight);
    }

    private static Map<PriorityClass, PlacementPolicy> copy(String field, Map<PriorityClass, PlacementPolicy> m) {
        Validate.notNull(field, m);
        EnumMap<PriorityClass, PlacementPolicy> out = new EnumMap<>(PriorityClass.class);
        for (Map.Entry<PriorityClass, PlacementPolicy> e : m.entrySet()) {
            Validate.notNull(field + " key", e.getKey());
            out.put(e.getKey(), Validate.notNull(field + "[" + e.getKey().wireName() + "]", e.getValue()));
        }
        return java.util.Collections.unmodifiableMap(out);
    }

    static double weight(String field, double w) {
        if (!(w >= 0.0) || Double.isInfinite(w)) {
            throw new InvalidValueException(field, w, "a weight must be a finite number >= 0");
        }
        return w;
    }

    /** The defaults: node binpack, GPU spread, no class defaults, 8 commit attempts. */
    public static PlacementConfig defaults() {
        return builder().build();
    }

    /** The node-level policy for this claim: its override, else its class default, else {@link #nodePolicy()}. */
    public PlacementPolicy nodePolicyFor(Claim claim) {
        if (claim.nodePolicy().isPresent()) {
            return claim.nodePolicy().get();
        }
        PlacementPolicy p = nodePolicyByClass.get(claim.priority());
        return p != null ? p : nodePolicy;
    }

    /** The GPU-level policy for this claim: its override, else its class default, else {@link #gpuPolicy()}. */
    public PlacementPolicy gpuPolicyFor(Claim claim) {
        if (claim.gpuPolicy().isPresent()) {
            return claim.gpuPolicy().get();
        }
        PlacementPolicy p = gpuPolicyByClass.get(claim.priority());
        return p != null ? p : gpuPolicy;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A builder seeded with this configuration. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.nodePolicy = nodePolicy;
        b.gpuPolicy = gpuPolicy;
        b.nodeByClass.putAll(nodePolicyByClass);
        b.gpuByClass.putAll(gpuPolicyByClass);
        b.maxCommitAttempts = maxCommitAttempts;
        b.shortlist = shortlist;
        b.exhaustiveSetLimit = exhaustiveSetLimit;
        b.greedySeeds = greedySeeds;
        b.nodeWeight = nodeWeight;
        b.cliqueWeight = cliqueWeight;
        b.linkWeight = linkWeight;
        b.loadWeight = loadWeight;
        b.leftoverWeight = leftoverWeight;
        b.numaWeight = numaWeight;
        b.pcieWeight = pcieWeight;
        b.fragmentationWeight = fragmentationWeight;
        return b;
    }

    /** Fail-fast builder: {@link #build()} validates every field and names the one that is wrong. */
    public static final class Builder {
        private PlacementPolicy nodePolicy = PlacementPolicy.BINPACK;
        private PlacementPolicy gpuPolicy = PlacementPolicy.SPREAD;
        private final Map<PriorityClass, PlacementPolicy> nodeByClass = new EnumMap<>(PriorityClass.class);
        private final Map<PriorityClass, PlacementPolicy> gpuByClass = new EnumMap<>(PriorityClass.class);
        private int maxCommitAttempts = 8;
        private int shortlist = 8;
        private int exhaustiveSetLimit = 5000;
        private int greedySeeds = 8;
        private double nodeWeight = 1.0;
        private double cliqueWeight = 2.0;
        private double linkWeight = 0.5;
        private double loadWeight = 0.5;
        private double leftoverWeight = 0.5;
        private double numaWeight = 0.1;
        private double pcieWeight = 0.05;
        private double fragmentationWeight = 100.0;

        private Builder() {
        }

        public Builder nodePolicy(PlacementPolicy p) { this.nodePolicy = p; return this; }
        public Builder gpuPolicy(PlacementPolicy p) { this.gpuPolicy = p; return this; }

        /** Default node-level and GPU-level policies for claims of one priority class. */
        public Builder classPolicy(PriorityClass priority, PlacementPolicy node, PlacementPolicy gpu) {
            Validate.notNull("placementConfig.classPolicy.priority", priority);
            nodeByClass.put(priority, Validate.notNull("placementConfig.nodePolicyByClass[" + priority.wireName() + "]", node));
            gpuByClass.put(priority, Validate.notNull("placementConfig.gpuPolicyByClass[" + priority.wireName() + "]", gpu));
            return this;
        }

        public Builder maxCommitAttempts(int n) { this.maxCommitAttempts = n; return this; }
        public Builder shortlist(int n) { this.shortlist = n; return this; }
        public Builder exhaustiveSetLimit(int n) { this.exhaustiveSetLimit = n; return this; }
        public Builder greedySeeds(int n) { this.greedySeeds = n; return this; }
        public Builder nodeWeight(double w) { this.nodeWeight = w; return this; }
        public Builder cliqueWeight(double w) { this.cliqueWeight = w; return this; }
        public Builder linkWeight(double w) { this.linkWeight = w; return this; }
        public Builder loadWeight(double w) { this.loadWeight = w; return this; }
        public Builder leftoverWeight(double w) { this.leftoverWeight = w; return this; }
        public Builder numaWeight(double w) { this.numaWeight = w; return this; }
        public Builder pcieWeight(double w) { this.pcieWeight = w; return this; }
        public Builder fragmentationWeight(double w) { this.fragmentationWeight = w; return this; }

        public PlacementConfig build() {
            return new PlacementConfig(nodePolicy, gpuPolicy, nodeByClass, gpuByClass, maxCommitAttempts, shortlist,
                    exhaustiveSetLimit, greedySeeds, nodeWeight, cliqueWeight, linkWeight, loadWeight, leftoverWeight,
                    numaWeight, pcieWeight, fragmentationWeight);
        }
    }
}
