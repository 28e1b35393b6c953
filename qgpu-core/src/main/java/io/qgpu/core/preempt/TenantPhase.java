package io.qgpu.core.preempt;

/**
 * Where one tenant of a GPU stands. Online tenants are {@code IDLE}, {@code WAITING} or
 * {@code RUNNING}; offline tenants are {@code IDLE}, {@code READY}, {@code RUNNING},
 * {@code SUSPENDING} or {@code SUSPENDED}. See {@link PreemptionMachine} for the transitions.
 *
 * <pre>{@code
 * state.phase("train-1").orElseThrow() == TenantPhase.SUSPENDED   // held off while online work runs
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public enum TenantPhase {
    /** No work submitted. */
    IDLE,
    /** Online: submitted, waiting for the running offline tenants to be suspended. */
    WAITING,
    /** On the GPU: an online tenant with work, or the offline tenant the policy picked. */
    RUNNING,
    /** Offline: has work and may run; waits for the isolation policy to pick it. */
    READY,
    /** Offline: was running when online work came; told to suspend, confirmation pending. */
    SUSPENDING,
    /** Offline: has work but is held off the GPU (its progress is kept); resumes after the release delay. */
    SUSPENDED
}
