package io.qgpu.core.gate;

import io.qgpu.api.Ticker;
import io.qgpu.api.Validate;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

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
        return new SystemTimer(ticker);
    }

    /** {@link #system(Ticker)}: a {@link ScheduledThreadPoolExecutor} with one daemon thread. */
    final class SystemTimer implements GateTimer {
        private static final AtomicInteger IDS = new AtomicInteger();
        private final Ticker ticker;
        private final ScheduledThreadPoolExecutor executor;

        SystemTimer(Ticker ticker) {
            this.ticker = Validate.notNull("gateTimer.ticker", ticker);
            ThreadFactory tf = r -> {
                Thread t = new Thread(r, "qgpu-gate-timer-" + IDS.incrementAndGet());
                t.setDaemon(true);
                return t;
            };
            this.executor = new ScheduledThreadPoolExecutor(1, tf);
            this.executor.setRemoveOnCancelPolicy(true);
        }

        @Override
        public Task schedule(long atNanos, Runnable task) {
            Validate.notNull("gateTimer.task", task);
            long delay = Math.max(0, atNanos - ticker.read());
            ScheduledFuture<?> f = executor.schedule(task, delay, TimeUnit.NANOSECONDS);
            return () -> f.cancel(false);
        }

        @Override
        public void shutdown() {
            executor.shutdownNow();
        }
    }
}
