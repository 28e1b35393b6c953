package io.qgpu.core.placement;

import io.qgpu.api.Claim;
import io.qgpu.api.ClusterView;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.NodeState;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.Validate;
import io.qgpu.api.placement.GpuSet;
import io.qgpu.api.placement.GpuSetScorer;
import io.qgpu.api.placement.Score;
import java.util.Locale;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;
import org.jspecify.annotations.Nullable;

/**
 * The fragmentation term of the {@link PlacementPolicy#FRAGMENTATION} policy: scores a candidate GPU
 * set by how little it grows the node's expected fragmentation ({@link Fragmentation}). The
 * {@link PlacementEngine} registers one with every engine (for claims of another node policy it
 * scores 0 and changes nothing, and explain shows no line for it); give it your own with
 * {@link PlacementEngine.Builder#fragmentation}.
 *
 * <h2>Score</h2>
 * <pre>
 *   score(S) = clamp01(0.5 - delta(n, S) / (200 x 64))
 * </pre>
 * registered with weight {@code fragmentationWeight x 128}, so that a set growing fragmentation by one
 * GPU more than another (delta larger by 100) scores {@code fragmentationWeight} less (nodes of up to 64
 * GPUs stay inside the clamp). With the default weight of 100 the fragmentation term decides unless two
 * candidates differ by less than about 5% of one GPU, where the other terms (binpack load, link quality,
 * what a set leaves behind; about 5 points together) break the tie.
 *
 * <p><b>Resolution</b> ({@link #withResolution}): at {@code r} steps the score is
 * {@code floor(r x sigmoid(-delta(n, S) / 100)) / r}, with the same weight, so one step is worth
 * {@code fragmentationWeight x 128 / r} points (128 at the defaults and {@code r = 100}) and outweighs
 * every other term: candidates whose deltas land in the same step are ranked by binpack load, then
 * cluster order. {@code r = 100} ({@link #PAPER_RESOLUTION}) is the paper's reference scorer (an integer
 * out of 100); there a delta within a few percent of one GPU of another lands in the same step.
 *
 * <h2>Where the mix comes from</h2>
 * {@link #sampling(int)}: a {@link RequestSample} of the most recent claims the engine was asked to
 * place; {@link #of(RequestMix)}: a fixed distribution the caller provides (a workload's
 * "typical" requests, say).
 *
 * <h2>Host CPU</h2>
 * A shape that asks more CPU than the node has free cannot run there, so all of the node's free GPU
 * capacity is fragmentation for it. Beyond the next request, the CPU balance term (on by default,
 * {@link #withCpuBalance}) counts the free GPU compute that the node's free CPU cannot feed at the CPU
 * the mix asks per percent of GPU ({@link RequestMix#cpuPerGpuPercent}). By default the node's free CPU is {@link NodeState#cpuMillisFree()}
 * (unlimited where the node does not track CPU) and the claim's is its {@code host().cpuMillis()};
 * {@link #withHostCpu} replaces both.
 *
 * <h2>Host-only claims</h2>
 * A claim without GPUs has no GPU set; under the fragmentation policy its node gets
 * {@link #hostOnlyScore} (the same score for the empty set: only the CPU it takes can grow
 * fragmentation), with the same weight.
 *
 * <pre>{@code
 * FragmentationScorer fgd = FragmentationScorer.of(RequestMix.of(typicalWeights))
 *         .withHostCpu(node -> cpuFree.get(node.name()), claim -> cpuAsked.get(claim.tenantId()));
 * PlacementEngine engine = PlacementEngine.builder(ledger)
 *         .policies(PlacementPolicy.FRAGMENTATION, PlacementPolicy.FRAGMENTATION)
 *         .fragmentation(fgd)
 *         .build();
 * }</pre>
 *
 * <p>Use one scorer per engine: the engine binds it to its configuration when built.
 *
 * <p>Thread safety: thread-safe; the sample is thread-safe and the per-thread cache of the last node's
 * profile is confined to its thread.
 */
public final class FragmentationScorer implements GpuSetScorer {
    /** Nodes of up to this many GPUs keep {@code delta} inside the score's clamp. */
    public static final int SCALE_GPUS = 64;
    /** The engine registers this scorer with weight {@code fragmentationWeight x WEIGHT_SCALE}. */
    public static final double WEIGHT_SCALE = 2.0 * SCALE_GPUS;

    /** {@link #withResolution} value for the exact, linear score (the default). */
    public static final int EXACT = 0;
    /** The resolution of the paper's reference scorer: an integer score out of 100. */
    public static final int PAPER_RESOLUTION = 100;
    /** The largest resolution {@link #withResolution} accepts. */
    public static final int MAX_RESOLUTION = 1_000_000;

    private final @Nullable RequestSample sample;
    private final Supplier<RequestMix> mix;
    private final int resolution;
    private final ToLongFunction<NodeState> cpuFree;
    private final ToLongFunction<Claim> cpuAsked;
    private final boolean cpuBalance;
    private volatile PlacementConfig config = PlacementConfig.defaults();
    @SuppressWarnings("ThreadLocalUsage") // per scorer on purpose: the cache is valid only for this scorer's mix and CPU functions
    private final ThreadLocal<Cached> last = new ThreadLocal<>();

    private record Cached(NodeState node, RequestMix mix, long cpu, Fragmentation.Profile profile) {
    }

    private FragmentationScorer(@Nullable RequestSample sample, Supplier<RequestMix> mix, ToLongFunction<NodeState> cpuFree,
                                ToLongFunction<Claim> cpuAsked, int resolution, boolean cpuBalance) {
        this.cpuBalance = cpuBalance;
        this.sample = sample;
        this.mix = mix;
        this.resolution = resolution;
        this.cpuFree = cpuFree;
        this.cpuAsked = cpuAsked;
    }

    /** A scorer whose mix is a sliding sample of the last {@code capacity} claims. */
    public static FragmentationScorer sampling(int capacity) {
        RequestSample s = new RequestSample(capacity);
        return new FragmentationScorer(s, s::mix, FragmentationScorer::nodeCpuFree, FragmentationScorer::claimCpu, EXACT, true);
    }

    /** A scorer with a fixed mix. */
    public static FragmentationScorer of(RequestMix fixed) {
        Validate.notNull("fragmentationScorer.mix", fixed);
        return new FragmentationScorer(null, () -> fixed, FragmentationScorer::nodeCpuFree, FragmentationScorer::claimCpu, EXACT, true);
    }

    private static long nodeCpuFree(NodeState n) {
        return n.cpuMillisFree().orElse(Long.MAX_VALUE);
    }

    private static long claimCpu(Claim c) {
        return c.host().cpuMillis();
    }

    /** A copy that knows each node's free host CPU and each claim's CPU request, in millicores. */
    public FragmentationScorer withHostCpu(ToLongFunction<NodeState> free, ToLongFunction<Claim> asked) {
        return new FragmentationScorer(sample, mix, Validate.notNull("fragmentationScorer.cpuFree", free),
                Validate.notNull("fragmentationScorer.cpuAsked", asked), resolution, cpuBalance);
    }

    /**
     * A copy that scores at a coarser resolution: {@code floor(steps x sigmoid(-delta / 100)) / steps}, so
     * candidates whose deltas fall in the same step tie on this term and the other terms (binpack load,
     * then cluster order) rank them. {@link #PAPER_RESOLUTION} (100) is the paper's reference scorer: an
     * integer score out of 100 of the sigmoid of the reduction in GPUs, in which deltas within a few percent
     * of one GPU tie. {@link #EXACT} (0, the default) is the exact linear score.
     *
     * @param steps {@link #EXACT}, or 1..{@link #MAX_RESOLUTION}
     * @throws InvalidValueException naming {@code fragmentationScorer.resolution} for any other value
     */
    public FragmentationScorer withResolution(int steps) {
        if (steps < 0 || steps > MAX_RESOLUTION) {
            throw new InvalidValueException("fragmentationScorer.resolution", steps,
                    "must be 0 (exact) or 1.." + MAX_RESOLUTION + " steps");
        }
        return new FragmentationScorer(sample, mix, cpuFree, cpuAsked, steps, cpuBalance);
    }

    /**
     * A copy with or without the CPU balance term ({@link Fragmentation}: {@code S(n)}, the free GPU compute a
     * node's free CPU cannot feed at the mix's CPU per GPU). On by default; {@code false} scores with the
     * paper's measure alone, which looks one request ahead and so leaves GPUs stranded behind CPU that the
     * requests after it take (the trace replay in docs/placement-measurements.md measures both).
     */
    public FragmentationScorer withCpuBalance(boolean on) {
        return new FragmentationScorer(sample, mix, cpuFree, cpuAsked, resolution, on);
    }

    /** Whether the measure includes the CPU balance term (the default). */
    public boolean cpuBalance() {
        return cpuBalance;
    }

    /** The resolution of the score: {@link #EXACT} or the number of steps. */
    public int resolution() {
        return resolution;
    }

    /** A copy that scores with today's mix, fixed, and records nothing (for trial placements on a scratch copy). */
    FragmentationScorer frozen() {
        RequestMix now = mix.get();
        return new FragmentationScorer(null, () -> now, cpuFree, cpuAsked, resolution, cpuBalance);
    }

    /** The sliding sample, when this scorer samples. */
    public java.util.Optional<RequestSample> sample() {
        return java.util.Optional.ofNullable(sample);
    }

    /** The mix the next score uses. */
    public RequestMix mix() {
        return mix.get();
    }

    /**
     * Called by the engine for each claim it is asked to place: adds it to the sample, if any. At the
     * exact resolution host-only claims are not sampled: as a {@link RequestShape#hostOnly host-only shape}
     * they would add their probability times the capacity a claim takes to each candidate's delta, the
     * same wherever the claim's share is free in this measure, and mostly dilute the other shapes. At a
     * coarser resolution that shift moves deltas across steps, so they are sampled, as the paper counts
     * CPU-only pods among its typical pods.
     */
    void record(Claim claim) {
        if (sample == null || (claim.gpuCount() == 0 && resolution == EXACT)) {
            return;
        }
        long cpu = cpuAsked.applyAsLong(claim);
        if (claim.gpuCount() == 0) {
            sample.record(RequestShape.hostOnly(cpu));
            return;
        }
        RequestShape s = RequestShape.of(claim);
        sample.record(cpu == s.cpuMillis() ? s : new RequestShape(s.gpus(), s.computePercent(), cpu, s.models()));
    }

    /** Called by the engine when it is built: claims whose node policy resolves to fragmentation are scored. */
    void bind(PlacementConfig c) {
        this.config = c;
    }

    @Override
    public String name() {
        return "fragmentation";
    }

    @Override
    public double score(Claim claim, NodeState node, GpuSet gpus, ClusterView view) {
        if (config.nodePolicyFor(claim) != PlacementPolicy.FRAGMENTATION) {
            return 0.0;
        }
        return toScore(delta(claim, node, gpus), resolution);
    }

    /** {@code delta(n, S)} for this claim on {@code gpus} of {@code node}, with the current mix. */
    public double delta(Claim claim, NodeState node, GpuSet gpus) {
        int share = claim.exclusive() ? 100 : Math.max(1, Math.min(100, claim.computeRequest()));
        return profile(node).delta(gpus.positions(), share, cpuAsked.applyAsLong(claim));
    }

    /**
     * The score of a host-only claim on {@code node} (no GPU set): {@code toScore(delta)} of the CPU it
     * takes; 0 for claims of another node policy.
     */
    public double hostOnlyScore(Claim claim, NodeState node) {
        if (config.nodePolicyFor(claim) != PlacementPolicy.FRAGMENTATION) {
            return 0.0;
        }
        return toScore(profile(node).delta(new int[0], 0, cpuAsked.applyAsLong(claim)), resolution);
    }

    /** The exact score of a delta: {@code clamp01(0.5 - delta / (200 x 64))}. */
    static double toScore(double delta) {
        return Math.max(0.0, Math.min(1.0, 0.5 - delta / (200.0 * SCALE_GPUS)));
    }

    /**
     * The score of a delta at a resolution: {@link #toScore(double)} when {@code resolution} is 0, else
     * {@code floor(resolution x sigmoid(-delta / 100)) / resolution}.
     */
    static double toScore(double delta, int resolution) {
        if (resolution == EXACT) {
            return toScore(delta);
        }
        return Math.floor(resolution / (1.0 + Math.exp(delta / 100.0))) / resolution;
    }

    @SuppressWarnings("ReferenceEquality") // identity meant: the cache hits only for the very same node snapshot and mix
    private Fragmentation.Profile profile(NodeState node) {
        RequestMix m = mix.get();
        long cpu = cpuFree.applyAsLong(node);
        Cached c = last.get();
        if (c != null && c.node == node && c.mix == m && c.cpu == cpu) {
            return c.profile;
        }
        Fragmentation.Profile p = Fragmentation.profile(node, cpu, m, cpuBalance);
        last.set(new Cached(node, m, cpu, p));
        return p;
    }

    @Override
    public Score explain(Claim claim, NodeState node, GpuSet gpus, ClusterView view) {
        if (config.nodePolicyFor(claim) != PlacementPolicy.FRAGMENTATION) {
            return new Score(0.0, "not used: the claim's node policy is " + config.nodePolicyFor(claim).wireName());
        }
        Fragmentation.Profile p = profile(node);
        double d = delta(claim, node, gpus);
        String rule = resolution == EXACT ? "score = 0.5 - delta / " + (200 * SCALE_GPUS)
                : "score = floor(" + resolution + " x sigmoid(-delta / 100)) / " + resolution;
        return new Score(toScore(d, resolution), String.format(Locale.ROOT,
                "expected fragmentation %.1f%% of a GPU now (%.1f of it stranded by CPU), %+.1f with this set (%d request shapes); %s",
                p.fragmentation(), p.cpuStranded(), d, mix.get().size(), rule));
    }
}
