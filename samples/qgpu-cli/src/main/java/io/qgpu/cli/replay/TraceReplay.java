package io.qgpu.cli.replay;

import io.qgpu.api.Claim;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.FragmentationScorer;
import io.qgpu.core.placement.PlacementConfig;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.core.placement.RequestMix;
import io.qgpu.core.placement.RequestSample;
import java.util.List;
import java.util.Locale;
import java.util.function.Predicate;

/**
 * Replays a trace's arrival stream through a real {@link PlacementEngine} and {@link Ledger}: each pod
 * arrives once, in order, and is placed or refused (a refused pod is not retried); pods never leave.
 * Host CPU and memory are the nodes' host capacity and the claims' host requests, reserved by the
 * ledger with the slices; a pod without GPU is a host-only claim placed by the same engine.
 * After each pod it records the GPU capacity that has arrived and the capacity allocated, both in
 * thousandths of a GPU, so the allocation rate can be read at any share of arrived workload.
 *
 * <p>Thread safety: not thread-safe; a replay runs on one thread.
 */
public final class TraceReplay {

    /** The placement policies a replay can run. */
    public enum Policy {
        /** Node binpack, GPU binpack. */
        BINPACK,
        /** Node spread, GPU spread. */
        SPREAD,
        /** qgpu's defaults: node binpack, GPU spread. */
        DEFAULT,
        /** Fragmentation-aware, with the workload's typical requests as the mix and every node shortlisted. */
        FRAGMENTATION,
        /** Fragmentation-aware, with the engine's sliding sample of the last 1024 requests as the mix. */
        FRAGMENTATION_SAMPLE,
        /**
         * Kubernetes' default path, as a baseline: kube-scheduler's default node scoring and node sampling,
         * devices first-fit as the DRA structured allocator takes them ({@link KubeDraScheduler}).
         */
        KUBE_DRA,
        /**
         * qgpu's DRA allocator's own decision path ({@link DraReplay}): the nodes as the DRA driver's ResourceSlices,
         * the pods as ResourceClaims, decided by the allocator with the engine of {@link #FRAGMENTATION_SAMPLE}.
         */
        DRA_ALLOCATOR;

        public String wireName() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }

        public static Policy fromName(String name) {
            for (Policy p : values()) {
                if (p.wireName().equals(name)) {
                    return p;
                }
            }
            throw new InvalidValueException("--policies", name, "must be one of binpack, spread, default, fragmentation, fragmentation-sample, kube-dra, dra-allocator");
        }
    }

    /** The outcome: per arrived pod, the GPU capacity arrived and allocated so far. */
    public record Result(Policy policy, long seed, long capacityMilli, long[] arrivedMilli, long[] allocatedMilli,
                         int placed, int refused) {

        /** The allocation rate (0..1) once {@code share} (e.g. 1.3) of the capacity has arrived: at the last pod within it. */
        public double allocationAt(double share) {
            long limit = (long) Math.floor(share * capacityMilli + 1e-6);
            long alloc = 0;
            for (int i = 0; i < arrivedMilli.length && arrivedMilli[i] <= limit; i++) {
                alloc = allocatedMilli[i];
            }
            return (double) alloc / capacityMilli;
        }

        /** The arrived share at the end of the stream. */
        public double arrivedShare() {
            return arrivedMilli.length == 0 ? 0 : (double) arrivedMilli[arrivedMilli.length - 1] / capacityMilli;
        }
    }

    private TraceReplay() {
    }

    /**
     * {@link #run(List, List, Policy, long, RequestMix, int)} with the fragmentation policies scoring at the
     * paper's resolution ({@link FragmentationScorer#PAPER_RESOLUTION}).
     */
    public static Result run(List<TraceNode> nodes, List<TracePod> stream, Policy policy, long seed, RequestMix typical) {
        return run(nodes, stream, policy, seed, typical, FragmentationScorer.PAPER_RESOLUTION);
    }

    /**
     * Replays {@code stream} on {@code nodes}; {@code typical} is the mix of the fragmentation policy and
     * {@code resolution} the resolution of both fragmentation policies' scorer
     * ({@link FragmentationScorer#withResolution}; 0 for the exact score).
     */
    public static Result run(List<TraceNode> nodes, List<TracePod> stream, Policy policy, long seed, RequestMix typical,
                             int resolution) {
        return run(nodes, stream, policy, seed, typical, resolution, true);
    }

    /**
     * {@link #run(List, List, Policy, long, RequestMix, int)}, with the fragmentation policies' CPU balance term
     * on or off ({@link FragmentationScorer#withCpuBalance}; off: the paper's measure alone).
     */
    public static Result run(List<TraceNode> nodes, List<TracePod> stream, Policy policy, long seed, RequestMix typical,
                             int resolution, boolean cpuBalance) {
        return run(nodes, stream, policy, seed, typical, resolution, cpuBalance, EVERY_NODE);
    }

    /** {@code shortlist} of {@link #run(List, List, Policy, long, RequestMix, int, boolean, int)}: every node. */
    public static final int EVERY_NODE = 0;

    /**
     * {@link #run(List, List, Policy, long, RequestMix, int, boolean)}, with the shortlist of the fragmentation policies
     * and of {@link Policy#DRA_ALLOCATOR} ({@link PlacementConfig#shortlist()}): how many nodes, best first by load, get
     * their GPU sets and fragmentation term computed; {@link #EVERY_NODE} (the default) for all of them, as the FGD
     * paper's simulator scores every node. The other policies keep the engine's default shortlist.
     */
    public static Result run(List<TraceNode> nodes, List<TracePod> stream, Policy policy, long seed, RequestMix typical,
                             int resolution, boolean cpuBalance, int shortlist) {
        if (shortlist < 0) {
            throw new IllegalArgumentException("shortlist " + shortlist + ": must be " + EVERY_NODE + " (every node) or a number of nodes");
        }
        int fragShortlist = shortlist == EVERY_NODE ? Math.max(1, nodes.size()) : shortlist;
        List<Node> qnodes = TraceMapping.nodes(nodes);
        long smallest = TraceMapping.smallestMemory(nodes);
        long capacity = 0;
        for (TraceNode n : nodes) {
            capacity += 1000L * n.gpus();
        }
        Predicate<Claim> placer = switch (policy) {
            case KUBE_DRA -> {
                KubeDraScheduler kube = KubeDraScheduler.create(Ledger.create(TraceMapping.RULES, qnodes),
                        qnodes.stream().map(Node::name).toList(), seed);
                yield c -> kube.place(c) instanceof PlacementResult.Placed;
            }
            case DRA_ALLOCATOR -> DraReplay.create(qnodes,
                    ledger -> engine(ledger, Policy.FRAGMENTATION_SAMPLE, typical, fragShortlist, resolution, cpuBalance))::place;
            default -> {
                PlacementEngine engine = engine(Ledger.create(TraceMapping.RULES, qnodes), policy, typical, fragShortlist, resolution,
                        cpuBalance);
                yield c -> engine.place(c) instanceof PlacementResult.Placed;
            }
        };
        long[] arrived = new long[stream.size()];
        long[] allocated = new long[stream.size()];
        long a = 0;
        long got = 0;
        int placed = 0;
        for (int i = 0; i < stream.size(); i++) {
            TracePod p = stream.get(i);
            a += p.totalMilli();
            boolean ok = !TraceMapping.asksAnything(p);
            if (!ok) {
                ok = placer.test(TraceMapping.claim(p.name() + "#" + i, p, smallest));
            }
            if (ok) {
                placed++;
                got += p.totalMilli();
            }
            arrived[i] = a;
            allocated[i] = got;
        }
        return new Result(policy, seed, capacity, arrived, allocated, placed, stream.size() - placed);
    }

    static PlacementEngine engine(Ledger ledger, Policy policy, RequestMix typical, int fragShortlist, int resolution,
                                  boolean cpuBalance) {
        PlacementConfig.Builder cfg = PlacementConfig.builder();
        PlacementEngine.Builder b = PlacementEngine.builder(ledger);
        switch (policy) {
            case BINPACK -> cfg.nodePolicy(PlacementPolicy.BINPACK).gpuPolicy(PlacementPolicy.BINPACK);
            case SPREAD -> cfg.nodePolicy(PlacementPolicy.SPREAD).gpuPolicy(PlacementPolicy.SPREAD);
            case DEFAULT -> { }
            case FRAGMENTATION, FRAGMENTATION_SAMPLE -> {
                cfg.nodePolicy(PlacementPolicy.FRAGMENTATION).gpuPolicy(PlacementPolicy.FRAGMENTATION)
                        .shortlist(fragShortlist);
                FragmentationScorer s = policy == Policy.FRAGMENTATION ? FragmentationScorer.of(typical)
                        : FragmentationScorer.sampling(RequestSample.DEFAULT_CAPACITY);
                b.fragmentation(s.withResolution(resolution).withCpuBalance(cpuBalance));
            }
            default -> throw new IllegalStateException(policy + " is not placed by one engine call per pod");
        }
        return b.config(cfg.build()).build();
    }
}
