package io.qgpu.testkit.sim;

/**
 * Kinds of {@link TraceEvent}.
 *
 * <pre>{@code
 * result.trace().stream().filter(e -> e.kind() == TraceKind.FORCED).count();
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public enum TraceKind {
    /** The tenant has work (was idle). */
    SUBMIT,
    /** The tenant has no more work. */
    IDLE,
    /** An offline tenant got the GPU's token. */
    GRANT,
    /** An offline tenant gave the token back. */
    RELEASE,
    /** An online tenant runs (after a preemption if one was needed). */
    RUN,
    /** A running offline tenant was told to suspend. */
    SUSPEND,
    /** An offline tenant confirmed its suspension. */
    SUSPENDED,
    /** An offline tenant missed the preemption bound and was suspended by force. */
    FORCED,
    /** A suspended offline tenant may run again. */
    RESUME,
    /** The GPU's mode changed (tenant {@code -}). */
    MODE,
    /** A request of an open-loop tenant completed. */
    REQUEST_DONE,
    /** A training iteration completed. */
    ITERATION
}
