package io.qgpu.kubernetes.node.mps;

import io.qgpu.api.Ticker;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/** A ticker the test moves by hand. */
final class ManualTicker implements Ticker {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);

    @Override
    public long read() {
        return now.get();
    }

    void advance(Duration d) {
        now.addAndGet(d.toNanos());
    }
}
