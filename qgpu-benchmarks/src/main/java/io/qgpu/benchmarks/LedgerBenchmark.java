package io.qgpu.benchmarks;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Slice;
import io.qgpu.core.ledger.Ledger;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Reserve + release of a one-GPU slice on a 1,000-node x 8-GPU ledger, uncontended and with two
 * threads. Each thread works on its own nodes ({@code disjoint}) or all threads on the same node
 * ({@code sameNode}, the worst case for the per-node compare-and-set).
 *
 * <pre>
 * java -jar qgpu-benchmarks/target/benchmarks.jar LedgerBenchmark
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class LedgerBenchmark {

    static final int NODES = 1_000;
    static final int GPUS = 8;

    Ledger ledger;
    List<Node> nodes;
    final AtomicInteger threadIds = new AtomicInteger();

    @Setup(Level.Trial)
    public void setUp() {
        nodes = new ArrayList<>(NODES);
        for (int n = 0; n < NODES; n++) {
            Node.Builder b = Node.builder("node-" + n).defaultLink(new GpuLink.NvLink(18));
            for (int g = 0; g < GPUS; g++) {
                b.gpu(GpuDevice.builder("GPU-" + n + "-" + g).index(g).model("H100").memoryGiB(80).build());
            }
            nodes.add(b.build());
        }
        ledger = Ledger.create(nodes);
        // a partly filled cluster: one resident tenant on every other GPU
        for (int n = 0; n < NODES; n++) {
            for (int g = 0; g < GPUS; g += 2) {
                Claim c = Claim.builder("resident-" + n + "-" + g).memoryGiB(20).compute(25, 100).build();
                ledger.reserve(new Placement(c, "node-" + n, List.of(new Slice("GPU-" + n + "-" + g, 20L << 30, 25, 100))));
            }
        }
    }

    /** Per-thread placements, prepared once so that the benchmark measures the ledger only. */
    @State(Scope.Thread)
    public static class Worker {
        Placement[] own;
        Placement[] shared;
        int i;

        @Setup(Level.Trial)
        public void setUp(LedgerBenchmark bench) {
            int id = bench.threadIds.getAndIncrement();
            own = new Placement[64];
            shared = new Placement[64];
            for (int k = 0; k < own.length; k++) {
                int node = (id * 97 + k * 13) % NODES;
                Claim c = Claim.builder("t" + id + "-" + k).memoryGiB(4).compute(10, 50).priority(PriorityClass.ONLINE).build();
                own[k] = new Placement(c, "node-" + node, List.of(new Slice("GPU-" + node + "-" + (k % GPUS), 4L << 30, 10, 50)));
                shared[k] = new Placement(c, "node-0", List.of(new Slice("GPU-0-" + (1 + 2 * (k % 4)), 4L << 30, 10, 50)));
            }
        }
    }

    @Benchmark
    @Threads(1)
    public Object reserveRelease_1thread(Worker w) {
        return cycle(w.own[w.i++ & 63]);
    }

    @Benchmark
    @Threads(2)
    public Object reserveRelease_2threads_disjoint(Worker w) {
        return cycle(w.own[w.i++ & 63]);
    }

    @Benchmark
    @Threads(2)
    public Object reserveRelease_2threads_sameNode(Worker w) {
        return cycle(w.shared[w.i++ & 63]);
    }

    private Object cycle(Placement p) {
        if (!ledger.reserve(p).reserved()) {
            throw new IllegalStateException("benchmark reservation refused: " + p.tenantId());
        }
        return ledger.release(p.tenantId());
    }
}
