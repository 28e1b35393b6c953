package io.qgpu.kubernetes.allocator;

import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClass;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.Node;
import io.qgpu.api.TopologyLevel;
import io.qgpu.kubernetes.node.dra.DraNames;
import io.qgpu.kubernetes.node.dra.PublishedSlice;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
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
 * The DRA allocator's decision alone, without the API server: {@link DraAllocator#decide} of one pod's claim (a
 * share of 10 GiB and 30% of one GPU, as the allocator's {@code qgpu-alloc-share-10gi-30} template asks) on
 * {@code nodes} published nodes of eight 80 GiB H100s, read from their ResourceSlices ({@link PublishedSlice}, then
 * {@link SliceInventory}) as the allocator reads them, with the allocator's defaults ({@code --policy fragmentation
 * --rules qgpu}, {@link AllocatorFlags}). Before the measurement every node holds two such shares, allocated through
 * the same path; each operation decides the claim, then gives it back ({@link DraAllocator#abandon}), so the
 * cluster stays as it is. Throughput mode: decisions per second.
 *
 * <pre>
 * java -jar qgpu-benchmarks/target/benchmarks.jar DecideBenchmark -p nodes=1000,5000
 * java -jar qgpu-benchmarks/target/benchmarks.jar DecideBenchmark -p nodes=1000,5000 -p shortlist=8,5000   # also every node
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 5, time = 3)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgs = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
public class DecideBenchmark {
    /** The published nodes. */
    @Param({"1000", "5000"})
    public int nodes;

    /**
     * The allocator's {@code --shortlist}: 8 is its default; the node count or more searches every node, as the trace
     * replay of the allocator does.
     */
    @Param({"8"})
    public int shortlist;

    DraAllocator allocator;
    ResourceClaim claim;
    static final Function<String, Optional<DeviceClass>> CLASSES = classes(PublishedSlice.deviceClass());

    @Setup(Level.Trial)
    public void setUp() {
        AllocatorFlags flags = AllocatorFlags.parse("--no-webhook", "--shortlist", Integer.toString(shortlist));
        allocator = allocator(flags);
        allocator.inventory(SliceInventory.of(slices(nodes, flags)).nodes());
        for (int i = 0; i < 2 * nodes; i++) {
            ResourceClaim held = share("held-" + i);
            DraAllocator.Decision.Allocate d = (DraAllocator.Decision.Allocate) allocator.decide(List.of(held), CLASSES);
            allocator.claimChanged(new ResourceClaimBuilder(held).editOrNewStatus().withAllocation(d.claims().get(0).allocation())
                    .endStatus().build());
        }
        claim = share("measured");
    }

    /** One decision, given back. */
    @Benchmark
    public DraAllocator.Decision decide() {
        DraAllocator.Decision d = allocator.decide(List.of(claim), CLASSES);
        if (d instanceof DraAllocator.Decision.Allocate a) {
            allocator.abandon(a.claims());
        }
        return d;
    }

    /** An allocator as {@code AllocatorApp} builds it from its flags. */
    static DraAllocator allocator(AllocatorFlags flags) {
        return DraAllocator.create(new LinkedHashSet<>(flags.deviceClasses()), flags.rules(),
                flags.placementConfig(), new ClaimPriority());
    }

    /** The slices of {@code n} nodes of eight 80 GiB H100s (NUMA nodes 0 and 1), as qgpu's driver publishes them. */
    static List<ResourceSlice> slices(int n, AllocatorFlags flags) {
        List<ResourceSlice> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String name = String.format("node-%05d", i);
            Node.Builder b = Node.builder(name).defaultLink(new GpuLink.Pcie(TopologyLevel.SYSTEM));   // the slice publishes no links
            for (int g = 0; g < 8; g++) {
                b.gpu(GpuDevice.builder("GPU-" + name + "-" + g).index(g).model("H100").memoryGiB(80).numaNode(g / 4).build());
            }
            out.add(PublishedSlice.of(b.build(), flags.rules()));
        }
        return out;
    }

    /** A claim of one share: 10 GiB and 30% of one GPU. */
    static ResourceClaim share(String name) {
        return new ResourceClaimBuilder().withNewMetadata().withNamespace("bench").withName(name).withUid("uid-" + name)
                .withResourceVersion("1").endMetadata()
                .withNewSpec().withNewDevices().addNewRequest().withName("gpu").withNewExactly().withDeviceClassName(DraNames.DEVICE_CLASS)
                .withNewCapacity().withRequests(Map.of(DraNames.CAPACITY_MEMORY, new Quantity("10Gi"), DraNames.CAPACITY_CORES,
                        new Quantity("30"))).endCapacity().endExactly().endRequest().endDevices().endSpec().build();
    }

    static Function<String, Optional<DeviceClass>> classes(DeviceClass c) {
        return name -> name.equals(c.getMetadata().getName()) ? Optional.of(c) : Optional.empty();
    }
}
