package io.qgpu.core.gate;

import io.qgpu.api.Ticker;
import io.qgpu.api.Validate;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@link GateTimer#system(Ticker)}: a {@link ScheduledThreadPoolExecutor} with one daemon thread; ticker
 * times become delays with the same ticker.
 *
 * <p>Thread safety: thread-safe.
 */
final class SystemGateTimer implements GateTimer {
    private static final AtomicInteger IDS = new AtomicInteger();
    private final Ticker ticker;
    private final ScheduledThreadPoolExecutor executor;

    SystemGateTimer(Ticker ticker) {
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

    /**
     * A view of this timer's thread that converts times of {@code other} to delays; its
     * {@link GateTimer#shutdown()} does nothing (the owner of this timer shuts the thread down).
     * Tasks scheduled after the shutdown are dropped.
     */
    GateTimer forTicker(Ticker other) {
        Validate.notNull("gateTimer.ticker", other);
        return (atNanos, task) -> {
            Validate.notNull("gateTimer.task", task);
            if (executor.isShutdown()) {
                return () -> { };
            }
            long delay = Math.max(0, atNanos - other.read());
            try {
                ScheduledFuture<?> f = executor.schedule(task, delay, TimeUnit.NANOSECONDS);
                return () -> f.cancel(false);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                return () -> { };   // shut down meanwhile
            }
        };
    }
}
