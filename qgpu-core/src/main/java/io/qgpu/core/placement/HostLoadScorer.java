package io.qgpu.core.placement;

import io.qgpu.api.Claim;
import io.qgpu.api.ClusterView;
import io.qgpu.api.NodeState;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.Validate;
import io.qgpu.api.placement.NodeScorer;
import io.qgpu.api.placement.Score;
import java.util.Locale;
import java.util.OptionalLong;

/**
 * An opt-in node scorer that ranks nodes by their host resources, for deployments that want CPU and
 * host memory to weigh in where claims go (the built-in node score reads GPUs only).
 *
 * <pre>
 *   hostLoad(n, c) = max over the resources n declares of (reserved + requested by c) / capacity
 *                    (a declared capacity of 0 counts as full: 1)
 *   score = hostLoad        binpack: the node the claim leaves fullest
 *         = 1 - hostLoad    spread:  the node the claim leaves emptiest
 *         = 0.5             on a node that declares neither resource (neutral)
 * </pre>
 *
 * <pre>{@code
 * PlacementEngine engine = PlacementEngine.builder(ledger)
 *         .nodeScorer(HostLoadScorer.spread(), 1.0)   // keep CPU free evenly
 *         .build();
 * }</pre>
 *
 * <p>Cost: two reads of the node state per candidate; no allocation outside {@code explain}.
 *
 * <p>Thread safety: immutable.
 */
public final class HostLoadScorer implements NodeScorer {

    private static final HostLoadScorer BINPACK = new HostLoadScorer(PlacementPolicy.BINPACK);
    private static final HostLoadScorer SPREAD = new HostLoadScorer(PlacementPolicy.SPREAD);

    private final PlacementPolicy policy;

    private HostLoadScorer(PlacementPolicy policy) {
        this.policy = policy;
    }

    /** Prefers the node the claim leaves with the least free host resources. */
    public static HostLoadScorer binpack() {
        return BINPACK;
    }

    /** Prefers the node the claim leaves with the most free host resources. */
    public static HostLoadScorer spread() {
        return SPREAD;
    }

    /** The scorer for {@code policy}. */
    public static HostLoadScorer of(PlacementPolicy policy) {
        return Validate.notNull("hostLoadScorer.policy", policy) == PlacementPolicy.BINPACK ? BINPACK : SPREAD;
    }

    @Override
    public String name() {
        return "host-" + policy.wireName();
    }

    @Override
    public double score(Claim claim, NodeState node, ClusterView view) {
        double load = hostLoad(claim, node);
        return load < 0 ? 0.5 : PlacementScores.policyTerm(policy, load);
    }

    @Override
    public Score explain(Claim claim, NodeState node, ClusterView view) {
        double load = hostLoad(claim, node);
        if (load < 0) {
            return new Score(0.5, "the node declares no CPU or host memory: neutral 0.5");
        }
        double v = PlacementScores.policyTerm(policy, load);
        return new Score(v, String.format(Locale.ROOT, "host load %.3f after the claim (CPU %s, host memory %s); %s", load,
                share(node.host().cpuMillisUsed() + claim.host().cpuMillis(), node.node().host().cpuMillis()),
                share(node.host().memoryBytesUsed() + claim.host().memoryBytes(), node.node().host().memoryBytes()),
                policy == PlacementPolicy.BINPACK ? "binpack: score = load" : "spread: score = 1 - load"));
    }

    /** {@code hostLoad(n, c)}, or -1 when the node declares neither resource. */
    static double hostLoad(Claim claim, NodeState node) {
        double load = -1;
        OptionalLong cpu = node.node().host().cpuMillis();
        if (cpu.isPresent()) {
            load = ratio(node.host().cpuMillisUsed() + claim.host().cpuMillis(), cpu.getAsLong());
        }
        OptionalLong mem = node.node().host().memoryBytes();
        if (mem.isPresent()) {
            load = Math.max(load, ratio(node.host().memoryBytesUsed() + claim.host().memoryBytes(), mem.getAsLong()));
        }
        return load;
    }

    private static double ratio(long used, long capacity) {
        return capacity == 0 ? 1.0 : Math.min(1.0, (double) used / capacity);
    }

    private static String share(long used, OptionalLong capacity) {
        return capacity.isPresent() ? String.format(Locale.ROOT, "%.3f", ratio(used, capacity.getAsLong())) : "not tracked";
    }
}
