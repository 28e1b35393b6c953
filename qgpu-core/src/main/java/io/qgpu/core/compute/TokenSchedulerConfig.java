package io.qgpu.core.compute;

import io.qgpu.core.internal.DurationChecks;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Validate;
import java.time.Duration;

/**
 * Settings of a {@link TokenScheduler}: the sliding window in which usage is measured, the quota a
 * tenant starts with, the smallest quota, how fast quotas follow measured bursts, and how limits are
 * enforced. Defaults are Gemini's: window 10 s, base quota 250 ms, minimum quota 100 ms, burst weight
 * 0.5 ({@code q = 0.5 * burst + 0.5 * q_prev}), {@link LimitEnforcement#GEMINI}. A tenant's maximum
 * quota is {@code limit x window}.
 *
 * <pre>{@code
 * TokenSchedulerConfig gemini = TokenSchedulerConfig.ofDefaults();
 * TokenSchedulerConfig fast = TokenSchedulerConfig.custom()
 *         .window(Duration.ofSeconds(1))
 *         .baseQuota(Duration.ofMillis(25))
 *         .minQuota(Duration.ofMillis(5))
 *         .limitEnforcement(LimitEnforcement.STRICT)
 *         .build();
 * }</pre>
 *
 * @param windowNanos      length of the sliding usage window
 * @param baseQuotaNanos   quota of a tenant's first grant
 * @param minQuotaNanos    smallest quota a grant is adapted to (a strict grant may be cut shorter by the headroom)
 * @param burstWeight      weight {@code w} of the last burst in {@code q = w * burst + (1 - w) * q_prev}, in (0, 1]
 * @param limitEnforcement how limits are kept
 *
 * <p>Thread safety: immutable.
 */
public record TokenSchedulerConfig(long windowNanos, long baseQuotaNanos, long minQuotaNanos, double burstWeight,
                                   LimitEnforcement limitEnforcement) {

    public TokenSchedulerConfig {
        positive("tokenScheduler.window", windowNanos);
        positive("tokenScheduler.minQuota", minQuotaNanos);
        if (baseQuotaNanos < minQuotaNanos) {
            throw new InvalidValueException("tokenScheduler.baseQuota", io.qgpu.core.time.Durations.format(baseQuotaNanos),
                    "must be at least minQuota (" + io.qgpu.core.time.Durations.format(minQuotaNanos) + ")");
        }
        if (baseQuotaNanos > windowNanos) {
            throw new InvalidValueException("tokenScheduler.baseQuota", io.qgpu.core.time.Durations.format(baseQuotaNanos),
                    "must be at most the window (" + io.qgpu.core.time.Durations.format(windowNanos) + ")");
        }
        if (!(burstWeight > 0.0 && burstWeight <= 1.0)) {
            throw new InvalidValueException("tokenScheduler.burstWeight", burstWeight, "must be in (0, 1]");
        }
        Validate.notNull("tokenScheduler.limitEnforcement", limitEnforcement);
    }

    /** Gemini's defaults. */
    public static TokenSchedulerConfig ofDefaults() {
        return custom().build();
    }

    /** A builder starting from the defaults. */
    public static Builder custom() {
        return new Builder();
    }

    /** A builder starting from this config. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.window = windowNanos;
        b.baseQuota = baseQuotaNanos;
        b.minQuota = minQuotaNanos;
        b.burstWeight = burstWeight;
        b.limitEnforcement = limitEnforcement;
        return b;
    }

    public Duration window() {
        return Duration.ofNanos(windowNanos);
    }

    public Duration baseQuota() {
        return Duration.ofNanos(baseQuotaNanos);
    }

    public Duration minQuota() {
        return Duration.ofNanos(minQuotaNanos);
    }

    /** Fail-fast builder; {@link #build()} validates the combination. */
    public static final class Builder {
        private long window = 10_000_000_000L;
        private long baseQuota = 250_000_000L;
        private long minQuota = 100_000_000L;
        private double burstWeight = 0.5;
        private LimitEnforcement limitEnforcement = LimitEnforcement.GEMINI;

        private Builder() {
        }

        public Builder window(Duration d) {
            this.window = DurationChecks.positiveNanos("tokenScheduler.window", d);
            return this;
        }

        public Builder baseQuota(Duration d) {
            this.baseQuota = DurationChecks.positiveNanos("tokenScheduler.baseQuota", d);
            return this;
        }

        public Builder minQuota(Duration d) {
            this.minQuota = DurationChecks.positiveNanos("tokenScheduler.minQuota", d);
            return this;
        }

        public Builder burstWeight(double w) {
            this.burstWeight = w;
            return this;
        }

        public Builder limitEnforcement(LimitEnforcement e) {
            this.limitEnforcement = Validate.notNull("tokenScheduler.limitEnforcement", e);
            return this;
        }

        public TokenSchedulerConfig build() {
            return new TokenSchedulerConfig(window, baseQuota, minQuota, burstWeight, limitEnforcement);
        }
    }

    /** A duration that must be more than zero: the rule in words with its unit, not "at least 1". */
    private static void positive(String field, long nanos) {
        if (nanos < 1) {
            throw new InvalidValueException(field, io.qgpu.core.time.Durations.format(nanos), "must be positive (at least 1ns)");
        }
    }
}
