package io.qgpu.kubernetes.allocator;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClass;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.qgpu.kubernetes.node.dra.DraNames;
import io.qgpu.kubernetes.node.dra.PublishedSlice;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The DRA allocator against an API server: the real {@link AllocatorController} (informers, passes, writes) on
 * fabric8's mock API server in CRUD mode, with the ResourceSlices of {@code nodes} nodes of eight 80 GiB H100s
 * ({@link DecideBenchmark#slices}) and the allocator's defaults. Each measured shot releases {@value #BATCH} gated
 * pods, each with its own claim of a 10 GiB / 30% share: the pods and claims are created while the controller
 * does not lead (untimed, and the controller's informers have them all before the shot starts); the shot lets it
 * lead and ends when its informer shows the last of them ungated. So a shot is what the allocator does for a pod:
 * decide, write the claim's finalizer and {@code status.allocation}, remove the gate, the Event, and take the
 * informers' echoes of its writes. The cluster fills by {@value #BATCH} claims a shot (at most 1,600 shares on 8,000
 * or 40,000 GPUs). Single-shot mode, one operation per pod: the time per allocation; allocations per second =
 * 1 / that.
 *
 * <p>The mock API server answers in the same JVM over HTTP, with no etcd, admission or authorisation behind it: a
 * real API server's latency adds to every write.
 *
 * <pre>
 * java -jar qgpu-benchmarks/target/benchmarks.jar ControllerBenchmark -p nodes=1000,5000
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3)
@Measurement(iterations = 5)
@Fork(value = 1, jvmArgs = {"-Xms2g", "-Xmx2g", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"})
public class ControllerBenchmark {
    /** Gated pods released per shot. */
    static final int BATCH = 200;
    /** How long a shot or the informers may take before the benchmark gives up. */
    static final Duration LIMIT = Duration.ofMinutes(5);
    /**
     * How often the end of a shot is looked for (reading the controller's gated pods sorts them: polled every few
     * milliseconds through a whole shot, it took more CPU than the allocator's own thread). A shot takes seconds.
     */
    static final Duration POLL = Duration.ofMillis(20);
    /** Held, so that its level stays set (java.util.logging keeps loggers weakly). */
    private static final java.util.logging.Logger MOCK_LOG = java.util.logging.Logger.getLogger("io.fabric8.mockwebserver");

    /** The published nodes. */
    @Param({"1000", "5000"})
    public int nodes;

    KubernetesMockServer api;
    KubernetesClient client;
    DraAllocator allocator;
    AllocatorController controller;
    volatile boolean leading;
    int shot;

    @Setup(Level.Trial)
    public void startCluster() throws Exception {
        // the mock API server logs every request through java.util.logging
        MOCK_LOG.setLevel(java.util.logging.Level.WARNING);
        api = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(), new KubernetesCrudDispatcher(), false);
        api.init();
        // the mock server lists 5,000 slices slowly on a loaded machine: more than the client's 10 s default per request
        try (KubernetesClient defaults = api.createClient()) {
            client = new KubernetesClientBuilder().withConfig(new ConfigBuilder(defaults.getConfiguration())
                    .withRequestTimeout((int) LIMIT.toMillis()).build()).build();
        }
        AllocatorFlags flags = AllocatorFlags.parse("--no-webhook");
        DeviceClass dc = PublishedSlice.deviceClass();
        client.resources(DeviceClass.class).resource(dc).create();
        for (ResourceSlice s : DecideBenchmark.slices(nodes, flags)) {
            client.resources(ResourceSlice.class).resource(s).create();
        }
        allocator = DecideBenchmark.allocator(flags);
        controller = new AllocatorController(client, allocator, s -> SliceInventory.of(s).nodes(), () -> leading);
        controller.start(LIMIT);
        if (allocator.ledger().nodes().size() != nodes) {
            throw new IllegalStateException("the controller reads " + allocator.ledger().nodes().size() + " nodes, not " + nodes);
        }
    }

    @Setup(Level.Iteration)
    public void gatedPods() throws Exception {
        leading = false;
        shot++;
        for (int i = 0; i < BATCH; i++) {
            String name = "s" + shot + "-" + i;
            ResourceClaim rc = new ResourceClaimBuilder(DecideBenchmark.share(name)).editMetadata().withUid(null).withResourceVersion(null)
                    .endMetadata().build();
            client.resources(ResourceClaim.class).inNamespace("bench").resource(rc).create();
            client.pods().inNamespace("bench").resource(new PodBuilder().withNewMetadata().withName(name).withNamespace("bench")
                    .withCreationTimestamp(Instant.now().toString()).endMetadata()
                    .withNewSpec().addNewSchedulingGate().withName(DraNames.SCHEDULING_GATE).endSchedulingGate()
                    .addNewResourceClaim().withName("gpu").withResourceClaimName(name).endResourceClaim()
                    .addNewContainer().withName("c").withImage("x").endContainer().endSpec().build()).create();
        }
        // the shot starts once the controller's informers hold every pod and claim of it
        await(() -> controller.gatedPods().size() == BATCH && controller.claimStore().list().size() == shot * BATCH,
                "the informers to hold shot " + shot);
    }

    /** Lets the controller allocate the shot's gated pods and waits until all are ungated. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public int allocateAndUngate() throws Exception {
        leading = true;
        controller.pass();
        // cheap while the shot is decided (a reservation per claim), then the gated pods until the last gate is off
        await(() -> allocator.ledger().size() >= shot * BATCH, "the claims of shot " + shot + " to be decided");
        await(() -> controller.gatedPods().isEmpty(), "the gates of shot " + shot + " to be released");
        return shot;
    }

    /** Every claim of the shots so far is allocated, once (as the informer shows them). */
    @TearDown(Level.Iteration)
    public void check() throws Exception {
        leading = false;
        await(() -> controller.claimStore().list().stream()
                .filter(c -> c.getStatus() != null && c.getStatus().getAllocation() != null).count() == (long) shot * BATCH,
                "the " + shot * BATCH + " claims of the shots so far to be allocated");
    }

    @TearDown(Level.Trial)
    public void stopCluster() {
        controller.close();
        client.close();
        api.destroy();
    }

    private static void await(java.util.function.BooleanSupplier done, String what) throws Exception {
        long deadline = System.nanoTime() + LIMIT.toNanos();
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new TimeoutException("not within " + LIMIT + ": " + what);
            }
            Thread.sleep(POLL.toMillis());
        }
    }
}
