package io.qgpu.testkit.sim;

import java.util.Arrays;

/** A growable list of longs with nearest-rank percentiles (package-internal). */
final class LongList {
    private long[] a = new long[16];
    private int n;

    void add(long v) {
        if (n == a.length) {
            a = Arrays.copyOf(a, n * 2);
        }
        a[n++] = v;
    }

    int size() {
        return n;
    }

    /** Nearest-rank percentile, {@code p} in (0, 100]; -1 when empty. */
    long percentile(double p) {
        if (n == 0) {
            return -1;
        }
        long[] s = Arrays.copyOf(a, n);
        Arrays.sort(s);
        int rank = (int) Math.ceil(p / 100.0 * n);
        return s[Math.max(0, Math.min(n, rank) - 1)];
    }

    long max() {
        return n == 0 ? -1 : Arrays.stream(a, 0, n).max().getAsLong();
    }

    long min() {
        return n == 0 ? -1 : Arrays.stream(a, 0, n).min().getAsLong();
    }
}
