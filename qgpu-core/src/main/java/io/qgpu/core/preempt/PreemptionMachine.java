package io.qgpu.core.preempt;

import io.qgpu.api.Validate;

/**
 * Online/offline priority preemption on one GPU as a pure function: {@code next(state, event)}
 * returns the next {@link PreemptionState} and the {@link Action}s to take, and touches nothing
 * else. Time comes with each event; timers are values in the state ({@link PreemptionState#nextTimer()})
 * that the caller turns into a {@link PreemptionEvent.Tick} when they are due (any later event fires
 * them too, at their due time, before it is applied; timers that an event makes due at once fire
 * after it). The same function drives the simulator, model checkers, and real threads through
 * {@link PreemptionController}.
 *
 * <p>Rules (qGPU's online/offline hybrid deployment): online work gets the GPU within the
 * preemption bound; running offline tenants are suspended and later resume where they stopped; after
 * online work has been idle for the release delay the GPU goes back to offline work (at once, with the
 * offline floor, while a suspended offline tenant is below its request: see below); which offline
 * tenant runs is up to the GPU's isolation policy (a {@link io.qgpu.core.compute.ComputeEngine}),
 * reported here with {@code Start}/{@code Stop}; online tenants compete with no policy.
 *
 * <table>
 *   <caption>GPU modes</caption>
 *   <tr><th>mode</th><th>event / timer</th><th>next mode</th><th>actions</th></tr>
 *   <tr><td>OFFLINE</td><td>online Submit, an offline tenant RUNNING</td><td>PREEMPTING, deadline = at + bound</td>
 *       <td>ModeChanged; Suspend each RUNNING offline tenant</td></tr>
 *   <tr><td>OFFLINE</td><td>online Submit, no offline tenant RUNNING</td><td>ONLINE</td><td>ModeChanged; RunOnline(waited 0)</td></tr>
 *   <tr><td>PREEMPTING</td><td>last SUSPENDING tenant resolved (Suspended, Stop, Idle, Deregister), an online tenant WAITING</td>
 *       <td>ONLINE</td><td>ModeChanged; RunOnline(waited) each WAITING tenant</td></tr>
 *   <tr><td>PREEMPTING</td><td>same, no online tenant WAITING</td><td>RELEASING, timer = max(at, last online idle + delay)</td><td>ModeChanged</td></tr>
 *   <tr><td>PREEMPTING</td><td>deadline timer</td><td>as the two rows above</td><td>ForceSuspended each SUSPENDING tenant first</td></tr>
 *   <tr><td>ONLINE</td><td>Idle or Deregister of the last RUNNING online tenant</td><td>RELEASING, timer = at + delay</td><td>ModeChanged</td></tr>
 *   <tr><td>RELEASING</td><td>online Submit</td><td>ONLINE, timer cancelled</td><td>ModeChanged; RunOnline(waited 0)</td></tr>
 *   <tr><td>RELEASING</td><td>release timer</td><td>OFFLINE</td><td>ModeChanged; Resume each SUSPENDED tenant</td></tr>
 *   <tr><td>RELEASING</td><td>Usage, offline Submit or Deregister</td><td>RELEASING, timer recomputed (below)</td><td></td></tr>
 * </table>
 *
 * <p>The offline floor ({@link PreemptionConfig#offlineFloor()}, on by default): the release timer,
 * wherever the table says "delay", is the earlier of the release rule's hold after online last went
 * idle and the earliest {@link PreemptionEvent.Usage#belowFrom()} of a SUSPENDED offline tenant (one
 * with work held), never before the event's time. So while such a tenant is below its request over
 * the usage window, online going idle returns the GPU to offline work at once; a tenant whose usage
 * slides below its request during a hold is released then; with every held tenant at or above its
 * request the hold applies. Online work is never delayed by it. A tenant never reported by
 * {@code Usage} counts as never below.
 *
 * <table>
 *   <caption>Tenant phases (every pair not listed is illegal)</caption>
 *   <tr><th>class</th><th>phase</th><th>event</th><th>condition</th><th>next phase (side effects)</th></tr>
 *   <tr><td>any</td><td>unregistered</td><td>Register</td><td></td><td>IDLE</td></tr>
 *   <tr><td>any</td><td>any</td><td>Deregister</td><td></td><td>removed; completes a preemption or starts the release delay as its phase requires</td></tr>
 *   <tr><td>online</td><td>IDLE</td><td>Submit</td><td>OFFLINE, an offline tenant RUNNING</td><td>WAITING (GPU to PREEMPTING)</td></tr>
 *   <tr><td>online</td><td>IDLE</td><td>Submit</td><td>OFFLINE, none RUNNING; ONLINE; RELEASING</td><td>RUNNING (GPU to ONLINE)</td></tr>
 *   <tr><td>online</td><td>IDLE</td><td>Submit</td><td>PREEMPTING</td><td>WAITING</td></tr>
 *   <tr><td>online</td><td>WAITING</td><td>(preemption complete or deadline)</td><td></td><td>RUNNING, RunOnline(waited)</td></tr>
 *   <tr><td>online</td><td>WAITING</td><td>Idle</td><td></td><td>IDLE</td></tr>
 *   <tr><td>online</td><td>RUNNING</td><td>Idle</td><td></td><td>IDLE (the last one: GPU to RELEASING)</td></tr>
 *   <tr><td>offline</td><td>IDLE</td><td>Submit</td><td>OFFLINE</td><td>READY</td></tr>
 *   <tr><td>offline</td><td>IDLE</td><td>Submit</td><td>PREEMPTING, ONLINE, RELEASING</td><td>SUSPENDED</td></tr>
 *   <tr><td>offline</td><td>READY</td><td>Start</td><td></td><td>RUNNING</td></tr>
 *   <tr><td>offline</td><td>READY</td><td>Idle</td><td></td><td>IDLE</td></tr>
 *   <tr><td>offline</td><td>READY</td><td>(online Submit)</td><td></td><td>SUSPENDED</td></tr>
 *   <tr><td>offline</td><td>RUNNING</td><td>Stop</td><td></td><td>READY</td></tr>
 *   <tr><td>offline</td><td>RUNNING</td><td>Idle</td><td></td><td>IDLE</td></tr>
 *   <tr><td>offline</td><td>RUNNING</td><td>(online Submit)</td><td></td><td>SUSPENDING, Suspend</td></tr>
 *   <tr><td>offline</td><td>SUSPENDING</td><td>Suspended, Stop</td><td></td><td>SUSPENDED</td></tr>
 *   <tr><td>offline</td><td>SUSPENDING</td><td>Idle</td><td></td><td>IDLE</td></tr>
 *   <tr><td>offline</td><td>SUSPENDING</td><td>(deadline)</td><td></td><td>SUSPENDED, ForceSuspended</td></tr>
 *   <tr><td>offline</td><td>SUSPENDED</td><td>(release timer)</td><td></td><td>READY, Resume</td></tr>
 *   <tr><td>offline</td><td>any</td><td>Usage</td><td></td><td>unchanged (its below-request time recorded)</td></tr>
 *   <tr><td>any</td><td>any</td><td>Tick</td><td></td><td>unchanged (due timers fire)</td></tr>
 * </table>
 *
 * <p>Illegal, with {@link IllegalTransitionException} and no state change: Submit unless IDLE;
 * Idle from IDLE or from offline SUSPENDED (suspended work cannot finish); Start unless offline
 * READY; Stop unless offline RUNNING or SUSPENDING; Suspended unless offline SUSPENDING; Usage for an
 * online tenant; Register of
 * a registered tenant; any other event for an unregistered one. An event older than the state gets
 * {@link io.qgpu.api.InvalidValueException} (field {@code event.at}).
 *
 * <p>Invariants of every state ({@link PreemptionState#invariantViolations()}): OFFLINE has no online
 * work, no held offline tenant and no timer; PREEMPTING has a deadline, at least one SUSPENDING and
 * no READY/RUNNING offline tenant and no RUNNING online one; ONLINE has at least one RUNNING online
 * tenant, none WAITING, offline tenants only IDLE or SUSPENDED; RELEASING has a timer, no online work,
 * offline tenants only IDLE or SUSPENDED.
 *
 * <pre>{@code
 * PreemptionMachine m = PreemptionMachine.standard(PreemptionConfig.ofDefaults());
 * PreemptionState s = m.initial(0);
 * s = m.next(s, new PreemptionEvent.Register(0, "infer", PriorityClass.ONLINE)).state();
 * s = m.next(s, new PreemptionEvent.Register(0, "train", PriorityClass.OFFLINE)).state();
 * s = m.next(s, new PreemptionEvent.Submit(0, "train")).state();       // train READY
 * s = m.next(s, new PreemptionEvent.Start(0, "train")).state();        // policy picked train: RUNNING
 * Transition t = m.next(s, new PreemptionEvent.Submit(5, "infer"));   // PREEMPTING, Suspend(train)
 * t = m.next(t.state(), new PreemptionEvent.Suspended(40_000, "train"));   // ONLINE, RunOnline(infer, waited 39995 ns)
 * }</pre>
 *
 * <p>Thread safety: implementations are stateless or immutable and safe to share; states are values.
 */
public interface PreemptionMachine {

    /** The machine with the rules above and the given timing. */
    static PreemptionMachine standard(PreemptionConfig config) {
        return new StandardPreemptionMachine(Validate.notNull("preemption.config", config));
    }

    /** The timing this machine applies. */
    PreemptionConfig config();

    /** A GPU without tenants at {@code at}. */
    default PreemptionState initial(long at) {
        return PreemptionState.initial(at);
    }

    /**
     * Applies one event.
     *
     * @throws IllegalTransitionException          if the event is illegal in {@code state}
     * @throws io.qgpu.api.InvalidValueException if the event is older than {@code state}
     */
    Transition next(PreemptionState state, PreemptionEvent event);
}
