package io.qgpu.testkit.sim;

import io.qgpu.api.IsolationPolicy;
import io.qgpu.core.preempt.GpuMode;
import java.util.Map;

/**
 * What one GPU did in a simulation. Times in nanoseconds; {@code -1} where there was nothing to measure.
 *
 * <pre>{@code
 * GpuMetrics g = result.gpu("gpu0");
 * g.utilization();          // raw: busy time / duration
 * g.offlineUseOfIdle();     // offline GPU time in mode OFFLINE / time in mode OFFLINE with runnable offline work
 * g.releaseIdleNanos();     // the GPU idle in the release delay while offline work waited
 * g.onlineWaitP99Nanos();   // online submission to its work really running, over all submissions
 * }</pre>
 *
 * @param gpu                  id
 * @param policy               isolation policy among offline tenants
 * @param slicing              how grants end
 * @param releasePolicy        the release rule the GPU ran with, as text ({@code 100ms}, {@code adaptive(...)})
 * @param utilization          raw GPU utilisation: busy time / duration
 * @param onlineShare          online GPU time / duration
 * @param offlineShare         offline GPU time / duration
 * @param modeNanos            time spent in each mode
 * @param offlineUseOfIdle     offline GPU time while in mode OFFLINE / time in mode OFFLINE while some
 *                             offline tenant had work that its policy let it run (the time online work
 *                             left to offline work once the release delay had passed); -1 if none
 * @param policyHeldNanos      time in mode OFFLINE when offline tenants had work but their policy held
 *                             all of them back (fixed-share quotas, elastic limits)
 * @param preemptions          online submissions that had to wait for offline work to be suspended
 * @param preemptionP50Nanos   that wait, median
 * @param preemptionP99Nanos   that wait, 99th percentile
 * @param preemptionMaxNanos   that wait, maximum
 * @param forcedSuspensions    suspensions done by force at the bound
 * @param releases             times the GPU went back to offline work (mode RELEASING to OFFLINE)
 * @param releaseDelayMinNanos shortest time from online going idle to that
 * @param releaseDelayMaxNanos longest such time
 * @param resumes              times an offline tenant ran again after such a release
 * @param resumeDelayMinNanos  shortest time from online going idle to an offline tenant running again
 *                             (longer than the release delay only when its policy held it back)
 * @param resumeDelayMaxNanos  longest such time
 * @param onlineSubmissions    online submissions (an idle online tenant got work)
 * @param onlineWaitP50Nanos   from such a submission to its work really running (preemption, an atomic
 *                             kernel in flight, the switch; 0 when the GPU was free), median
 * @param onlineWaitP99Nanos   that wait, 99th percentile over all online submissions
 * @param onlineWaitMaxNanos   that wait, maximum
 * @param releaseIdleNanos     time in mode RELEASING while some offline tenant had work: the GPU idle
 *                             only because of the release delay
 * @param switches             switches of the GPU between offline and online contexts (each costs the
 *                             scenario's switch time)
 *
 * <p>Thread safety: immutable.
 */
public record GpuMetrics(String gpu, IsolationPolicy policy, Slicing slicing, String releasePolicy, double utilization,
                         double onlineShare, double offlineShare, Map<GpuMode, Long> modeNanos, double offlineUseOfIdle,
                         long policyHeldNanos, long preemptions, long preemptionP50Nanos, long preemptionP99Nanos,
                         long preemptionMaxNanos, long forcedSuspensions, long releases, long releaseDelayMinNanos,
                         long releaseDelayMaxNanos, long resumes, long resumeDelayMinNanos, long resumeDelayMaxNanos,
                         long onlineSubmissions, long onlineWaitP50Nanos, long onlineWaitP99Nanos, long onlineWaitMaxNanos,
                         long releaseIdleNanos, long switches) {
    public GpuMetrics {
        modeNanos = Map.copyOf(modeNanos);
    }
}
