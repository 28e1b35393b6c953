package io.qgpu.core.preempt;

import io.qgpu.api.Validate;
import io.qgpu.core.internal.DurationChecks;
import java.time.Duration;

/**
 * Timing of online/offline preemption on one GPU: online work gets the GPU at most
 * {@code preemptionBound} after it is submitted (offline tenants that have not confirmed their
 * suspension by then are suspended by force), and the GPU goes back to offline work after online
 * work has been idle for the hold its {@link ReleasePolicy} picks, or at once while an offline tenant
 * with work has used less than its request over the usage window (the offline floor, on by default;
 * see {@link PreemptionMachine}). Defaults are qGPU's 1 ms and fixed 100 ms, with the floor.
 *
 * <pre>{@code
 * PreemptionConfig qgpu = PreemptionConfig.ofDefaults();
 * PreemptionConfig eager = PreemptionConfig.custom()
 *         .preemptionBound(Duration.ofNanos(200_000))
 *         .releaseDelay(Duration.ofMillis(20))
 *         .build();
 * PreemptionConfig adaptive = PreemptionConfig.custom()
 *         .releasePolicy(ReleasePolicy.adaptive(Duration.ofNanos(300_000), Duration.ofMillis(200)))
 *         .build();
 * }</pre>
 *
 * @param preemptionBoundNanos longest time from online submission to online running, positive
 * @param releasePolicy        how long online must be idle before offline resumes
 * @param offlineFloor         whether the release delay is waived while a held offline tenant is
 *                             below its request ({@link PreemptionEvent.Usage})
 *
 * <p>Thread safety: immutable.
 */
public record PreemptionConfig(long preemptionBoundNanos, ReleasePolicy releasePolicy, boolean offlineFloor) {

    public PreemptionConfig {
        if (preemptionBoundNanos < 1) {
            throw new io.qgpu.api.InvalidValueException("preemption.preemptionBound",
                    io.qgpu.core.time.Durations.format(preemptionBoundNanos), "must be positive (at least 1ns)");
        }
        Validate.notNull("preemption.releasePolicy", releasePolicy);
    }

    /** With the offline floor. */
    public PreemptionConfig(long preemptionBoundNanos, ReleasePolicy releasePolicy) {
        this(preemptionBoundNanos, releasePolicy, true);
    }

    /** A fixed release delay of {@code releaseDelayNanos} (0 or more), with the offline floor. */
    public PreemptionConfig(long preemptionBoundNanos, long releaseDelayNanos) {
        this(preemptionBoundNanos, new ReleasePolicy.Fixed(releaseDelayNanos));
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
        b.releasePolicy = releasePolicy;
        b.offlineFloor = offlineFloor;
        return b;
    }

    public Duration preemptionBound() {
        return Duration.ofNanos(preemptionBoundNanos);
    }

    /** The longest hold the release policy may pick: the delay of a fixed policy. */
    public long releaseDelayNanos() {
        return releasePolicy.maxHoldNanos();
    }

    /** {@link #releaseDelayNanos()} as a duration. */
    public Duration releaseDelay() {
        return Duration.ofNanos(releaseDelayNanos());
    }

    /** Fail-fast builder starting from the defaults. */
    public static final class Builder {
        private long bound = 1_000_000L;
        private ReleasePolicy releasePolicy = new ReleasePolicy.Fixed(100_000_000L);
        private boolean offlineFloor = true;

        private Builder() {
        }

        public Builder preemptionBound(Duration d) {
            this.bound = DurationChecks.positiveNanos("preemption.preemptionBound", d);
            return this;
        }

        /** A fixed release delay ({@link ReleasePolicy#fixed}). */
        public Builder releaseDelay(Duration d) {
            this.releasePolicy = ReleasePolicy.fixed(d);
            return this;
        }

        public Builder releasePolicy(ReleasePolicy p) {
            this.releasePolicy = Validate.notNull("preemption.releasePolicy", p);
            return this;
        }

        /**
         * Whether an offline request is a floor (default {@code true}): while a held offline tenant has
         * used less than its request over the usage window, online work going idle returns the GPU to
         * offline work at once instead of after the release rule's hold.
         */
        public Builder offlineFloor(boolean on) {
            this.offlineFloor = on;
            return this;
        }

        public PreemptionConfig build() {
            return new PreemptionConfig(bound, releasePolicy, offlineFloor);
        }
    }
}
