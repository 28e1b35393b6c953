package io.qgpu.benchmarks;

import io.qgpu.api.Claim;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.PriorityClass;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementEngine;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
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
 * A refusal against a successful placement, in the same run on the same full cluster
 * ({@link FullCluster}: {@code nodes} x 8 GPUs, half DGX-1V, half DGX H100, filled by a seeded
 * stream, seed 7), after 0.2% of the holders (seeded pick) were released so that small claims fit
 * again.
 *
 * <ul>
 *   <li>{@link #placeFits}: one claim that fits (1 GPU, 2 GiB, 5% offline), placed and released;</li>
 *   <li>{@link #refuse}: the next claim of the backlog, all of which the cluster refuses (256 claims of
 *       the scheduling pass's mix, in turn: 1, 2, 4 and 8 GPUs, shared and whole); the answer carries
 *       the causes with node counts and the detail of
 *       {@value io.qgpu.core.placement.PlacementEngine#DEFAULT_REFUSAL_DETAIL} nodes.</li>
 * </ul>
 * Both modes: the mean ({@code avgt}) and the distribution ({@code sample}: p99 is
 * {@code refuse:p0.99}).
 *
 * <pre>
 *   ./mvnw -q package -pl qgpu-benchmarks -am -DskipTests
 *   java -jar qgpu-benchmarks/target/benchmarks.jar RefusalBenchmark -f 1 -wi 2 -i 3 -w 1s -r 2s
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode({Mode.AverageTime, Mode.SampleTime})
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xmx4g"})
public class RefusalBenchmark extends RefusalBacklog {

    @Param({"4000", "10000"})
    public int nodes;


    @Setup(Level.Trial)
    public void setUp() {
        FullCluster fc = FullCluster.build(nodes, 256, 7);
        cluster(fc.ledger, fc.engine);
        SplittableRandom rnd = new SplittableRandom(11);
        List<String> holders = new ArrayList<>(fc.holders);
        for (int i = 0; i < holders.size() / 500; i++) {
            ledger.release(holders.remove(rnd.nextInt(holders.size())));
        }
        List<Claim> still = new ArrayList<>();
        for (Claim c : fc.pending) {
            if (stillRefused(c)) {   // one that fits again after the releases is not part of the backlog
                still.add(c);
            }
        }
        backlog(still, "no refused claim left");
    }

    /**
     * Refusals of every claim shape against a placement, on the same nearly full cluster (the same
     * {@link FullCluster}: DGX-1V nodes, NVLink on two NUMA nodes, beside DGX H100 nodes, NVSwitch;
     * filled by online and offline claims; 0.2% of the holders released, among the shared ones whose
     * GPUs keep another tenant, so that no GPU is empty and exclusive claims stay refused). {@code shape}
     * picks the refused claims, both classes alternating: {@code excl-1}, {@code excl-2}, {@code excl-4},
     * {@code excl-8} (whole GPUs); {@code shared-1} (1-64 GiB), {@code shared-2}, {@code shared-4},
     * {@code shared-8} (1-16 GiB per GPU), each with 0-95% compute; {@code mixed} cycles through all
     * eight ({@link #shape}). Claims are drawn (seed 13) until 256 are refused (at most 20,000 drawn;
     * a claim that fits somewhere is placed, released and dropped, so {@code setUp} fails if none of
     * a shape is refused). {@code placeFits} does not depend on the
     * shape: run it with one.
     *
     * <pre>
     *   java -jar qgpu-benchmarks/target/benchmarks.jar 'RefusalBenchmark.Shapes' -f 1 -wi 2 -i 3 -w 1s -r 1s -bm avgt
     * </pre>
     */
    @State(Scope.Benchmark)
    @BenchmarkMode({Mode.AverageTime, Mode.SampleTime})
    @OutputTimeUnit(TimeUnit.MICROSECONDS)
    @Warmup(iterations = 2, time = 1)
    @Measurement(iterations = 3, time = 2)
    @Fork(value = 1, jvmArgsAppend = {"-Xmx4g"})
    public static class Shapes extends RefusalBacklog {
        @Param({"4000", "10000"})
        public int nodes;

        @Param({"mixed", "excl-1", "shared-1", "excl-2", "shared-2", "excl-4", "shared-4", "excl-8", "shared-8"})
        public String shape;


        @Setup(Level.Trial)
        public void setUp() {
            FullCluster fc = FullCluster.build(nodes, 256, 7);
            cluster(fc.ledger, fc.engine);
            SplittableRandom rnd = new SplittableRandom(11);
            List<String> holders = new ArrayList<>(fc.holders);
            for (int released = 0, i = 0; released < holders.size() / 500 && i < 100 * holders.size(); i++) {
                String h = holders.get(rnd.nextInt(holders.size()));
                if (sharesItsGpus(ledger, h)) {
                    ledger.release(h);   // no GPU becomes empty: exclusive claims stay refused
                    holders.remove(h);
                    released++;
                }
            }
            List<Claim> still = new ArrayList<>();
            SplittableRandom draw = new SplittableRandom(13);
            for (int i = 0; still.size() < 256 && i < 20_000; i++) {
                Claim c = shape(shape, i, draw);
                if (stillRefused(c)) {
                    still.add(c);
                }
            }
            backlog(still, "no claim of shape " + shape + " is refused");
        }
    }

    /**
     * The refusal row of issue 40: a nearly full mixed cluster ({@code nodes} x 8 GPUs, half DGX-1V,
     * half DGX H100, {@link SchedulingPassBenchmark#cluster}), empty at first, filled by the mix
     * ({@link #mixClaim}: 70% shared 1-GPU, 15% exclusive 1-GPU, 10% exclusive 2-GPU, 4% exclusive
     * 4-GPU, 1% exclusive 8-GPU; seed 17) placed in order until 2,000 claims were refused and 256 of
     * them shared (exclusive claims are refused long before shared ones, once no GPU is empty); the
     * last 2,000 refused claims are {@code mix}'s, the last 256 of one shape that shape's; each is
     * tried again on the final state and dropped (placed and released) if it fits now. Nothing is
     * released: {@code placeFits} (1 GPU, 2 GiB, 5% offline, checked to fit) is the placement on the
     * very same full cluster.
     * {@code shape} picks which refused claims {@code refuse} cycles through: {@code mix} (the last
     * 2,000, in the order refused), or one shape: {@code shared-1}, {@code excl-1}, {@code excl-2},
     * {@code excl-4}, {@code excl-8}. {@code placeFits} is the placement on the very same state.
     *
     * <pre>
     *   java -jar qgpu-benchmarks/target/benchmarks.jar 'RefusalBenchmark.Mix' -f 1 -wi 3 -i 5 -w 1s -r 1s -bm avgt -tu us
     * </pre>
     */
    @State(Scope.Benchmark)
    @BenchmarkMode({Mode.AverageTime, Mode.SampleTime})
    @OutputTimeUnit(TimeUnit.MICROSECONDS)
    @Warmup(iterations = 3, time = 1)
    @Measurement(iterations = 5, time = 1)
    @Fork(value = 1, jvmArgsAppend = {"-Xmx4g"})
    public static class Mix extends RefusalBacklog {
        @Param({"4000"})
        public int nodes;

        @Param({"mix", "shared-1", "excl-1", "excl-2", "excl-4", "excl-8"})
        public String shape;


        @Setup(Level.Trial)
        public void setUp() {
            Ledger l = Ledger.create(io.qgpu.api.GranularityRules.ofDefaults(), SchedulingPassBenchmark.cluster(nodes));
            cluster(l, PlacementEngine.create(l));
            List<Claim> all = new ArrayList<>();
            SplittableRandom rnd = new SplittableRandom(17);
            int sharedRefused = 0;
            for (int i = 0; all.size() < 2_000 || sharedRefused < 256; i++) {
                Claim c = mixClaim(rnd, "mix-" + i);
                if (!(engine.place(c) instanceof PlacementResult.Placed)) {
                    all.add(c);
                    sharedRefused += c.exclusive() ? 0 : 1;
                }
                if (i > 10_000_000) {
                    throw new IllegalStateException("the cluster does not fill up");
                }
            }
            List<Claim> picked = new ArrayList<>();
            if (shape.equals("mix")) {
                picked.addAll(all.subList(all.size() - 2_000, all.size()));   // the last 2,000 refusals
            } else {
                for (Claim c : all) {
                    if (shape.equals(shapeOf(c))) {
                        picked.add(c);
                    }
                }
                picked = new ArrayList<>(picked.subList(Math.max(0, picked.size() - 256), picked.size()));
            }
            List<Claim> still = new ArrayList<>();
            for (Claim c : picked) {
                if (stillRefused(c)) {   // one that fits now is dropped
                    still.add(c);
                }
            }
            backlog(still, "no refused claim of shape " + shape);
        }
    }

    /**
     * The next claim of issue 40's mix: 70% shared 1-GPU (1-16 GiB, 0-50% guaranteed compute in steps
     * of 5), 15% exclusive 1-GPU, 10% exclusive 2-GPU, 4% exclusive 4-GPU, 1% exclusive 8-GPU; 40%
     * online.
     */
    static Claim mixClaim(SplittableRandom rnd, String tenantId) {
        int r = rnd.nextInt(100);
        Claim.Builder b = Claim.builder(tenantId)
                .priority(rnd.nextInt(10) < 4 ? PriorityClass.ONLINE : PriorityClass.OFFLINE);
        if (r < 70) {
            b.memoryGiB(1L + rnd.nextInt(16)).compute(5 * rnd.nextInt(11), 100);
        } else {
            b.gpus(r < 85 ? 1 : r < 95 ? 2 : r < 99 ? 4 : 8).exclusive();
        }
        return b.build();
    }

    /** {@code shared-1}, {@code excl-1}, ... for a claim of {@link #mixClaim}. */
    static String shapeOf(Claim c) {
        return (c.exclusive() ? "excl-" : "shared-") + c.gpuCount();
    }

    /** The placement both states time: a 2 GiB offline slice, checked to fit (placed, then released). */
    static Claim fittingClaim(PlacementEngine engine, Ledger ledger) {
        Claim fits = Claim.builder("bench-fits").memoryGiB(2).compute(5, 100).priority(PriorityClass.OFFLINE).build();
        if (!(engine.place(fits) instanceof PlacementResult.Placed)) {
            throw new IllegalStateException("the fitting claim does not fit");
        }
        ledger.release(fits.tenantId());
        return fits;
    }

    /** Whether every GPU the holder's placement is on holds another tenant too. */
    static boolean sharesItsGpus(Ledger ledger, String holder) {
        io.qgpu.api.Placement p = ledger.placement(holder).orElse(null);
        if (p == null || p.claim().exclusive()) {
            return false;
        }
        io.qgpu.api.NodeState n = ledger.node(p.nodeName()).orElseThrow();
        for (String uuid : p.gpuUuids()) {
            if (n.gpus().stream().filter(g -> g.uuid().equals(uuid)).findFirst().orElseThrow().tenants() < 2) {
                return false;
            }
        }
        return true;
    }

    /** The shape names of {@link Shapes#shape}, in the order {@code mixed} cycles through them. */
    static final List<String> SHAPES = List.of("excl-1", "shared-1", "excl-2", "shared-2", "excl-4", "shared-4",
            "excl-8", "shared-8");

    /**
     * Claim {@code i} of a shape kind, classes alternating. Shared claims draw their memory per GPU
     * from 1-64 GiB (1 GPU) or 1-16 GiB and their compute from 0-95% in steps of 5, so that what the
     * cluster refuses is a mix of claims short of memory, of compute, or of both on one GPU.
     */
    static Claim shape(String shape, int i, SplittableRandom rnd) {
        if (!shape.equals("mixed") && !SHAPES.contains(shape)) {
            throw new IllegalArgumentException("shape " + shape + ": mixed or one of " + SHAPES);
        }
        PriorityClass cls = i % 2 == 0 ? PriorityClass.ONLINE : PriorityClass.OFFLINE;
        Claim.Builder b = Claim.builder("shape-" + i).priority(cls);
        String kind = shape.equals("mixed") ? SHAPES.get((i / 2) % SHAPES.size()) : shape;
        int k = Integer.parseInt(kind.substring(kind.indexOf('-') + 1));
        b.gpus(k);
        if (kind.startsWith("excl")) {
            b.exclusive();
        } else {
            b.memoryGiB(1L + rnd.nextInt(k == 1 ? 64 : 16)).compute(5 * rnd.nextInt(20), 100);
        }
        return b.build();
    }

}
