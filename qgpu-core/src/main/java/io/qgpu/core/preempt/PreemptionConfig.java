package io.qgpu.core.preempt;

import io.qgpu.api.Validate;
import io.qgpu.core.internal.DurationChecks;
import java.time.Duration;

/**
 * Timing of online/offline preemption on one GPU: online work gets the GPU at most
 * {@code preemptionBound} after it is submitted (offline tenants that have not confirmed their
 * suspension by then are suspended by force), and the GPU goes back to offline work after online
 * work has been idle for {@code releaseDelay}. Defaults are qGPU's: 1 ms and 100 ms.
 *
 * <pre>{@code
 * PreemptionConfig qgpu = PreemptionConfig.ofDefaults();
 * PreemptionConfig eager = PreemptionConfig.custom()
 *         .preemptionBound(Duration.ofMicros(200))
 *         .releaseDelay(Duration.ofMillis(20))
 *         .build();
 * }</pre>
 *
 * @param preemptionBoundNanos longest time from online submission to online running, positive
 * @param releaseDelayNanos    how long online must be idle before offline resumes, 0 or more
 *
 * <p>Thread safety: immutable.
 */
public record PreemptionConfig(long preemptionBoundNanos, long releaseDelayNanos) {

    public PreemptionConfig {
        Validate.atLeast("preemption.preemptionBound", preemptionBoundNanos, 1);
        Validate.atLeast("preemption.releaseDelay", releaseDelayNanos, 0);
    }

    public static PreemptionConfig ofDefaults() {
        return custom().build();
    }

    public static Builder custom() {
        return new Builder();
    }

    public Builder toBuilder() {
        Builder b = new Builder();
        b.bound = preemptionBoundNanos;
        b.releaseDelay = releaseDelayNanos;
        return b;
    }

    public Duration preemptionBound() {
        return Duration.ofNanos(preemptionBoundNanos);
    }

    public Duration releaseDelay() {
        return Duration.ofNanos(releaseDelayNanos);
    }

    /** Fail-fast builder starting from the defaults. */
    public static final class Builder {
        private long bound = 1_000_000L;
        private long releaseDelay = 100_000_000L;

        private Builder() {
        }

        public Builder preemptionBound(Duration d) {
            this.bound = DurationChecks.positiveNanos("preemption.preemptionBound", d);
            return this;
        }

        public Builder releaseDelay(Duration d) {
            this.releaseDelay = DurationChecks.nonNegativeNanos("preemption.releaseDelay", d);
            return this;
        }

        public PreemptionConfig build() {
            return new PreemptionConfig(bound, releaseDelay);
        }
    }
}
