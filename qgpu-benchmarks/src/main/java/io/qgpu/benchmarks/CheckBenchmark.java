package io.qgpu.benchmarks;

import io.qgpu.api.Claim;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.PriorityClass;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.NodeFit;
import io.qgpu.core.placement.PlacementEngine;
import java.util.ArrayList;
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
 * The engine's check of named nodes ({@link PlacementEngine#check}) for a single-GPU shared claim, as
 * the Kubernetes extender's filter asks it for the nodes its memo cannot answer: {@code nodes} nodes
 * of 8 GPUs ({@code h100}: NVSwitch H100 nodes only; {@code mixed}: half DGX-1V hybrid cube mesh, half
 * NVSwitch H100), partly filled as {@link PlacementBenchmark} fills them (about 30% of the nodes full,
 * 0..3 tenants per GPU on the others). One operation checks every node once; the ledger does not
 * change, so the node summaries are the engine's cached ones and the time is the check itself.
 *
 * <pre>
 *   ./mvnw -q package -pl qgpu-benchmarks -am -DskipTests
 *   java -jar qgpu-benchmarks/target/benchmarks.jar CheckBenchmark -f 1 -wi 3 -i 5
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xmx2g"})
public class CheckBenchmark {

    @Param("500")
    public int nodes;

    @Param({"h100"})
    public String topology;

    private PlacementEngine engine;
    private List<String> names;
    private Claim one;

    @Setup(Level.Trial)
    public void setUp() {
        List<Node> all = new ArrayList<>(nodes);
        for (int i = 0; i < nodes; i++) {
            all.add(topology.equals("mixed") && i % 2 == 0 ? PlacementBenchmark.dgx1("n" + i)
                    : PlacementBenchmark.nvswitch("n" + i));
        }
        Ledger ledger = Ledger.create(GranularityRules.ofDefaults(), all);
        PlacementBenchmark.fill(ledger, all, new SplittableRandom(42));
        engine = PlacementEngine.create(ledger);
        names = all.stream().map(Node::name).toList();
        one = Claim.builder("check-1").memoryGiB(4).compute(20, 60).priority(PriorityClass.OFFLINE).build();
        if (engine.check(one, names).stream().noneMatch(f -> f instanceof NodeFit.Fits)) {
            throw new IllegalStateException("no node fits the benchmark claim");
        }
    }

    /** Every node checked once for the single-GPU claim. */
    @Benchmark
    public List<NodeFit> checkOneGpu() {
        return engine.check(one, names);
    }
}
