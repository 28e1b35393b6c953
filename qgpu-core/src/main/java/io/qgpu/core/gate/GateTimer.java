package io.qgpu.core.gate;

import io.qgpu.api.Ticker;

/**
 * Runs the gate's timed work (the end of a release delay, a preemption deadline, the moment a tenant's
 * usage falls back under its limit, acquire timeouts, dead-owner reclaim passes) at a time of the gate's
 * {@link Ticker}. The gate never sleeps: it asks its timer to call it back. Production code uses
 * {@link #system(Ticker)}; tests and simulations use {@link ManualGateTimer}, which runs due tasks
 * only when cranked.
 *
 * <pre>{@code
 * GateTimer timer = GateTimer.system(Ticker.system());
 * GateTimer.Task t = timer.schedule(ticker.read() + 1_000_000, () -> log.info("1 ms later"));
 * t.cancel();
 * }</pre>
 *
 * <p>Implementations must be thread-safe; tasks must be short and must not block.
 */
public interface GateTimer {

    /** A scheduled task. */
    interface Task {
        /** Cancels the task if it has not run; no effect otherwise. */
        void cancel();
    }

    /**
     * Runs {@code task} once, at or after ticker time {@code atNanos} (at once if that is past).
     *
     * @return a handle to cancel it
     */
    Task schedule(long atNanos, Runnable task);

    /** Stops the timer's threads, if it has any; pending tasks are dropped. */
    default void shutdown() {
    }

    /**
     * A timer on one daemon thread that converts ticker times to delays with {@code ticker}; meant
     * for {@link Ticker#system()}.
     */
    static GateTimer system(Ticker ticker) {
        return new SystemGateTimer(ticker);
    }
}
