package io.qgpu.benchmarks;

import io.qgpu.api.Claim;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.PriorityClass;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.testkit.machines.Machines;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
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
 * One scheduling pass at cluster scale: {@code claims} claims placed one after another by the
 * {@link PlacementEngine} onto {@code nodes} x 8 GPUs from an empty ledger (half DGX-1V nodes, V100
 * 32 GB in a hybrid cube mesh; half DGX H100 nodes, H100 80 GB on NVSwitch; the testkit's fake
 * machines). One operation is the whole pass; the time is the pass's total.
 *
 * <p>The claims are a seeded mix ({@link #claims(int, long)}, seed {@code seed}): 80% one GPU, 10%
 * two, 7% four, 3% eight; 4% whole GPUs (exclusive), the others shared slices of 1..4 GiB and 0, 5
 * or 10% guaranteed compute (limit 100%); 40% online, 60% offline. That is about 1.5 GPUs per claim
 * and 6.6 claims per GPU on average, the density of 140,000 pods on 4,000 nodes of 8 GPUs: most
 * claims fit, the cluster ends nearly full, and the claims that no longer fit are refused (the
 * engine has to show that no node can take them, which is part of a real pass).
 *
 * <p>Two ways to run it:
 * <pre>
 *   ./mvnw -q package -pl qgpu-benchmarks -am -DskipTests
 *   # JMH single shot: 2 warm-up passes, 5 measured passes, 1 fork, -Xms6g -Xmx6g -XX:+AlwaysPreTouch (a fixed, pre-touched heap)
 *   java -jar qgpu-benchmarks/target/benchmarks.jar SchedulingPassBenchmark
 *   # the plain main: same pass, prints time, claims per second, placed and refused per pass
 *   java -Xms6g -Xmx6g -XX:+AlwaysPreTouch -cp qgpu-benchmarks/target/benchmarks.jar io.qgpu.benchmarks.SchedulingPassBenchmark [warmups] [passes] [nodes] [claims]
 *   # the hash of every answer of one pass (the docs' placement hashes): hash [nodes] [claims]
 *   java -cp qgpu-benchmarks/target/benchmarks.jar io.qgpu.benchmarks.SchedulingPassBenchmark hash 4000 140000
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2)
@Measurement(iterations = 5)
@Fork(value = 1, jvmArgsAppend = {"-Xms6g", "-Xmx6g", "-XX:+AlwaysPreTouch"})
public class SchedulingPassBenchmark {

    @Param("4000")
    public int nodes;

    @Param("140000")
    public int claims;

    @Param("13")
    public long seed;

    private List<Node> cluster;
    private List<Claim> mix;
    private PlacementEngine engine;

    @Setup(Level.Trial)
    public void trial() {
        cluster = cluster(nodes);
        mix = claims(claims, seed);
    }

    /** A fresh, empty ledger for every pass (not timed). */
    @Setup(Level.Iteration)
    public void emptyLedger() {
        engine = PlacementEngine.create(Ledger.create(GranularityRules.ofDefaults(), cluster));
    }

    /** The pass: every claim placed or refused. */
    @Benchmark
    public Outcome pass() {
        return pass(engine, mix);
    }

    /** How a pass ended. */
    public record Outcome(int placed, int refused) {
    }

    static Outcome pass(PlacementEngine engine, List<Claim> claims) {
        int placed = 0;
        for (Claim c : claims) {
            if (engine.place(c) instanceof PlacementResult.Placed) {
                placed++;
            }
        }
        return new Outcome(placed, claims.size() - placed);
    }

    /**
     * The pass with every answer hashed in order ({@code h = 31 h + hash(node name + GPU UUIDs)} for a
     * placement, {@code 31 h + 7} for a refusal, from 17): equal hashes mean the same node and GPUs for
     * every claim. {@code PlacementsUnchangedTest} pins it on 100 nodes; the plain main prints it
     * ({@code hash [nodes] [claims]}) for the pass at any size.
     */
    static Hashed hashed(PlacementEngine engine, List<Claim> claims) {
        long h = 17;
        int placed = 0;
        for (Claim c : claims) {
            if (engine.place(c) instanceof PlacementResult.Placed p) {
                placed++;
                h = h * 31 + (p.placement().nodeName() + p.placement().gpuUuids()).hashCode();
            } else {
                h = h * 31 + 7;
            }
        }
        return new Hashed(placed, claims.size() - placed, h);
    }

    /** A hashed pass: how many claims were placed and refused, and the hash of every answer. */
    record Hashed(int placed, int refused, long hash) {
        @Override
        public String toString() {
            return placed + " placed, " + refused + " refused, hash " + Long.toHexString(hash);
        }
    }

    /** {@code n} nodes: even indices DGX-1V, odd ones DGX H100. */
    static List<Node> cluster(int n) {
        List<Node> all = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            all.add(i % 2 == 0 ? Machines.DGX_1V.node("v100-" + i) : Machines.DGX_H100.node("h100-" + i));
        }
        return all;
    }

    /** The seeded claim mix described in the class comment. */
    static List<Claim> claims(int n, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<Claim> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(claim(rnd, "pass-" + i));
        }
        return out;
    }

    /** The next claim of the mix. */
    static Claim claim(SplittableRandom rnd, String tenantId) {
        int r = rnd.nextInt(100);
        int gpus = r < 80 ? 1 : r < 90 ? 2 : r < 97 ? 4 : 8;
        Claim.Builder b = Claim.builder(tenantId).gpus(gpus)
                .priority(rnd.nextInt(10) < 4 ? PriorityClass.ONLINE : PriorityClass.OFFLINE);
        if (rnd.nextInt(100) < 4) {
            b.exclusive();
        } else {
            b.memoryGiB(1L + rnd.nextInt(4)).compute(5 * rnd.nextInt(3), 100);
        }
        return b.build();
    }

    /** CPU time of the whole process so far, in nanoseconds, or -1 when the JVM does not tell. */
    private static long processCpuNanos() {
        return java.lang.management.ManagementFactory.getOperatingSystemMXBean()
                instanceof com.sun.management.OperatingSystemMXBean os ? os.getProcessCpuTime() : -1;
    }

    /**
     * Plain main: {@code [warmups=2] [passes=5] [nodes=4000] [claims=140000]}, seed 13. Prints per pass
     * the wall time, claims per second, placed and refused, and the CPU time of the pass's thread and
     * of the whole process during the pass. {@code hash [nodes=4000] [claims=140000]} instead prints
     * one pass's counts and the hash of its answers ({@link #hashed}).
     */
    public static void main(String[] args) {
        if (args.length > 0 && args[0].equals("hash")) {
            // hash [nodes=4000] [claims=140000]: one pass from an empty ledger, every answer hashed
            int n = args.length > 1 ? Integer.parseInt(args[1]) : 4000;
            int c = args.length > 2 ? Integer.parseInt(args[2]) : 140_000;
            PlacementEngine engine = PlacementEngine.create(Ledger.create(GranularityRules.ofDefaults(), cluster(n)));
            System.out.printf(Locale.ROOT, "%d nodes, %d claims: %s%n", n, c, hashed(engine, claims(c, 13)));
            return;
        }
        int warmups = args.length > 0 ? Integer.parseInt(args[0]) : 2;
        int passes = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        int n = args.length > 2 ? Integer.parseInt(args[2]) : 4000;
        int c = args.length > 3 ? Integer.parseInt(args[3]) : 140_000;
        List<Node> cluster = cluster(n);
        List<Claim> mix = claims(c, 13);
        System.out.printf(Locale.ROOT, "scheduling pass: %d nodes x 8 GPUs, %d claims, %d warm-up + %d measured passes, %d CPUs%n",
                n, c, warmups, passes, Runtime.getRuntime().availableProcessors());
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        for (int i = 0; i < warmups + passes; i++) {
            PlacementEngine engine = PlacementEngine.create(Ledger.create(GranularityRules.ofDefaults(), cluster));
            long cpu0 = threads.getCurrentThreadCpuTime();
            long process0 = processCpuNanos();
            long t0 = System.nanoTime();
            Outcome o = pass(engine, mix);
            double s = (System.nanoTime() - t0) / 1e9;
            double cpu = (threads.getCurrentThreadCpuTime() - cpu0) / 1e9;
            double process = (processCpuNanos() - process0) / 1e9;
            // CPU seconds besides the wall time: on a shared machine the wall time also counts the
            // time other processes held the cores; the pass's own CPU time does not
            System.out.printf(Locale.ROOT, "%s %d: %.3f s, %.0f claims/s, placed %d, refused %d; CPU %.3f s on the pass's thread,"
                    + " %.3f s in the whole process (GC and JIT included)%n",
                    i < warmups ? "warm-up" : "pass", i < warmups ? i + 1 : i - warmups + 1, s, c / s, o.placed(), o.refused(),
                    cpu, process);
        }
    }
}
