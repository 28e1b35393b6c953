package io.qgpu.testkit.sim;

import java.util.Arrays;

/**
 * When one tenant used the GPU during a simulation: segments {@code [start, end)} with the fraction
 * of the GPU it had (1 for an offline holder, {@code 1/k} for one of {@code k} online tenants
 * sharing it). Answers GPU time over any interval and the extremes of usage over sliding windows
 * exactly (usage is piecewise linear, so the extremes lie on segment boundaries or a window away
 * from them). Time before 0 counts as idle.
 *
 * <pre>{@code
 * BusyLog log = result.busy("train-a");
 * double worst = log.maxWindowUsage(10_000_000_000L, 0, result.scenario().durationNanos());
 * double share = worst / 10e9;   // the largest share of any 10 s window
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public final class BusyLog {

    private final long[] starts;
    private final long[] ends;
    private final double[] rates;
    /** GPU time before segment i. */
    private final double[] before;

    private BusyLog(long[] starts, long[] ends, double[] rates, int n) {
        this.starts = Arrays.copyOf(starts, n);
        this.ends = Arrays.copyOf(ends, n);
        this.rates = Arrays.copyOf(rates, n);
        this.before = new double[n + 1];
        for (int i = 0; i < n; i++) {
            before[i + 1] = before[i] + (this.ends[i] - this.starts[i]) * this.rates[i];
        }
    }

    /** Number of segments. */
    public int segments() {
        return starts.length;
    }

    /** Total GPU time in nanoseconds. */
    public double gpuNanos() {
        return before[starts.length];
    }

    /** GPU time in {@code (-inf, t)}. */
    public double gpuNanosBefore(long t) {
        int i = Arrays.binarySearch(starts, t);
        int seg = i >= 0 ? i - 1 : -i - 2;   // last segment starting before t
        if (seg < 0) {
            return 0;
        }
        return before[seg] + (Math.min(t, ends[seg]) - starts[seg]) * rates[seg];
    }

    /** GPU time in {@code [from, to)}. */
    public double gpuNanosBetween(long from, long to) {
        return gpuNanosBefore(to) - gpuNanosBefore(from);
    }

    /** The largest GPU time in any window {@code (t - window, t]} with {@code t} in {@code [fromEnd, toEnd]}. */
    public double maxWindowUsage(long window, long fromEnd, long toEnd) {
        return extreme(window, fromEnd, toEnd, true);
    }

    /** The smallest GPU time in any window {@code (t - window, t]} with {@code t} in {@code [fromEnd, toEnd]}. */
    public double minWindowUsage(long window, long fromEnd, long toEnd) {
        return extreme(window, fromEnd, toEnd, false);
    }

    private double extreme(long window, long fromEnd, long toEnd, boolean max) {
        if (window <= 0 || toEnd < fromEnd) {
            throw new IllegalArgumentException("window " + window + " over [" + fromEnd + ", " + toEnd + "]");
        }
        double best = usage(window, fromEnd);
        best = max ? Math.max(best, usage(window, toEnd)) : Math.min(best, usage(window, toEnd));
        for (int i = 0; i < starts.length; i++) {
            long[] candidates = {starts[i], ends[i], starts[i] + window, ends[i] + window};
            for (long t : candidates) {
                if (t >= fromEnd && t <= toEnd) {
                    double u = usage(window, t);
                    best = max ? Math.max(best, u) : Math.min(best, u);
                }
            }
        }
        return best;
    }

    private double usage(long window, long t) {
        return gpuNanosBefore(t) - gpuNanosBefore(t - window);
    }

    /** Collects segments in time order, merging contiguous ones with the same rate. */
    static final class Builder {
        private long[] starts = new long[64];
        private long[] ends = new long[64];
        private double[] rates = new double[64];
        private int n;

        void add(long start, long end, double rate) {
            if (end <= start || rate <= 0) {
                return;
            }
            if (n > 0) {
                if (start < ends[n - 1]) {
                    throw new IllegalStateException("busy segment [" + start + ", " + end + ") overlaps the previous one ending at "
                            + ends[n - 1]);
                }
                if (start == ends[n - 1] && rates[n - 1] == rate) {
                    ends[n - 1] = end;
                    return;
                }
            }
            if (n == starts.length) {
                starts = Arrays.copyOf(starts, n * 2);
                ends = Arrays.copyOf(ends, n * 2);
                rates = Arrays.copyOf(rates, n * 2);
            }
            starts[n] = start;
            ends[n] = end;
            rates[n] = rate;
            n++;
        }

        BusyLog build() {
            return new BusyLog(starts, ends, rates, n);
        }
    }
}
