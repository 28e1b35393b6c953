package io.qgpu.core.gate;

import io.qgpu.api.Ticker;
import io.qgpu.api.Validate;
import java.util.PriorityQueue;

/**
 * A hand-cranked {@link GateTimer} for tests and simulations: tasks run only inside
 * {@link #runDue()}, on the calling thread, in time order (ties in scheduling order), and only those
 * whose time has come on the ticker. Together with a manual ticker it makes a gate fully
 * deterministic.
 *
 * <pre>{@code
 * AtomicLong now = new AtomicLong();
 * Ticker ticker = now::get;
 * ManualGateTimer timer = new ManualGateTimer(ticker);
 * Gate gate = Gate.create("GPU-0", GateConfig.custom().ticker(ticker).timer(timer).build());
 * now.addAndGet(100_000_000);   // 100 ms pass
 * timer.runDue();               // the release delay ends now
 * }</pre>
 *
 * <p>Thread safety: thread-safe (tasks may be scheduled from any thread); tasks run on the thread
 * that calls {@link #runDue()}.
 */
public final class ManualGateTimer implements GateTimer {

    private final Ticker ticker;
    private final PriorityQueue<Entry> queue = new PriorityQueue<>();
    private long seq;

    public ManualGateTimer(Ticker ticker) {
        this.ticker = Validate.notNull("manualGateTimer.ticker", ticker);
    }

    @Override
    public synchronized Task schedule(long atNanos, Runnable task) {
        Validate.notNull("manualGateTimer.task", task);
        Entry e = new Entry(atNanos, seq++, task);
        queue.add(e);
        return () -> {
            synchronized (ManualGateTimer.this) {
                e.cancelled = true;
                queue.remove(e);
            }
        };
    }

    /**
     * Runs every task that is due at the ticker's current time, including tasks that running ones
     * schedule for a time already passed.
     *
     * @return how many tasks ran
     */
    public int runDue() {
        int n = 0;
        while (true) {
            Entry e;
            synchronized (this) {
                e = queue.peek();
                if (e == null || e.at > ticker.read()) {
                    return n;
                }
                queue.poll();
            }
            e.task.run();
            n++;
        }
    }

    /** Time of the earliest pending task, or {@link Long#MAX_VALUE} if none is pending. */
    public synchronized long nextAt() {
        Entry e = queue.peek();
        return e == null ? Long.MAX_VALUE : e.at;
    }

    /** Number of pending tasks. */
    public synchronized int pending() {
        return queue.size();
    }

    private static final class Entry implements Comparable<Entry> {
        final long at;
        final long seq;
        final Runnable task;
        boolean cancelled;

        Entry(long at, long seq, Runnable task) {
            this.at = at;
            this.seq = seq;
            this.task = task;
        }

        @Override
        public int compareTo(Entry o) {
            int c = Long.compare(at, o.at);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }
}
