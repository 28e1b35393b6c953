package io.qgpu.testkit.sim;

import io.qgpu.api.Validate;
import java.time.Duration;

/**
 * What preemption costs on the simulated GPUs (as on a real one).
 *
 * <ul>
 *   <li>{@code atomicKernels}: an offline kernel cannot be interrupted. When online work preempts,
 *       the kernel in flight runs to its end: the offline tenant confirms its suspension no earlier
 *       than that, and even a suspension forced at the bound only frees the GPU then; online work
 *       waits for it. Otherwise the GPU is free as soon as the suspension is confirmed or forced.</li>
 *   <li>{@code switchNanos}: each switch between offline and online work costs this much GPU time
 *       in which nothing runs (saving or restoring a context): online work that preempted a running
 *       offline tenant starts that much later, and an offline tenant that runs again after online
 *       work starts its kernel that much later.</li>
 * </ul>
 *
 * <pre>{@code
 * PreemptionCost none = PreemptionCost.NONE;                                  // the default
 * PreemptionCost gpu = PreemptionCost.of(true, Duration.ofNanos(200_000));       // atomic kernels, 200 us per switch
 * }</pre>
 *
 * @param atomicKernels whether an offline kernel in flight runs to its end before the GPU is free
 * @param switchNanos   GPU time each switch costs, 0 or more
 *
 * <p>Thread safety: immutable.
 */
public record PreemptionCost(boolean atomicKernels, long switchNanos) {

    /** Free, immediate preemption (interruptible kernels, no switch cost). */
    public static final PreemptionCost NONE = new PreemptionCost(false, 0);

    public PreemptionCost {
        Validate.atLeast("preemption.switch", switchNanos, 0);
    }

    public static PreemptionCost of(boolean atomicKernels, Duration switchCost) {
        Validate.notNull("preemption.switch", switchCost);
        return new PreemptionCost(atomicKernels, switchCost.toNanos());
    }

    /** Short text for reports. */
    public String describe() {
        return (atomicKernels ? "atomic kernels" : "interruptible kernels") + ", switch " + Dist.fmt(switchNanos);
    }
}
