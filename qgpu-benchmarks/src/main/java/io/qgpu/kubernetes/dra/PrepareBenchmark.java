package io.qgpu.kubernetes.dra;

import io.qgpu.api.Claim;
import io.qgpu.benchmarks.AgentNode;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.Slice;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.kubernetes.node.CdiSpecs;
import io.qgpu.kubernetes.node.PlacementEdits;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
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
 * The DRA driver's prepare and unprepare of one claim, without the wire and the API server read: reserve, save
 * the state file (fsync'd), write the CDI spec (fsync'd), answer; then release, save, remove the spec. This is
 * what the node reconciler's transaction wraps; {@code -p held=N} keeps N other claims prepared (the state file
 * holds them all and is rewritten at every change). Sample mode gives p50 and p99.
 *
 * <pre>
 * java -jar qgpu-benchmarks/target/benchmarks.jar PrepareBenchmark -p dir=/var/tmp/qgpu-bench
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class PrepareBenchmark {
    static final long GIB = 1L << 30;

    /** Where the state file and the CDI specs go (a disk, as /var/lib/kubelet is; the specs' /var/run/cdi is tmpfs on a node). */
    @Param("target/prepare-bench")
    public String dir;

    /** Claims held prepared beside the one prepared and unprepared. */
    @Param({"0", "32"})
    public int held;

    PreparedClaims claims;
    int next;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        Path root = Files.createDirectories(Path.of(dir)).toAbsolutePath();
        Path run = Files.createTempDirectory(root, "run");
        Node node = AgentNode.h100x8("node-a");
        Map<String, Integer> minors = AgentNode.minors(node);
        Ledger ledger = Ledger.create(List.of(node));
        claims = new PreparedClaims(ledger, new DriverStateFile(run.resolve("state.json"), "node-a"), new CdiSpecs(run.resolve("cdi")),
                new PlacementEdits(minors));
        claims.restore();
        for (int i = 0; i < held; i++) {
            claims.prepare(claim("held-" + i, "GPU-" + (i % 7 + 1)));
        }
    }

    static PreparedClaim claim(String uid, String gpu) {
        Claim c = Claim.builder(uid).gpus(1).memoryBytes(GIB).compute(5, 5).build();
        return new PreparedClaim(uid, "default", uid, new Placement(c, "node-a", List.of(new Slice(gpu, GIB, 5, 5))),
                List.of(new PreparedClaim.Device(List.of("gpu"), "node-a", "gpu-" + gpu.substring(4), Optional.empty(), gpu, List.of())));
    }

    /** One claim prepared and unprepared. */
    @Benchmark
    public boolean prepareAndUnprepare() throws Exception {
        String uid = "c-" + (next++);
        claims.prepare(claim(uid, "GPU-0"));
        return claims.unprepare(uid);
    }
}
