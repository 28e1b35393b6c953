package io.qgpu.core.gate.internal;

import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.api.spi.ProcessUsageSample;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The correction factor's arithmetic, exactly: measured GPU time from per-process samples (SM
 * utilization times the time since the process's previous sample, capped at one report interval)
 * over the lease time counted in the same updates, summed over one window of updates, bounded.
 */
class UsageCorrectionTest {

    private static final String GPU = "GPU-u";
    private static final long PID = 42;
    private static final long MS = 1_000_000L;
    private static final long WINDOW = 1_000 * MS;       // 1 s
    private static final long INTERVAL = 250 * MS;       // 4 updates per window

    /** A source that returns what the test queued, and records the {@code since} it was asked with. */
    private static final class Queue implements io.qgpu.api.spi.ProcessUsageSource {
        final List<ProcessUsageSample> next = new ArrayList<>();
        final List<Long> sinces = new ArrayList<>();

        @Override
        public List<ProcessUsageSample> samples(String gpuUuid, long sinceMicros) {
            assertEquals(GPU, gpuUuid);
            sinces.add(sinceMicros);
            List<ProcessUsageSample> out = List.copyOf(next);
            next.clear();
            return out;
        }

        void add(long pid, long micros, int sm) {
            next.add(new ProcessUsageSample(GPU, pid, micros, sm, 0, ProcessUsageSample.UNKNOWN_MEMORY));
        }
    }

    private final Queue source = new Queue();
    private final UsageCorrection c = new UsageCorrection(source, GPU, PID, WINDOW, INTERVAL);

    @Test
    void theFirstUpdateOnlySetsTheBaseline() {
        source.add(PID, 1_000, 50);
        assertEquals(1.0, c.update(5 * WINDOW, INTERVAL));
        assertEquals(1.0, c.factor());
        assertEquals(List.of(0L), source.sinces);
    }

    @Test
    void factorIsMeasuredOverLeasedTimeOfTheSameUpdates() {
        c.update(0, INTERVAL);                              // baseline: lease total 0
        source.add(PID, 1_000_000, 100);                    // first sample of the pid: no period yet
        source.add(PID, 1_100_000, 50);                     // 100 ms at 50% = 50 ms measured
        source.add(7, 1_150_000, 100);                      // another process: ignored
        assertEquals(0.5, c.update(100 * MS, INTERVAL), 1e-12);   // 50 ms over 100 ms leased
        source.add(PID, 1_200_000, 100);                    // 100 ms at 100%
        assertEquals(150.0 / 200.0, c.update(200 * MS, INTERVAL), 1e-12);
        assertEquals(List.of(0L, 0L, 1_150_000L), source.sinces, "asks after the newest sample of any pid");
    }

    @Test
    void aPeriodCountsAtMostOneReportInterval() {
        c.update(0, INTERVAL);
        source.add(PID, 1_000_000, 100);
        source.add(PID, 3_000_000, 40);                      // 2 s since the last sample: counts 250 ms
        assertEquals(100.0 / 500.0, c.update(500 * MS, INTERVAL), 1e-12);
    }

    @Test
    void samplesOutOfOrderOrRepeatedAddNothing() {
        c.update(0, INTERVAL);
        source.add(PID, 2_000_000, 100);
        source.add(PID, 1_900_000, 100);                     // older than the last: no period
        source.add(PID, 2_000_000, 100);                     // same time: no period
        source.add(PID, 2_100_000, 100);                     // 100 ms at 100%
        assertEquals(100.0 / 400.0, c.update(400 * MS, INTERVAL), 1e-12);
    }

    @Test
    void onlyTheLastWindowOfUpdatesCounts() {
        c.update(0, INTERVAL);
        source.add(PID, 1_000_000, 100);
        long micros = 1_000_000;
        long lease = 0;
        for (int i = 0; i < 4; i++) {                        // 4 updates at 100%: factor 1
            micros += 250_000;
            lease += 250 * MS;
            source.add(PID, micros, 100);
            assertEquals(1.0, c.update(lease, INTERVAL), 1e-12);
        }
        for (int i = 0; i < 3; i++) {                        // 3 at 20%: 3 of the 4 updates kept
            micros += 250_000;
            lease += 250 * MS;
            source.add(PID, micros, 20);
            assertEquals((4 - 1 - i) * 1.0 / 4 + (i + 1) * 0.2 / 4, c.update(lease, INTERVAL), 1e-12,
                    "update " + i);
        }
        micros += 250_000;
        lease += 250 * MS;
        source.add(PID, micros, 20);
        assertEquals(0.2, c.update(lease, INTERVAL), 1e-12, "the 100% updates have left the window");
    }

    @Test
    void tooLittleLeaseTimeKeepsTheFactor() {
        c.update(0, INTERVAL);
        source.add(PID, 1_000_000, 100);
        source.add(PID, 1_100_000, 50);
        assertEquals(0.5, c.update(100 * MS, INTERVAL), 1e-12);
        // next updates: lease time below 1% of the window in total (9.99 ms), the factor stays
        UsageCorrection d = new UsageCorrection(source, GPU, PID, WINDOW, INTERVAL);
        d.update(0, INTERVAL);
        source.add(PID, 5_000_000, 100);
        source.add(PID, 5_100_000, 100);
        assertEquals(1.0, d.update(WINDOW / 100 - 1, INTERVAL), "under 1% of the window: factor kept");
        source.add(PID, 5_200_000, 100);
        assertEquals(UsageCorrection.MAX_FACTOR, d.update(WINDOW / 100, INTERVAL), 1e-12,
                "exactly 1% of the window: factor computed (200 ms over 10 ms, capped)");
    }

    @Test
    void theFactorIsBounded() {
        c.update(0, INTERVAL);
        source.add(PID, 1_000_000, 100);
        source.add(PID, 1_250_000, 100);                     // 250 ms measured
        assertEquals(UsageCorrection.MAX_FACTOR, c.update(10 * MS, INTERVAL), 1e-12);   // 25x, capped at 20
        UsageCorrection d = new UsageCorrection(source, GPU, PID, WINDOW, INTERVAL);
        d.update(0, INTERVAL);
        source.add(PID, 2_000_000, 1);
        source.add(PID, 2_010_000, 1);                       // 10 ms at 1% = 0.1 ms measured
        assertEquals(UsageCorrection.MIN_FACTOR, d.update(WINDOW, INTERVAL), 1e-12);     // 0.0001, floored
    }

    @Test
    void aShortIntervalKeepsAtLeastOneUpdate() {
        UsageCorrection d = new UsageCorrection(source, GPU, PID, WINDOW, 2 * WINDOW);   // interval > window
        d.update(0, 2 * WINDOW);
        source.add(PID, 1_000_000, 100);
        source.add(PID, 1_100_000, 30);                      // 100 ms at 30%
        assertEquals(0.3, d.update(100 * MS, 2 * WINDOW), 1e-12);
        source.add(PID, 1_200_000, 60);
        assertEquals(0.6, d.update(200 * MS, 2 * WINDOW), 1e-12, "only the last update is kept");
    }
}
