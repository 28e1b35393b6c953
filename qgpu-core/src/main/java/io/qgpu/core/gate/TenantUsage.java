package io.qgpu.core.gate;

/**
 * One tenant's use of the GPU as the gate accounts it: lease time in the sliding window (a tenant is
 * busy while at least one of its leases runs; concurrent leases count once), the same after the
 * optional NVML correction, its limit, and its leases now.
 *
 * <pre>{@code
 * TenantUsage u = gate.usage(chat);
 * u.share();          // 0.42: 42% of the window
 * u.openLeases();     // running + parked
 * }</pre>
 *
 * @param tenant              tenant name
 * @param usageNanos          lease time in the window ending now
 * @param correctedUsageNanos {@code usageNanos} times the correction factor (equal without a usage source)
 * @param correctionFactor    measured GPU time over lease time, from per-process samples; 1 without a source
 * @param limitNanos          the most the tenant may use in a window
 * @param windowNanos         length of the window
 * @param runningLeases       leases running now
 * @param parkedLeases        leases held at a checkpoint now
 * @param totalLeaseNanos     lease time since the tenant registered (not windowed)
 *
 * <p>Thread safety: immutable.
 */
public record TenantUsage(String tenant, long usageNanos, long correctedUsageNanos, double correctionFactor,
                          long limitNanos, long windowNanos, int runningLeases, int parkedLeases,
                          long totalLeaseNanos) {

    /** Corrected usage divided by the window. */
    public double share() {
        return (double) correctedUsageNanos / windowNanos;
    }

    /** Running plus parked leases. */
    public int openLeases() {
        return runningLeases + parkedLeases;
    }
}
