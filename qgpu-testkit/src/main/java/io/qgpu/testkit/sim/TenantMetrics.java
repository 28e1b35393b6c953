package io.qgpu.testkit.sim;

import io.qgpu.api.PriorityClass;

/**
 * What one tenant got in a simulation. Latencies are in nanoseconds, {@code -1} where there was
 * nothing to measure.
 *
 * <pre>{@code
 * TenantMetrics infer = result.tenant("infer");
 * infer.latencyP99Nanos() / 1e6;        // ms
 * infer.preemptionMaxNanos() / 1e3;     // us the GPU took to be handed over
 * }</pre>
 *
 * @param tenant              id
 * @param gpu                 its GPU
 * @param priority            online or offline
 * @param requestPercent      requested compute
 * @param limitPercent        compute limit
 * @param gpuSeconds          GPU time it used
 * @param share               GPU time / simulated duration
 * @param activeShare         GPU time / the part of the duration its workload was active
 * @param requestsCompleted   open-loop requests completed
 * @param requestsPending     open-loop requests still queued at the end
 * @param latencyP50Nanos     request latency, median
 * @param latencyP99Nanos     request latency, 99th percentile
 * @param latencyMaxNanos     request latency, maximum
 * @param preemptions         times this online tenant had to wait for offline work to be suspended
 * @param preemptionP50Nanos  that wait, median
 * @param preemptionP99Nanos  that wait, 99th percentile
 * @param preemptionMaxNanos  that wait, maximum
 * @param suspensions         times this offline tenant was suspended while running
 * @param forcedSuspensions   of which by force (it missed the bound)
 * @param iterations          training iterations completed
 * @param grants              tokens this offline tenant received
 * @param maxWindowShare      the most GPU time it had in any window of the usage window's length
 *                            (the scenario's compute window), divided by that window
 * @param onlineWaitP99Nanos  online tenants: from a submission to its work really running, 99th
 *                            percentile over all its submissions (0 when the GPU was free)
 *
 * <p>Thread safety: immutable.
 */
public record TenantMetrics(String tenant, String gpu, PriorityClass priority, int requestPercent, int limitPercent,
                            double gpuSeconds, double share, double activeShare, long requestsCompleted,
                            long requestsPending, long latencyP50Nanos, long latencyP99Nanos, long latencyMaxNanos,
                            long preemptions, long preemptionP50Nanos, long preemptionP99Nanos, long preemptionMaxNanos,
                            long suspensions, long forcedSuspensions, long iterations, long grants,
                            double maxWindowShare, long onlineWaitP99Nanos) {
}
