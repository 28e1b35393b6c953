package io.qgpu.core.gate;

import java.time.Duration;

/**
 * An {@code acquire} with a timeout did not get GPU time in time; no lease was taken.
 *
 * <pre>{@code
 * try (Lease lease = gate.acquire(tenant, Duration.ofMillis(20))) {
 *     runBatch();
 * } catch (GateTimeoutException e) {
 *     e.timeout();   // PT0.02S
 * }
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public final class GateTimeoutException extends GateException {
    private static final long serialVersionUID = 1L;

    private final String tenant;
    private final transient Duration timeout;

    public GateTimeoutException(String gpuUuid, String tenant, Duration timeout) {
        super("gate " + gpuUuid + ": tenant \"" + tenant + "\" got no GPU time within " + io.qgpu.core.time.Durations.format(timeout));
        this.tenant = tenant;
        this.timeout = timeout;
    }

    /** The tenant that waited. */
    public String tenant() {
        return tenant;
    }

    /** How long it waited. */
    public Duration timeout() {
        return timeout;
    }
}
