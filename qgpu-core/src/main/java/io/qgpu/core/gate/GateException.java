package io.qgpu.core.gate;

import io.qgpu.api.QgpuException;

/**
 * Root of the runtime gate's own exceptions: an acquire that timed out, a gate that was closed, a
 * tenant or lease used in a way its state does not allow.
 *
 * <pre>{@code
 * try (Lease lease = gate.acquire(tenant, Duration.ofMillis(50))) {
 *     runBatch();
 * } catch (GateException e) {
 *     log.warn("no GPU time: {}", e.getMessage());
 * }
 * }</pre>
 *
 * <p>Thread safety: immutable once thrown.
 */
public abstract class GateException extends QgpuException {
    private static final long serialVersionUID = 1L;

    protected GateException(String message) {
        super(message);
    }
}
