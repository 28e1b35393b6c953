package io.qgpu.core.preempt;

import io.qgpu.api.Validate;
import java.util.List;

/**
 * The result of one event: the next state and the actions, in the order they took effect.
 *
 * <pre>{@code
 * Transition t = controller.submit("infer-1");
 * t.actions();                 // [ModeChanged(OFFLINE, PREEMPTING), Suspend(train-1)]
 * t.state().nextTimer();       // the preemption deadline
 * }</pre>
 *
 * @param state   the state after the event
 * @param actions what to do, in order
 *
 * <p>Thread safety: immutable.
 */
public record Transition(PreemptionState state, List<Action> actions) {
    public Transition {
        Validate.notNull("transition.state", state);
        actions = Validate.list("transition.actions", actions);
    }
}
