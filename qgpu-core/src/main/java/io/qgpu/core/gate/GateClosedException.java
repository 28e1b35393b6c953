package io.qgpu.core.gate;

/**
 * The gate was closed: acquires fail with it, and waiting acquires and parked checkpoints are woken
 * with it. Leases that were running when the gate closed stay valid until they are closed.
 *
 * <pre>{@code
 * gate.close();
 * gate.acquire(tenant);   // throws GateClosedException
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public final class GateClosedException extends GateException {
    private static final long serialVersionUID = 1L;

    public GateClosedException(String gpuUuid) {
        super("gate " + gpuUuid + " is closed");
    }
}
