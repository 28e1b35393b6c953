package io.qgpu.core.gate.internal;

import io.qgpu.api.spi.ProcessUsageSample;
import io.qgpu.api.spi.ProcessUsageSource;
import java.util.ArrayDeque;
import java.util.List;

/**
 * Corrects lease-time accounting with what the driver measured for this process: the factor is the
 * GPU time measured in per-process samples (SM utilization times the time since the process's
 * previous sample, at most one report interval) over the lease time the gate counted in the same
 * stretch of its ticker, summed over the recent updates that cover one window. A factor below 1 means
 * leases were held while the GPU idled (host work inside leases); above 1, kernels ran after leases
 * closed. Without enough lease time to compare (under 1% of the window) the factor keeps its value.
 * The factor is bounded to [{@value #MIN_FACTOR}, {@value #MAX_FACTOR}] so that one bad sample cannot
 * lift or stop a tenant outright.
 *
 * <p>Known approximation: lease time is summed over tenants, so overlapping leases of two online
 * tenants count twice, while the GPU ran them side by side.
 *
 * <p>Thread safety: not thread-safe; used under the gate's lock.
 */
final class UsageCorrection {
    static final double MIN_FACTOR = 0.05;
    static final double MAX_FACTOR = 20.0;

    private final ProcessUsageSource source;
    private final String gpu;
    private final long pid;
    private final long windowNanos;
    private final long maxPeriodMicros;
    private long lastMicros;
    private long prevSampleMicros;
    private long lastLeaseTotal = -1;
    private final ArrayDeque<long[]> history = new ArrayDeque<>(); // {leasedNanos, measuredNanos}
    private double factor = 1.0;

    UsageCorrection(ProcessUsageSource source, String gpu, long pid, long windowNanos, long intervalNanos) {
        this.source = source;
        this.gpu = gpu;
        this.pid = pid;
        this.windowNanos = windowNanos;
        this.maxPeriodMicros = Math.max(1, intervalNanos / 1000);
    }

    double factor() {
        return factor;
    }

    /** Pulls new samples and updates the factor; {@code leaseTotalNanos} is the lease time counted so far. */
    double update(long leaseTotalNanos, long intervalNanos) {
        List<ProcessUsageSample> samples = source.samples(gpu, lastMicros);
        double measured = 0;
        for (ProcessUsageSample s : samples) {
            lastMicros = Math.max(lastMicros, s.timestampMicros());
            if (s.pid() != pid) {
                continue;
            }
            if (prevSampleMicros > 0 && s.timestampMicros() > prevSampleMicros) {
                long period = Math.min(s.timestampMicros() - prevSampleMicros, maxPeriodMicros);
                measured += s.smUtilPercent() / 100.0 * period * 1000.0;
            }
            prevSampleMicros = Math.max(prevSampleMicros, s.timestampMicros());
        }
        if (lastLeaseTotal < 0) {
            lastLeaseTotal = leaseTotalNanos;
            return factor;
        }
        long leased = leaseTotalNanos - lastLeaseTotal;
        lastLeaseTotal = leaseTotalNanos;
        history.addLast(new long[] {leased, Math.round(measured)});
        long keep = Math.max(1, windowNanos / Math.max(1, intervalNanos));
        while (history.size() > keep) {
            history.removeFirst();
        }
        long sumLeased = 0;
        long sumMeasured = 0;
        for (long[] h : history) {
            sumLeased += h[0];
            sumMeasured += h[1];
        }
        if (sumLeased >= windowNanos / 100) {
            factor = Math.max(MIN_FACTOR, Math.min(MAX_FACTOR, (double) sumMeasured / sumLeased));
        }
        return factor;
    }
}
