package io.qgpu.cli.replay;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.HostCapacity;
import io.qgpu.api.TopologyLevel;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Selectors;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * How trace rows become qgpu nodes and claims.
 *
 * <ul>
 *   <li>A node row becomes a node of {@code gpu} GPUs of its {@code model}, with the device memory of
 *       that model ({@link #memoryGiB}), and its {@code cpu_milli} and {@code memory_mib} as the node's
 *       host capacity (CPU millicores, host memory), which the ledger reserves with the slices.</li>
 *   <li>{@code gpu_milli} (thousandths of one GPU, multiples of 10) becomes a compute request and limit
 *       of {@code gpu_milli / 10} percent, and a memory share of the same fraction of the smallest GPU
 *       memory in the cluster, rounded down to a MiB: so the compute share is what binds on every
 *       model, as the trace's single GPU dimension does, and the shares of one GPU never ask more
 *       memory than it has.</li>
 *   <li>{@code gpu_milli = 1000} (and every pod asking more than one GPU) is an exclusive claim of
 *       {@code num_gpu} whole GPUs.</li>
 *   <li>{@code gpu_spec} becomes a model selector (the pod may use any of the listed models).</li>
 *   <li>{@code qos} is kept but every pod is an {@code online} claim: the trace's shares are shares of one
 *       GPU whatever the QoS, while qgpu admits each priority class up to 100% guaranteed compute of a
 *       GPU (the offline class is preemptible capacity beside the online guarantee); mapping {@code BE}
 *       to offline would let one GPU hold 100% {@code LS} plus 100% {@code BE}, more than the trace's
 *       model allows, and the allocation rate would no longer be comparable.</li>
 *   <li>Every pod asks its {@code cpu_milli} and {@code memory_mib} of host CPU and memory; a
 *       {@code num_gpu = 0} pod is a host-only claim (no GPU).</li>
 * </ul>
 * The replay uses granularity rules that can express every trace share: memory in MiB, compute in
 * 1% units, up to 100 tenants per GPU ({@link #RULES}).
 *
 * <p>Thread safety: stateless.
 */
public final class TraceMapping {
    /** Memory in MiB (min 1 MiB), compute in 1% units, at most 100 tenants per GPU, no memory slots. */
    public static final GranularityRules RULES = GranularityRules.custom().name("trace")
            .memoryUnitBytes(GpuDevice.MIB).minMemoryBytes(GpuDevice.MIB).computeUnit(1)
            .maxTenantsPerGpu(100).memoryPerTenantSlotBytes(0).build();

    /** Device memory by model; models not listed get {@link #DEFAULT_MEMORY_GIB}. */
    private static final Map<String, Integer> MEMORY_GIB = Map.of(
            "P100", 16, "T4", 16, "V100M16", 16, "V100M32", 32, "A10", 24, "A100", 80);
    /** Memory of a model the table does not know (the trace's G2 and G3 are anonymised models). */
    public static final int DEFAULT_MEMORY_GIB = 16;

    private TraceMapping() {
    }

    /** Whether the memory table knows the model (else it is taken as {@link #DEFAULT_MEMORY_GIB} GiB). */
    public static boolean knowsMemoryOf(String model) {
        return MEMORY_GIB.containsKey(model);
    }

    /** The models of the memory table, sorted. */
    public static List<String> knownModels() {
        return MEMORY_GIB.keySet().stream().sorted().toList();
    }

    /** Device memory of a model, in GiB. */
    public static int memoryGiB(String model) {
        return MEMORY_GIB.getOrDefault(model, DEFAULT_MEMORY_GIB);
    }

    /** The qgpu nodes of the trace's nodes, with their host capacity (a node may have no GPU). */
    public static List<Node> nodes(List<TraceNode> rows) {
        List<Node> out = new ArrayList<>();
        for (TraceNode r : rows) {
            Node.Builder b = Node.builder(r.name()).defaultLink(new GpuLink.Pcie(TopologyLevel.NODE));   // the trace gives no topology
            for (int i = 0; i < r.gpus(); i++) {
                b.gpu(GpuDevice.builder(r.name() + "-gpu" + i).index(i).model(r.model()).memoryGiB(memoryGiB(r.model())).build());
            }
            out.add(b.host(HostCapacity.of(r.cpuMillis(), r.memoryMib() * GpuDevice.MIB)).build());
        }
        return out;
    }

    /** The smallest device memory of the cluster, in bytes (16 GiB when it has no GPU). */
    public static long smallestMemory(List<TraceNode> rows) {
        long min = Long.MAX_VALUE;
        for (TraceNode r : rows) {
            if (r.gpus() > 0) {
                min = Math.min(min, memoryGiB(r.model()) * GpuDevice.GIB);
            }
        }
        return min == Long.MAX_VALUE ? DEFAULT_MEMORY_GIB * GpuDevice.GIB : min;
    }

    /** Whether the pod asks for anything at all (a pod asking no GPU, CPU or memory needs no placement). */
    public static boolean asksAnything(TracePod pod) {
        return pod.gpus() > 0 || pod.cpuMillis() > 0 || pod.memoryMib() > 0;
    }

    /** The claim of a pod that {@link #asksAnything}, named {@code tenantId}. */
    public static Claim claim(String tenantId, TracePod pod, long smallestMemoryBytes) {
        Claim.Builder b = Claim.builder(tenantId).priority(PriorityClass.ONLINE)
                .cpuMillis(pod.cpuMillis()).hostMemoryBytes(pod.memoryMib() * GpuDevice.MIB);
        if (pod.gpus() == 0) {
            return b.hostOnly().build();
        }
        b.gpus(pod.gpus());
        if (pod.gpuMilli() >= 1000) {
            b.exclusive();
        } else {
            int percent = pod.gpuMilli() / 10;
            long mib = smallestMemoryBytes / GpuDevice.MIB * pod.gpuMilli() / 1000;
            b.memoryBytes(Math.max(1, mib) * GpuDevice.MIB).compute(percent, percent);
        }
        if (!pod.models().isEmpty()) {
            Selectors.Builder s = Selectors.builder();
            pod.models().forEach(s::includeModel);
            b.selectors(s.build());
        }
        return b.build();
    }
}
