package io.qgpu.cli.replay;

import io.qgpu.api.Claim;
import io.qgpu.api.ClusterView;
import io.qgpu.api.HostHolding;
import io.qgpu.api.NodeState;
import io.qgpu.api.placement.NodeScorer;
import io.qgpu.api.placement.Score;
import java.util.Locale;
import java.util.OptionalLong;

/**
 * The node score of kube-scheduler's default profile for a pod, as a {@link NodeScorer}: the part of
 * the total that differs between the nodes of the trace replay, {@code fit + balanced} (0..200),
 * reported as {@code (fit + balanced) / 200}.
 *
 * <ul>
 *   <li><b>{@code fit}</b>: NodeResourcesFit with its default strategy, LeastAllocated, over CPU and
 *       memory at weight 1 each: per resource {@code (capacity - requested) * 100 / capacity} in whole
 *       numbers (0 when the request passes the capacity or the capacity is 0), then the weighted mean,
 *       again rounded down. {@code requested} is the node's requests plus the pod's, each pod counted
 *       with its "non-zero" request: a pod that asks no CPU counts as {@value #DEFAULT_CPU_MILLIS}
 *       millicores, one that asks no memory as 200 MiB ({@link #DEFAULT_MEMORY_BYTES}).</li>
 *   <li><b>{@code balanced}</b>: NodeResourcesBalancedAllocation: the CPU and memory fractions
 *       {@code requested / capacity} (each capped at 1), with the actual requests (node's plus the
 *       pod's, no defaults), their standard deviation, which for two resources is
 *       {@code |f_cpu - f_mem| / 2}, and {@code (1 - std) * 100} rounded down. A pod that asks neither
 *       CPU nor memory is not scored by it (0 on every node).</li>
 * </ul>
 * Both plugins have weight 1 in the default profile. The other default score plugins (TaintToleration,
 * NodeAffinity, PodTopologySpread, InterPodAffinity, ImageLocality, and DynamicResources, which scores
 * only claims with prioritized alternatives) score every node of the replay alike: the trace has no
 * taints, affinities, topology spread constraints, images or alternatives. A node that does not
 * declare a resource counts capacity 0 for it (the replay's nodes declare both).
 *
 * <p>Not counted: a tenant holding GPUs but no host resources at all (a claim with neither CPU nor
 * memory) adds nothing to the node's non-zero requests here, where kube-scheduler would count the
 * defaults for it; every pod of the trace asks CPU, so the replay never has one.
 *
 * <p>Thread safety: immutable; thread-safe and side-effect free, as a {@link NodeScorer} must be.
 */
public final class KubeScoring implements NodeScorer {
    /** kube-scheduler's highest score of one plugin. */
    public static final int MAX_NODE_SCORE = 100;
    /** The most {@code fit + balanced} can be: 100 each, at weight 1. */
    public static final int MAX_TOTAL = 2 * MAX_NODE_SCORE;
    /** The CPU a pod that asks none counts for LeastAllocated, millicores. */
    public static final long DEFAULT_CPU_MILLIS = 100;
    /** The memory a pod that asks none counts for LeastAllocated: 200 MiB. */
    public static final long DEFAULT_MEMORY_BYTES = 200L * 1024 * 1024;

    @Override
    public String name() {
        return "kube-default";
    }

    /** LeastAllocated's score of one resource: {@code (capacity - requested) * 100 / capacity}, rounded down. */
    public static long leastAllocated(long requested, long capacity) {
        if (capacity <= 0 || requested > capacity) {
            return 0;
        }
        return (capacity - requested) * MAX_NODE_SCORE / capacity;
    }

    /** NodeResourcesFit (LeastAllocated, CPU and memory at weight 1): the two scores' mean, rounded down. */
    public static long fit(long cpuRequested, long cpuCapacity, long memRequested, long memCapacity) {
        return (leastAllocated(cpuRequested, cpuCapacity) + leastAllocated(memRequested, memCapacity)) / 2;
    }

    /**
     * NodeResourcesBalancedAllocation: {@code (1 - |f_cpu - f_mem| / 2) * 100} rounded down, each fraction
     * capped at 1; a resource of capacity 0 is left out (with one fraction or none left, the deviation is 0).
     */
    public static long balanced(long cpuRequested, long cpuCapacity, long memRequested, long memCapacity) {
        if (cpuCapacity <= 0 || memCapacity <= 0) {
            return MAX_NODE_SCORE;
        }
        double fc = Math.min(1.0, (double) cpuRequested / cpuCapacity);
        double fm = Math.min(1.0, (double) memRequested / memCapacity);
        double std = Math.abs(fc - fm) / 2;
        return (long) ((1 - std) * MAX_NODE_SCORE);
    }

    /** {@code fit + balanced} of the claim's pod on the node (0..{@value #MAX_TOTAL}). */
    public static long total(Claim claim, NodeState node) {
        long cpuCap = capacity(node.node().host().cpuMillis());
        long memCap = capacity(node.node().host().memoryBytes());
        long podCpu = claim.host().cpuMillis();
        long podMem = claim.host().memoryBytes();
        long nzCpu = 0;
        long nzMem = 0;
        for (HostHolding h : node.host().holdings()) {
            nzCpu += h.cpuMillis() == 0 ? DEFAULT_CPU_MILLIS : h.cpuMillis();
            nzMem += h.memoryBytes() == 0 ? DEFAULT_MEMORY_BYTES : h.memoryBytes();
        }
        long f = fit(nzCpu + (podCpu == 0 ? DEFAULT_CPU_MILLIS : podCpu), cpuCap,
                nzMem + (podMem == 0 ? DEFAULT_MEMORY_BYTES : podMem), memCap);
        long b = podCpu == 0 && podMem == 0 ? 0
                : balanced(node.host().cpuMillisUsed() + podCpu, cpuCap, node.host().memoryBytesUsed() + podMem, memCap);
        return f + b;
    }

    private static long capacity(OptionalLong declared) {
        return declared.isPresent() ? declared.getAsLong() : 0;
    }

    @Override
    public double score(Claim claim, NodeState node, ClusterView view) {
        return (double) total(claim, node) / MAX_TOTAL;
    }

    @Override
    public Score explain(Claim claim, NodeState node, ClusterView view) {
        long t = total(claim, node);
        return new Score((double) t / MAX_TOTAL, String.format(Locale.ROOT,
                "kube-scheduler default score %d of %d (LeastAllocated + BalancedAllocation)", t, MAX_TOTAL));
    }

    /** The integer total a score of this scorer stands for (the inverse of {@link #score}, exact). */
    public static long totalOf(double score) {
        return Math.round(score * MAX_TOTAL);
    }
}
