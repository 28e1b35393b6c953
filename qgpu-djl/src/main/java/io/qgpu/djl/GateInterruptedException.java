package io.qgpu.djl;

import io.qgpu.api.QgpuException;

/**
 * A thread was interrupted while it waited at the gate in a place that cannot throw
 * {@link InterruptedException} (a step of a streamed prediction). The thread's interrupt flag is set again,
 * and the stream is ended (its lease closed).
 *
 * <p>Thread safety: immutable.
 */
public final class GateInterruptedException extends QgpuException {
    private static final long serialVersionUID = 1L;

    private final String tenant;

    public GateInterruptedException(String tenant, InterruptedException cause) {
        super("interrupted while waiting at the gate for tenant " + tenant, cause);
        this.tenant = tenant;
    }

    /** The tenant whose lease the thread waited for. */
    public String tenant() {
        return tenant;
    }
}
