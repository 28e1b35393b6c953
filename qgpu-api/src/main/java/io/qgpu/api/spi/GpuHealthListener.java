package io.qgpu.api.spi;

/**
 * Told when a GPU's health changes. A ledger takes it in with
 * {@code e -> ledger.setHealth(e.gpuUuid(), e.health())}.
 *
 * <pre>{@code
 * GpuHealthListener log = e -> System.err.println(e.gpuUuid() + " is " + e.health() + ": " + e.cause());
 * }</pre>
 *
 * <p>Listeners are called on the thread that saw the change (for NVML, its event thread or the thread
 * whose call found the GPU lost); they must be thread-safe and return quickly. An exception thrown by a
 * listener is logged by the caller and does not stop the other listeners.
 */
@FunctionalInterface
public interface GpuHealthListener {

    void onHealthChange(GpuHealthEvent event);
}
