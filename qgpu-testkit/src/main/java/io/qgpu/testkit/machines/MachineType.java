package io.qgpu.testkit.machines;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.Node;
import io.qgpu.api.Topology;
import io.qgpu.api.Validate;
import io.qgpu.api.spi.GpuDiscovery;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A kind of machine: how many GPUs of which model, their memory, NUMA nodes and the link between
 * every pair. {@link Machines} holds the presets; {@link #node(String)} builds a {@link Node} of
 * this type with deterministic GPU UUIDs ({@link FakeUuids}).
 *
 * <pre>{@code
 * Node dgx = Machines.DGX_H100.node("dgx-0");
 * dgx.topology().link(0, 7).label();              // "NV18"
 * MachineType mine = new MachineType("my-box", "box.4xl", "Tesla T4", 16 * GpuDevice.GIB,
 *         List.of(0, 0), Topology.uniform(2, new GpuLink.Pcie(TopologyLevel.HOSTBRIDGE)));
 * }</pre>
 *
 * @param name         short preset name, also the default node-name prefix ({@code dgx-h100})
 * @param instanceType the vendor's instance or product name ({@code GN7.2XLARGE32}), set as the
 *                     {@value Machines#LABEL_INSTANCE_TYPE} node label
 * @param model        GPU product name as NVML reports it
 * @param memoryBytes  memory of each GPU
 * @param numaNodes    NUMA node of each GPU, by NVML index; its size is the GPU count
 * @param topology     link between every pair of GPUs, by NVML index
 *
 * <p>Thread safety: immutable.
 */
public record MachineType(String name, String instanceType, String model, long memoryBytes,
                          List<Integer> numaNodes, Topology topology) {

    public MachineType {
        Validate.notBlank("machineType.name", name);
        String f = "machineType[" + name + "]";
        Validate.notBlank(f + ".instanceType", instanceType);
        Validate.notBlank(f + ".model", model);
        Validate.atLeast(f + ".memoryBytes", memoryBytes, 1);
        numaNodes = Validate.list(f + ".numaNodes", numaNodes);
        Validate.atLeast(f + ".gpuCount", numaNodes.size(), 1);
        for (int i = 0; i < numaNodes.size(); i++) {
            Validate.atLeast(f + ".numaNodes[" + i + "]", numaNodes.get(i), -1);
        }
        Validate.notNull(f + ".topology", topology);
        if (topology.size() != numaNodes.size()) {
            throw new InvalidValueException(f + ".topology.size", topology.size(),
                    "must equal the GPU count (" + numaNodes.size() + ")");
        }
    }

    /** Number of GPUs. */
    public int gpuCount() {
        return numaNodes.size();
    }

    /** Memory of each GPU in whole GiB (rounded down). */
    public long memoryGiB() {
        return memoryBytes / GpuDevice.GIB;
    }

    /** A node of this type, all GPUs healthy and best-effort, labelled with the machine and instance type. */
    public Node node(String nodeName) {
        return node(nodeName, IsolationPolicy.BEST_EFFORT, Map.of());
    }

    /**
     * A node of this type with this isolation policy on every GPU and these extra labels. The
     * labels {@value Machines#LABEL_MACHINE} and {@value Machines#LABEL_INSTANCE_TYPE} are always
     * set; {@value Machines#LABEL_QGPU_POLICY} carries the policy's wire name as in seed 002.
     */
    public Node node(String nodeName, IsolationPolicy policy, Map<String, String> extraLabels) {
        Validate.notBlank("machineType[" + name + "].nodeName", nodeName);
        Validate.notNull("machineType[" + name + "].isolationPolicy", policy);
        Validate.labels("machineType[" + name + "].labels", extraLabels);
        Map<String, String> labels = new LinkedHashMap<>();
        labels.put(Machines.LABEL_MACHINE, name);
        labels.put(Machines.LABEL_INSTANCE_TYPE, instanceType);
        labels.put(Machines.LABEL_QGPU_POLICY, policy.wireName());
        labels.putAll(extraLabels);
        return new Node(nodeName, labels, gpus(nodeName, policy), topology);
    }

    /** The GPUs a node of this type named {@code nodeName} has, in NVML index order. */
    public List<GpuDevice> gpus(String nodeName, IsolationPolicy policy) {
        List<GpuDevice> gpus = new ArrayList<>(gpuCount());
        for (int i = 0; i < gpuCount(); i++) {
            gpus.add(GpuDevice.builder(FakeUuids.gpu(nodeName, i))
                    .index(i)
                    .model(model)
                    .memoryBytes(memoryBytes)
                    .numaNode(numaNodes.get(i))
                    .isolationPolicy(policy)
                    .build());
        }
        return gpus;
    }

    /** A {@link GpuDiscovery} that "finds" a machine of this type, as NVML would on real hardware. */
    public GpuDiscovery discovery() {
        return new FakeGpuDiscovery(this);
    }
}
