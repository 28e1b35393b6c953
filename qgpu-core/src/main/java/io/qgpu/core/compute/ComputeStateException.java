package io.qgpu.core.compute;

import io.qgpu.api.QgpuException;

/**
 * A compute engine was driven in a way its state does not allow, for example a release by a tenant
 * that does not hold the token. The engine's state is unchanged when this is thrown.
 *
 * <pre>{@code
 * try {
 *     engine.release("not-the-holder", 0);
 * } catch (ComputeStateException e) {
 *     e.tenant();   // "not-the-holder"
 * }
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public final class ComputeStateException extends QgpuException {
    private static final long serialVersionUID = 1L;

    private final String tenant;

    public ComputeStateException(String tenant, String message) {
        super("tenant \"" + tenant + "\": " + message);
        this.tenant = tenant;
    }

    /** The tenant the refused call named. */
    public String tenant() {
        return tenant;
    }
}
