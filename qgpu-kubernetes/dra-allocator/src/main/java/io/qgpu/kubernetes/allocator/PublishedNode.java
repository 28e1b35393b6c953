package io.qgpu.kubernetes.allocator;

import io.qgpu.api.Node;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * A node as the ResourceSlices of driver {@code gpu.qgpu.io} publish it: the qgpu {@link Node} the ledger and the
 * placement engine work on (its GPUs in the slice's device order, their topology from the devices' attributes),
 * and the published GPUs behind it.
 *
 * @param node the node for the ledger: name, GPUs (UUID, index, model, memory = the published {@code memory}
 *             capacity, NUMA node), topology
 * @param gpus the published GPUs, in the order of {@code node.gpus()}
 *
 * <p>Thread safety: immutable.
 */
public record PublishedNode(Node node, List<PublishedGpu> gpus) {
    public PublishedNode {
        gpus = List.copyOf(gpus);
    }

    /** The node's name. */
    public String name() {
        return node.name();
    }

    /** The published GPU with this UUID. */
    public Optional<PublishedGpu> gpu(String gpuUuid) {
        return gpus.stream().filter(g -> g.gpuUuid().equals(gpuUuid)).findFirst();
    }

    /** The published GPUs by device name. */
    public Map<String, PublishedGpu> byDevice() {
        return gpus.stream().collect(Collectors.toMap(PublishedGpu::device, Function.identity()));
    }
}
