package io.qgpu.testkit.machines;

import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.Node;
import io.qgpu.api.Validate;
import io.qgpu.api.spi.GpuDiscovery;
import java.util.Map;

/**
 * A {@link GpuDiscovery} that reports a fake machine instead of asking NVML. Every call to
 * {@link #discover(String)} returns the same node for the same name, with
 * no labels (as the SPI specifies) and best-effort GPUs.
 *
 * <pre>{@code
 * try (GpuDiscovery d = Machines.DGX_1V.discovery()) {
 *     Node self = d.discover("node-a");   // 8 x V100, hybrid cube-mesh NVLink
 * }
 * }</pre>
 *
 * <p>Thread safety: thread-safe (the machine type is immutable; the closed flag is volatile).
 */
public final class FakeGpuDiscovery implements GpuDiscovery {

    private final MachineType type;
    private volatile boolean closed;

    public FakeGpuDiscovery(MachineType type) {
        this.type = Validate.notNull("fakeGpuDiscovery.type", type);
    }

    @Override
    public Node discover(String nodeName) {
        if (closed) {
            throw new IllegalStateException("discovery of " + type.name() + " is closed");
        }
        // as the SPI says: labels empty, they are the operator's business
        return new Node(nodeName, Map.of(), type.gpus(nodeName, IsolationPolicy.BEST_EFFORT), type.topology());
    }

    @Override
    public void close() {
        closed = true;
    }
}
