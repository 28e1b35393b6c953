package io.qgpu.kubernetes.deviceplugin;

import io.grpc.stub.StreamObserver;
import io.qgpu.benchmarks.AgentNode;
import io.qgpu.api.Node;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.kubernetes.deviceplugin.v1beta1.AllocateRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.AllocateResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerAllocateRequest;
import io.qgpu.kubernetes.node.PlacementEdits;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
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
 * The device plugin's {@code Allocate} of one virtual id, without the wire: the id is handed out again at every
 * call, so each call releases the previous container's allocation, places a slot-sized claim, saves the state
 * file (fsync'd) and builds the container's answer. {@code -p held=N} keeps N other ids allocated (the state file
 * holds them all). Sample mode gives p50 and p99.
 *
 * <pre>
 * java -jar qgpu-benchmarks/target/benchmarks.jar AllocateBenchmark -p dir=/var/tmp/qgpu-bench
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class AllocateBenchmark {
    static final long GIB = 1L << 30;

    @Param("target/allocate-bench")
    public String dir;

    @Param({"0", "32"})
    public int held;

    DevicePluginService service;
    AllocateRequest request;

    static final class Answer implements StreamObserver<AllocateResponse> {
        AllocateResponse got;
        Throwable failed;

        @Override
        public void onNext(AllocateResponse value) {
            got = value;
        }

        @Override
        public void onError(Throwable t) {
            failed = t;
        }

        @Override
        public void onCompleted() {
        }
    }

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        Path run = Files.createTempDirectory(Files.createDirectories(Path.of(dir)).toAbsolutePath(), "run");
        Node node = AgentNode.h100x8("node-a");
        Map<String, Integer> minors = AgentNode.minors(node);
        Ledger ledger = Ledger.create(List.of(node));
        PlacementEngine engine = PlacementEngine.builder(ledger).policies(PlacementPolicy.BINPACK, PlacementPolicy.SPREAD).build();
        VirtualDevicePool pool = new VirtualDevicePool(node, ledger, engine, PodDecisions.none(), new StateFile(run.resolve("state.json")),
                4 * GIB);
        pool.restore();
        service = new DevicePluginService(pool, new ContainerEnvironment(new PlacementEdits(minors)));
        List<VirtualDevice> ids = pool.devices();
        for (int i = 0; i < held; i++) {
            allocate(ids.get(ids.size() - 1 - i).id());
        }
        request = AllocateRequest.newBuilder().addContainerRequests(ContainerAllocateRequest.newBuilder().addDevicesIds(ids.get(0).id()))
                .build();
    }

    AllocateResponse allocate(String id) {
        Answer a = new Answer();
        service.allocate(AllocateRequest.newBuilder().addContainerRequests(ContainerAllocateRequest.newBuilder().addDevicesIds(id)).build(), a);
        if (a.failed != null) {
            throw new IllegalStateException(a.failed);
        }
        return a.got;
    }

    /** One id allocated (its previous allocation released first). */
    @Benchmark
    public AllocateResponse allocateOneId() {
        Answer a = new Answer();
        service.allocate(request, a);
        if (a.failed != null) {
            throw new IllegalStateException(a.failed);
        }
        return a.got;
    }
}
