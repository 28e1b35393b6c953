package io.qgpu.core.preempt;

import io.qgpu.api.PriorityClass;
import io.qgpu.api.Ticker;
import io.qgpu.api.Validate;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongFunction;

/**
 * A thread-safe driver of a {@link PreemptionMachine} for real threads, in the manner of
 * resilience4j's {@code AtomicRateLimiter}: the state is one immutable value in an
 * {@link AtomicReference}; each call reads the state and then the {@link Ticker}, computes the next
 * state with the pure machine and publishes it with compare-and-set, retrying on contention. The
 * thread whose call made a transition gets its {@link Transition} and carries out its actions
 * (suspend a worker, wake one up, arm a timer for {@link PreemptionState#nextTimer()}).
 *
 * <p>Nothing blocks, sleeps or starts a thread. If the ticker reads earlier than the state's time
 * (two cores' clocks a few nanoseconds apart), the state's time is used for the event.
 *
 * <pre>{@code
 * PreemptionController gpu0 = PreemptionController.create(PreemptionConfig.ofDefaults(), Ticker.system());
 * gpu0.register("infer", PriorityClass.ONLINE);
 * gpu0.register("train", PriorityClass.OFFLINE);
 * gpu0.submit("train");
 * gpu0.start("train");
 * Transition t = gpu0.submit("infer");        // [ModeChanged(OFFLINE, PREEMPTING), Suspend(train)]
 * gpu0.suspended("train");                    // [ModeChanged(PREEMPTING, ONLINE), RunOnline(infer)]
 * gpu0.idle("infer");                         // RELEASING; timer at now + 100 ms
 * // when gpu0.state().nextTimer() is due:
 * gpu0.tick();                                // [ModeChanged(RELEASING, OFFLINE), Resume(train)]
 * }</pre>
 *
 * <p>Thread safety: thread-safe and lock-free.
 */
public final class PreemptionController {

    private final PreemptionMachine machine;
    private final Ticker ticker;
    private final AtomicReference<PreemptionState> state;

    public PreemptionController(PreemptionMachine machine, Ticker ticker) {
        this.machine = Validate.notNull("preemptionController.machine", machine);
        this.ticker = Validate.notNull("preemptionController.ticker", ticker);
        this.state = new AtomicReference<>(machine.initial(ticker.read()));
    }

    /** A controller over the standard machine. */
    public static PreemptionController create(PreemptionConfig config, Ticker ticker) {
        return new PreemptionController(PreemptionMachine.standard(config), ticker);
    }

    /** The state; never null: set in the constructor and only ever swapped for a transition's state. */
    private PreemptionState current() {
        return Objects.requireNonNull(state.get());
    }

    public PreemptionMachine machine() {
        return machine;
    }

    /** The current state (a snapshot: other threads may move on). */
    public PreemptionState state() {
        return current();
    }

    public Transition register(String tenant, PriorityClass priority) {
        return apply(at -> new PreemptionEvent.Register(at, tenant, priority));
    }

    public Transition deregister(String tenant) {
        return apply(at -> new PreemptionEvent.Deregister(at, tenant));
    }

    public Transition submit(String tenant) {
        return apply(at -> new PreemptionEvent.Submit(at, tenant));
    }

    public Transition idle(String tenant) {
        return apply(at -> new PreemptionEvent.Idle(at, tenant));
    }

    public Transition start(String tenant) {
        return apply(at -> new PreemptionEvent.Start(at, tenant));
    }

    public Transition stop(String tenant) {
        return apply(at -> new PreemptionEvent.Stop(at, tenant));
    }

    public Transition suspended(String tenant) {
        return apply(at -> new PreemptionEvent.Suspended(at, tenant));
    }

    /** Fires the timers that are due now. */
    public Transition tick() {
        return apply(PreemptionEvent.Tick::new);
    }

    /**
     * Applies the event {@code eventAt} builds for the current time, atomically.
     *
     * @throws IllegalTransitionException if the event is illegal in the current state (nothing is committed)
     */
    public Transition apply(LongFunction<? extends PreemptionEvent> eventAt) {
        Validate.notNull("preemptionController.event", eventAt);
        while (true) {
            PreemptionState current = current();
            long now = Math.max(ticker.read(), current.at());
            Transition t = machine.next(current, eventAt.apply(now));
            if (state.compareAndSet(current, t.state())) {
                return t;
            }
        }
    }
}
