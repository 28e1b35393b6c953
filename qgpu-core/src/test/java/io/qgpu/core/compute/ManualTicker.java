package io.qgpu.core.compute;

import io.qgpu.api.Ticker;

/** A hand-driven clock for tests. */
public final class ManualTicker implements Ticker {
    private long now;

    public ManualTicker(long start) {
        this.now = start;
    }

    @Override
    public long read() {
        return now;
    }

    public void set(long t) {
        if (t < now) {
            throw new IllegalArgumentException("time goes forward only: " + t + " < " + now);
        }
        now = t;
    }

    public void advance(long nanos) {
        set(now + nanos);
    }

    public static long ms(double ms) {
        return Math.round(ms * 1_000_000.0);
    }
}
