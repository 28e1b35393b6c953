package io.qgpu.benchmarks;

import io.qgpu.api.Claim;
import io.qgpu.api.PlacementResult;
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
 * A scheduler's retry loop: a full cluster ({@link FullCluster}, {@code nodes} x 8 GPUs, seed 7) and
 * a backlog of {@code pending} claims it refused.
 *
 * <p>JMH ({@link #retryBacklog}): one operation retries the whole backlog once on the full cluster
 * (every claim refused, so every operation sees the same state); the time is the round's total.
 *
 * <p>The plain {@link #main} replays the queue in rounds: before each round, {@code releases}
 * holders (a seeded pick) release their room, a steady rate; then every pending claim is retried in
 * submission order, and those that fit are placed and leave the queue. It prints, per round, its time
 * and how many were placed, and at the end, for the placed claims, how soon each was placed: the
 * rounds it waited and the time from the start of the round that placed it (p50, p99, max).
 *
 * <pre>
 *   ./mvnw -q package -pl qgpu-benchmarks -am -DskipTests
 *   java -jar qgpu-benchmarks/target/benchmarks.jar RetryLoopBenchmark -f 1 -wi 2 -i 5
 *   java -Xmx4g -cp qgpu-benchmarks/target/benchmarks.jar io.qgpu.benchmarks.RetryLoopBenchmark [nodes=4000] [pending=10000] [rounds=10] [releases=500]
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2)
@Measurement(iterations = 5)
@Fork(value = 1, jvmArgsAppend = {"-Xmx4g"})
public class RetryLoopBenchmark {

    @Param("4000")
    public int nodes;

    @Param("10000")
    public int pending;

    private FullCluster cluster;

    @Setup(Level.Trial)
    public void setUp() {
        cluster = FullCluster.build(nodes, pending, 7);
    }

    /** The whole backlog retried once; returns how many were placed (0: the cluster is full). */
    @Benchmark
    public int retryBacklog() {
        int placed = 0;
        for (Claim c : cluster.pending) {
            if (cluster.engine.place(c) instanceof PlacementResult.Placed) {
                placed++;
            }
        }
        if (placed != 0) {
            throw new IllegalStateException(placed + " backlog claims fitted a full cluster");
        }
        return placed;
    }

    /** Plain main: {@code [nodes=4000] [pending=10000] [rounds=10] [releases=500]}. */
    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 4000;
        int p = args.length > 1 ? Integer.parseInt(args[1]) : 10_000;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 10;
        int releases = args.length > 3 ? Integer.parseInt(args[3]) : 500;
        long t0 = System.nanoTime();
        FullCluster fc = FullCluster.build(n, p, 7);
        System.out.printf(Locale.ROOT, "retry loop: %d nodes x 8 GPUs, %d pending, %d rounds, %d releases per round, "
                + "%d CPUs (set-up %.1f s)%n", n, p, rounds, releases, Runtime.getRuntime().availableProcessors(),
                (System.nanoTime() - t0) / 1e9);
        List<Claim> queue = new ArrayList<>(fc.pending);
        List<String> holders = new ArrayList<>(fc.holders);
        SplittableRandom rnd = new SplittableRandom(99);
        List<Long> sinceRoundStart = new ArrayList<>();
        List<Integer> waited = new ArrayList<>();
        for (int round = 0; round <= rounds; round++) {
            if (round > 0) {
                for (int i = 0; i < releases && !holders.isEmpty(); i++) {
                    fc.ledger.release(holders.remove(rnd.nextInt(holders.size())));
                }
            }
            long start = System.nanoTime();
            List<Claim> left = new ArrayList<>(queue.size());
            int placed = 0;
            for (Claim c : queue) {
                if (fc.engine.place(c) instanceof PlacementResult.Placed) {
                    placed++;
                    holders.add(c.tenantId());
                    sinceRoundStart.add(System.nanoTime() - start);
                    waited.add(round);
                } else {
                    left.add(c);
                }
            }
            double s = (System.nanoTime() - start) / 1e9;
            System.out.printf(Locale.ROOT, "round %d: %.3f s for %d claims (%.0f retries/s), placed %d, pending %d%n",
                    round, s, queue.size(), queue.size() / s, placed, left.size());
            queue = left;
        }
        long[] lat = sinceRoundStart.stream().mapToLong(Long::longValue).sorted().toArray();
        int[] w = waited.stream().mapToInt(Integer::intValue).sorted().toArray();
        if (lat.length > 0) {
            System.out.printf(Locale.ROOT, "placed %d: time from the start of the placing round p50 %.1f ms, p99 %.1f ms, "
                    + "max %.1f ms; rounds waited p50 %d, p99 %d, max %d%n", lat.length, pct(lat, 0.50) / 1e6,
                    pct(lat, 0.99) / 1e6, lat[lat.length - 1] / 1e6, w[(int) (0.50 * (w.length - 1))],
                    w[(int) (0.99 * (w.length - 1))], w[w.length - 1]);
        }
    }

    private static double pct(long[] sorted, double q) {
        return sorted[(int) Math.round(q * (sorted.length - 1))];
    }

}
