package io.qgpu.core.gate;

import io.qgpu.api.Ticker;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/** A hand-driven ticker plus the hand-cranked timer that goes with it. */
final class FakeClock implements Ticker {
    static final long MS = 1_000_000L;
    static final long S = 1_000_000_000L;

    private final AtomicLong now;
    final ManualGateTimer timer;

    FakeClock(long start) {
        this.now = new AtomicLong(start);
        this.timer = new ManualGateTimer(this);
    }

    FakeClock() {
        this(0);
    }

    @Override
    public long read() {
        return now.get();
    }

    /** Sets the time (never backwards) and runs the timer tasks that are due, in time order. */
    void at(long t) {
        if (t < now.get()) {
            throw new IllegalArgumentException("time goes forward only: " + t + " < " + now.get());
        }
        while (timer.nextAt() <= t) {
            long next = Math.max(now.get(), timer.nextAt());
            now.set(next);
            timer.runDue();
        }
        now.set(t);
        timer.runDue();
    }

    /** Sets the time without running the timer: a timer thread that is late. */
    void jump(long t) {
        if (t < now.get()) {
            throw new IllegalArgumentException("time goes forward only");
        }
        now.set(t);
    }

    void advance(long nanos) {
        at(now.get() + nanos);
    }

    void advance(Duration d) {
        advance(d.toNanos());
    }

    GateConfig.Builder config() {
        return GateConfig.custom().ticker(this).timer(timer);
    }
}
