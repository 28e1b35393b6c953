package io.qgpu.testkit.sim;

import io.qgpu.api.Validate;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Each tenant's share of its GPU per time bucket (GPU time in the bucket divided by the bucket's
 * length), for charts.
 *
 * <pre>{@code
 * ShareSeries s = result.shares();
 * for (int i = 0; i < s.buckets(); i++) {
 *     System.out.printf("%.1f s: %.2f%n", s.bucketStartNanos(i) / 1e9, s.share("train-a", i));
 * }
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public final class ShareSeries {

    private final long bucketNanos;
    private final long durationNanos;
    private final Map<String, double[]> shares;

    ShareSeries(long bucketNanos, long durationNanos, Map<String, double[]> shares) {
        this.bucketNanos = bucketNanos;
        this.durationNanos = durationNanos;
        Map<String, double[]> copy = new LinkedHashMap<>();
        shares.forEach((k, v) -> copy.put(k, v.clone()));
        this.shares = copy;
    }

    static ShareSeries of(long bucketNanos, long durationNanos, Map<String, BusyLog> busy) {
        int n = (int) ((durationNanos + bucketNanos - 1) / bucketNanos);
        Map<String, double[]> m = new LinkedHashMap<>();
        busy.forEach((tenant, log) -> {
            double[] s = new double[n];
            for (int i = 0; i < n; i++) {
                long a = i * bucketNanos;
                long b = Math.min(durationNanos, a + bucketNanos);
                s[i] = log.gpuNanosBetween(a, b) / (b - a);
            }
            m.put(tenant, s);
        });
        return new ShareSeries(bucketNanos, durationNanos, m);
    }

    public long bucketNanos() {
        return bucketNanos;
    }

    public int buckets() {
        return (int) ((durationNanos + bucketNanos - 1) / bucketNanos);
    }

    public long bucketStartNanos(int i) {
        return i * bucketNanos;
    }

    /** Tenants in scenario order. */
    public List<String> tenants() {
        return List.copyOf(shares.keySet());
    }

    public double share(String tenant, int bucket) {
        return series0(tenant)[bucket];
    }

    /** A copy of the tenant's shares, one per bucket. */
    public double[] series(String tenant) {
        return series0(tenant).clone();
    }

    private double[] series0(String tenant) {
        double[] s = shares.get(Validate.notNull("tenant", tenant));
        if (s == null) {
            throw new io.qgpu.api.InvalidValueException("tenant", tenant, "is not in this simulation");
        }
        return s;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("ShareSeries[bucket=" + bucketNanos + "ns");
        shares.forEach((k, v) -> sb.append(' ').append(k).append('=').append(Arrays.toString(v)));
        return sb.append(']').toString();
    }
}
