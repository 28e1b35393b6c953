package io.qgpu.core.preempt;

import io.qgpu.api.QgpuException;

/**
 * An event that the preemption state machine does not accept in the current state, for example
 * {@code Start} for a suspended offline tenant, or any event for an unknown tenant. The state is
 * unchanged: the machine is pure, and the controller commits nothing.
 *
 * <pre>{@code
 * try {
 *     controller.start("train-1");
 * } catch (IllegalTransitionException e) {
 *     e.mode();    // ONLINE
 *     e.phase();   // "SUSPENDED"
 *     e.event();   // Start[at=..., tenant=train-1]
 * }
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public final class IllegalTransitionException extends QgpuException {
    private static final long serialVersionUID = 1L;

    /** The phase reported for a tenant that is not registered. */
    public static final String UNREGISTERED = "UNREGISTERED";

    private final GpuMode mode;
    private final String phase;
    private final transient PreemptionEvent event;

    public IllegalTransitionException(GpuMode mode, String phase, PreemptionEvent event, String rule) {
        super(event.getClass().getSimpleName() + (event.tenant() == null ? "" : "(" + event.tenant() + ")")
                + " at " + event.at() + " is illegal in mode " + mode
                + (phase == null ? "" : " with tenant phase " + phase) + ": " + rule);
        this.mode = mode;
        this.phase = phase;
        this.event = event;
    }

    /** The GPU's mode when the event came (after due timers fired). */
    public GpuMode mode() {
        return mode;
    }

    /** The tenant's phase name, {@link #UNREGISTERED}, or {@code null} for events without a tenant. */
    public String phase() {
        return phase;
    }

    /** The refused event. */
    public PreemptionEvent event() {
        return event;
    }
}
