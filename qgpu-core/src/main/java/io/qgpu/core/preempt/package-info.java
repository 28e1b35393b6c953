/**
 * Online/offline preemption on one GPU: online work gets the GPU within a bound, running offline tenants
 * are suspended and later resume, and the GPU goes back to offline work after a hold that a
 * {@link io.qgpu.core.preempt.ReleasePolicy} picks. {@link io.qgpu.core.preempt.PreemptionMachine} is
 * the rule as a pure function {@code next(state, event)} over an immutable
 * {@link io.qgpu.core.preempt.PreemptionState}, giving a {@link io.qgpu.core.preempt.Transition} of the
 * next state and the {@link io.qgpu.core.preempt.Action}s to take;
 * {@link io.qgpu.core.preempt.PreemptionController} drives it from real threads;
 * {@link io.qgpu.core.preempt.PreemptionConfig} holds the timing. The simulator, model checkers and
 * runtime code run the same machine.
 *
 * <pre>{@code
 * PreemptionController gpu0 = PreemptionController.create(PreemptionConfig.ofDefaults(), Ticker.system());
 * gpu0.register("infer", PriorityClass.ONLINE);
 * gpu0.register("train", PriorityClass.OFFLINE);
 * Transition t = gpu0.submit("infer");      // t.actions(): what to do now
 * }</pre>
 *
 * <p><b>Guarantees.</b> The machine, its states, events, actions and configs are immutable; the machine
 * touches nothing but its arguments, so the same events give the same transitions. An event the current
 * state does not accept throws {@link io.qgpu.core.preempt.IllegalTransitionException} and nothing
 * changes; an event older than the state throws {@link io.qgpu.api.InvalidValueException}. The
 * controller is thread-safe and lock-free, and never blocks, sleeps or starts a thread. Times are
 * nanoseconds of the GPU's {@link io.qgpu.api.Ticker}.
 *
 * <p>docs/compute.md in the repository, section "Online/offline preemption".
 */
@NullMarked
package io.qgpu.core.preempt;

import org.jspecify.annotations.NullMarked;
