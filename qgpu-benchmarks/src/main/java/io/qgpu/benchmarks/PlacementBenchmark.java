package io.qgpu.benchmarks;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GpuState;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.HostCapacity;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Slice;
import io.qgpu.api.TopologyLevel;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.ReserveResult;
import io.qgpu.core.placement.FragmentationScorer;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.core.placement.RequestSample;
import io.qgpu.core.placement.RequestShape;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Placement latency and throughput on a partly filled cluster of {@code nodes} x 8 GPUs (half
 * DGX-1-style V100 hybrid cube-mesh nodes, half NVSwitch H100 nodes), against a baseline that
 * scores every GPU of every node the way HAMi does and sorts them.
 *
 * <p>Each operation places one claim and releases it again, so the cluster stays at the same fill
 * level; both the engine and the baseline commit through {@link Ledger#reserve} and release, so the
 * difference between them is the decision.
 *
 * <pre>
 *   ./mvnw -q package -pl qgpu-benchmarks -am -DskipTests
 *   java -jar qgpu-benchmarks/target/benchmarks.jar PlacementBenchmark -f 1 -wi 2 -i 3 -rf json
 * </pre>
 *
 * <p>Fill: about 30% of nodes are full (each GPU held exclusively); on the others each GPU has 0..3
 * tenants of 2..12 GiB and 5..40% compute, so roughly half of the cluster's memory is reserved.
 */
@State(Scope.Benchmark)
@BenchmarkMode({Mode.SampleTime, Mode.Throughput})
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xmx4g"})
public class PlacementBenchmark {

    @Param({"100", "1000", "10000"})
    public int nodes;

    /**
     * {@code default}: node binpack, GPU spread. {@code fragmentation}: the fragmentation-aware policy at
     * both levels, its sliding sample filled with 1,024 requests of the fill's shapes (shares of 10-100%
     * of one GPU and whole 1, 2, 4 or 8 GPUs), default shortlist.
     */
    @Param({"default", "fragmentation"})
    public String policy;

    /**
     * The fragmentation scorer's resolution ({@code FragmentationScorer.withResolution}): 0 the exact score
     * (the engine's default), 100 the paper's integer score. Only read when {@code policy} is fragmentation.
     */
    @Param({"0"})
    public int resolution;

    /**
     * {@code true}: every node has 96 cores ({@code HostCapacity}), the claims and the sample's shapes ask 8
     * cores per GPU, so the fragmentation measure's CPU balance term has work to do; {@code false} (the
     * figures before it existed): no host CPU anywhere, and the term is 0.
     */
    @Param({"false"})
    public boolean hostCpu;

    /** The fragmentation scorer's CPU balance term ({@code FragmentationScorer.withCpuBalance}). */
    @Param({"true"})
    public boolean cpuBalance;

    private Ledger ledger;
    private PlacementEngine engine;
    private Claim one;
    private Claim four;
    private GranularityRules rules;

    @Setup(Level.Trial)
    public void setUp() {
        rules = GranularityRules.ofDefaults();
        List<Node> all = new ArrayList<>(nodes);
        for (int i = 0; i < nodes; i++) {
            Node.Builder n = i % 2 == 0 ? dgx1Builder("n" + i) : nvswitchBuilder("n" + i);
            if (hostCpu) {
                n.host(HostCapacity.of(96_000, 1024L * GpuDevice.GIB));
            }
            all.add(n.build());
        }
        ledger = Ledger.create(rules, all);
        fill(ledger, all, new SplittableRandom(42));
        if (policy.equals("fragmentation")) {
            engine = PlacementEngine.builder(ledger).policies(PlacementPolicy.FRAGMENTATION, PlacementPolicy.FRAGMENTATION)
                    .fragmentation(FragmentationScorer.sampling(RequestSample.DEFAULT_CAPACITY).withResolution(resolution)
                            .withCpuBalance(cpuBalance)).build();
            RequestSample sample = engine.fragmentation().sample().orElseThrow();
            SplittableRandom r = new SplittableRandom(7);
            int[] whole = {1, 2, 4, 8};
            long perGpu = hostCpu ? 8_000 : 0;
            for (int i = 0; i < sample.capacity(); i++) {
                int k = whole[r.nextInt(4)];
                sample.record(r.nextInt(4) == 0 ? new RequestShape(k, 100, k * perGpu, java.util.Set.of())
                        : new RequestShape(1, 10 * (1 + r.nextInt(10)), perGpu, java.util.Set.of()));
            }
        } else {
            engine = PlacementEngine.create(ledger);
        }
        one = Claim.builder("bench-1").memoryGiB(4).compute(20, 60).priority(PriorityClass.OFFLINE)
                .cpuMillis(hostCpu ? 8_000 : 0).build();
        four = Claim.builder("bench-4").gpus(4).memoryGiB(8).compute(25, 100).priority(PriorityClass.OFFLINE)
                .cpuMillis(hostCpu ? 32_000 : 0).build();
        // sanity: both claims fit, so the benchmark measures placements, not failures
        check(engine.place(one));
        ledger.release(one.tenantId());
        check(engine.place(four));
        ledger.release(four.tenantId());
    }

    private static void check(PlacementResult r) {
        if (!(r instanceof PlacementResult.Placed)) {
            throw new IllegalStateException("benchmark claim does not fit: " + r);
        }
    }

    /** The floor every placer over the ledger pays: reading the current state of every node. */
    @Benchmark
    public Object ledgerView() {
        return ledger.nodes();
    }

    /** The engine: one single-GPU claim, placed and released. */
    @Benchmark
    public Object engineOneGpu() {
        PlacementResult r = engine.place(one);
        ledger.release(one.tenantId());
        return r;
    }

    /** The engine: one 4-GPU claim (topology-aware set search), placed and released. */
    @Benchmark
    public Object engineFourGpus() {
        PlacementResult r = engine.place(four);
        ledger.release(four.tenantId());
        return r;
    }

    /**
     * Baseline: score every GPU of every node the way HAMi does,
     * {@code 10 * (slots_used/slots + core_used/core_total + mem_used/mem_total)}, keep those that
     * fit, sort, pick the best (binpack: highest), then commit and release like the engine.
     */
    @Benchmark
    public Object hamiBaselineOneGpu() {
        List<NodeState> states = ledger.nodes();
        List<Scored> fits = new ArrayList<>();
        long mem = one.memoryPerGpuBytes();
        for (NodeState ns : states) {
            for (GpuState g : ns.gpus()) {
                int slots = rules.maxTenants(g.device());
                int coreUsed = g.guaranteed(PriorityClass.ONLINE) + g.guaranteed(PriorityClass.OFFLINE);
                if (!g.device().healthy() || g.heldExclusively() || g.tenants() >= slots || g.memoryFree() < mem
                        || g.computeFree(one.priority()) < one.computeRequest()) {
                    continue;
                }
                double score = 10.0 * ((double) g.tenants() / slots + coreUsed / 200.0
                        + (double) g.memoryUsed() / g.device().memoryBytes());
                fits.add(new Scored(score, ns.name(), g.uuid()));
            }
        }
        Scored[] sorted = fits.toArray(new Scored[0]);
        Arrays.sort(sorted, (a, b) -> Double.compare(b.score, a.score));
        Scored best = sorted[0];
        Placement p = new Placement(one, best.node, List.of(new Slice(best.gpu, mem, one.computeRequest(), one.computeLimit())));
        ReserveResult r = ledger.reserve(p);
        ledger.release(one.tenantId());
        return r;
    }

    private record Scored(double score, String node, String gpu) {
    }

    // ------------------------------------------------------------------ cluster

    static void fill(Ledger ledger, List<Node> nodes, SplittableRandom rnd) {
        int t = 0;
        for (Node n : nodes) {
            boolean full = rnd.nextInt(10) < 3;
            for (GpuDevice g : n.gpus()) {
                if (full) {
                    Claim c = Claim.builder("fill-" + t++).exclusive().build();
                    ledger.reserve(new Placement(c, n.name(), List.of(new Slice(g.uuid(), g.memoryBytes(), 100, 100))));
                    continue;
                }
                int tenants = rnd.nextInt(4);
                for (int i = 0; i < tenants; i++) {
                    long gib = 2 + rnd.nextInt(11);
                    int req = 5 * (1 + rnd.nextInt(8));
                    Claim c = Claim.builder("fill-" + t++).memoryGiB(gib).compute(req, 100)
                            .priority(rnd.nextBoolean() ? PriorityClass.ONLINE : PriorityClass.OFFLINE).build();
                    ledger.reserve(new Placement(c, n.name(), List.of(new Slice(g.uuid(), gib * GpuDevice.GIB, req, 100))));
                }
            }
        }
    }

    static Node dgx1(String name) {
        return dgx1Builder(name).build();
    }

    static Node.Builder dgx1Builder(String name) {
        Node.Builder b = Node.builder(name).label("gpu", "v100").defaultLink(new GpuLink.Pcie(TopologyLevel.SYSTEM));
        for (int i = 0; i < 8; i++) {
            b.gpu(GpuDevice.builder(name + "-g" + i).index(i).model("Tesla V100-SXM2-32GB").memoryGiB(32).numaNode(i / 4).build());
        }
        int[][] nv = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2}, {1, 3, 1}, {1, 5, 2}, {2, 3, 2}, {2, 6, 1},
                {3, 7, 1}, {4, 5, 1}, {4, 6, 1}, {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2}};
        for (int[] l : nv) {
            b.link(l[0], l[1], new GpuLink.NvLink(l[2]));
        }
        return b;
    }

    static Node nvswitch(String name) {
        return nvswitchBuilder(name).build();
    }

    static Node.Builder nvswitchBuilder(String name) {
        Node.Builder b = Node.builder(name).label("gpu", "h100").defaultLink(new GpuLink.NvLink(18));
        for (int i = 0; i < 8; i++) {
            b.gpu(GpuDevice.builder(name + "-g" + i).index(i).model("NVIDIA H100 80GB HBM3").memoryGiB(80).build());
        }
        return b;
    }
}
