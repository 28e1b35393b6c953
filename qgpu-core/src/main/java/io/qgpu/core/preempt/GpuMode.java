package io.qgpu.core.preempt;

/**
 * Which priority class owns one GPU's compute. See {@link PreemptionMachine} for the transitions.
 *
 * <pre>{@code
 * if (controller.state().mode() == GpuMode.OFFLINE) {
 *     // the GPU's isolation policy picks which offline tenant runs
 * }
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public enum GpuMode {
    /** No online work: offline tenants may run, shared by the GPU's isolation policy. */
    OFFLINE,
    /** Online work was submitted; running offline tenants are being suspended (at most the preemption bound). */
    PREEMPTING,
    /** Online tenants run, competing freely; every offline tenant with work is suspended. */
    ONLINE,
    /** Online went idle; offline stays suspended until the release delay has passed. */
    RELEASING
}
