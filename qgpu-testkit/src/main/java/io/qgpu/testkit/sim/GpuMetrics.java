package io.qgpu.testkit.sim;

import io.qgpu.api.IsolationPolicy;
import io.qgpu.core.preempt.GpuMode;
import java.util.Map;

/**
 * What one GPU did in a simulation. Times in nanoseconds; {@code -1} where there was nothing to measure.
 *
 * <pre>{@code
 * GpuMetrics g = result.gpu("gpu0");
 * g.utilization();          // busy time / duration
 * g.offlineUseOfIdle();     // offline GPU time / time the GPU was left to offline work
 * }</pre>
 *
 * @param gpu                  id
 * @param policy               isolation policy among offline tenants
 * @param slicing              how grants end
 * @param utilization          busy time / duration
 * @param onlineShare          online GPU time / duration
 * @param offlineShare         offline GPU time / duration
 * @param modeNanos            time spent in each mode
 * @param offlineUseOfIdle     offline GPU time while in mode OFFLINE / time in mode OFFLINE (the time
 *                             online work left idle once the release delay had passed); -1 if never OFFLINE
 * @param preemptions          online submissions that had to wait for offline work to be suspended
 * @param preemptionP50Nanos   that wait, median
 * @param preemptionP99Nanos   that wait, 99th percentile
 * @param preemptionMaxNanos   that wait, maximum
 * @param forcedSuspensions    suspensions done by force at the bound
 * @param releases             times offline work ran again after online work went idle
 * @param releaseDelayMinNanos shortest time from online going idle to an offline tenant running again
 * @param releaseDelayMaxNanos longest such time
 *
 * <p>Thread safety: immutable.
 */
public record GpuMetrics(String gpu, IsolationPolicy policy, Slicing slicing, double utilization, double onlineShare,
                         double offlineShare, Map<GpuMode, Long> modeNanos, double offlineUseOfIdle, long preemptions,
                         long preemptionP50Nanos, long preemptionP99Nanos, long preemptionMaxNanos,
                         long forcedSuspensions, long releases, long releaseDelayMinNanos, long releaseDelayMaxNanos) {
    public GpuMetrics {
        modeNanos = Map.copyOf(modeNanos);
    }
}
