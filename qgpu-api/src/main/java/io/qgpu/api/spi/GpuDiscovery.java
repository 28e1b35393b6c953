package io.qgpu.api.spi;

import io.qgpu.api.Node;

/**
 * Finds the GPUs of the machine it runs on and how they are linked. NVML implements it; the
 * testkit's fake machines implement it too.
 *
 * <pre>{@code
 * try (GpuDiscovery d = ...) {
 *     Node self = d.discover("node-a");
 * }
 * }</pre>
 */
public interface GpuDiscovery extends AutoCloseable {

    /** The local node under {@code nodeName}, with labels empty. */
    Node discover(String nodeName);

    @Override
    void close();
}
