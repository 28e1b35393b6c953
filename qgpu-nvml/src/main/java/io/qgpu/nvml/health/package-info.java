/**
 * GPU health from NVML, for anything that must stop placing work on a failing GPU (a ledger, a device
 * plugin): {@link io.qgpu.nvml.health.NvmlHealthMonitor} watches the GPUs of a session for Xid critical
 * errors on a daemon thread and tells {@link io.qgpu.api.spi.GpuHealthListener}s when a GPU turns
 * unhealthy.
 *
 * <pre>{@code
 * try (NvmlHealthMonitor monitor = NvmlHealthMonitor.builder(nvml)
 *         .listener(e -> ledger.setHealth(e.gpuUuid(), e.health()))
 *         .start()) {
 *     serve();
 * }
 * }</pre>
 *
 * <p><b>Guarantees.</b> An Xid not in the ignored list (by default 13, 31, 43, 45, 68 and 109, which
 * applications cause) makes its GPU unhealthy; so does a GPU found lost by any call of the session.
 * Listeners hear each change once, on the monitor's thread (Xids) or on the thread whose call found the
 * GPU lost. The monitor is thread-safe; it waits on NVML with a timeout, so {@code close()} returns
 * within about one timeout (500 ms by default).
 *
 * <p>docs/nvml.md in the repository, section "Health".
 */
@NullMarked
package io.qgpu.nvml.health;

import org.jspecify.annotations.NullMarked;
