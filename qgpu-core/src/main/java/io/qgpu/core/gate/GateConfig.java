package io.qgpu.core.gate;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.Ticker;
import io.qgpu.api.Validate;
import io.qgpu.api.spi.ProcessUsageSource;
import io.qgpu.core.compute.TokenSchedulerConfig;
import io.qgpu.core.internal.DurationChecks;
import io.qgpu.core.preempt.PreemptionConfig;
import io.qgpu.core.preempt.ReleasePolicy;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * Settings of a {@link Gate}. Defaults: isolation policy {@code best-effort}; Gemini's token settings
 * (sliding window 10 s, base quota 250 ms, minimum quota 100 ms); qGPU's preemption timing (online
 * runs within 1 ms, offline resumes 100 ms after online idles); minimum slice 1 ms; dead-owner
 * timeout 1 s; usage reports every second; no NVML correction; the system ticker; the timer of the
 * {@link GateRegistry} that creates the gate (or, for {@link Gate#create}, a daemon timer thread of
 * the gate's own).
 *
 * <pre>{@code
 * GateConfig config = GateConfig.custom()
 *         .policy(IsolationPolicy.ELASTIC)
 *         .window(Duration.ofSeconds(10))
 *         .releaseDelay(Duration.ofMillis(100))
 *         .usageSource(nvmlSampler)          // optional correction from per-process samples
 *         .build();
 * }</pre>
 *
 * <p>The builder's setters check their own value at once and do not depend on the order they are
 * called in: a value given both on its own ({@link Builder#window}, {@link Builder#preemptionBound},
 * {@link Builder#releaseDelay}) and inside a whole sub-config ({@link Builder#token},
 * {@link Builder#preemption}) must agree, else {@link Builder#build()} refuses the pair, naming both.
 *
 * <p>Thread safety: immutable.
 */
public final class GateConfig {

    private final IsolationPolicy policy;
    private final TokenSchedulerConfig token;
    private final PreemptionConfig preemption;
    private final long minSliceNanos;
    private final long deadOwnerTimeoutNanos;
    private final long usageReportIntervalNanos;
    private final @Nullable ProcessUsageSource usageSource;
    private final long pid;
    private final Ticker ticker;
    private final @Nullable GateTimer timer;

    private GateConfig(Builder b, TokenSchedulerConfig token, PreemptionConfig preemption) {
        this.policy = b.policy;
        this.token = token;
        this.preemption = preemption;
        this.minSliceNanos = b.minSlice;
        this.deadOwnerTimeoutNanos = b.deadOwnerTimeout;
        this.usageReportIntervalNanos = b.usageReportInterval;
        this.usageSource = b.usageSource;
        this.pid = b.pid;
        this.ticker = b.ticker;
        this.timer = b.timer;
    }

    /** The defaults listed above. */
    public static GateConfig ofDefaults() {
        return custom().build();
    }

    /** A builder starting from the defaults. */
    public static Builder custom() {
        return new Builder();
    }

    /** A builder starting from this config (its token and preemption settings as whole sub-configs). */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.policy = policy;
        b.token = token;
        b.preemption = preemption;
        b.minSlice = minSliceNanos;
        b.deadOwnerTimeout = deadOwnerTimeoutNanos;
        b.usageReportInterval = usageReportIntervalNanos;
        b.usageSource = usageSource;
        b.pid = pid;
        b.ticker = ticker;
        b.timer = timer;
        return b;
    }

    /** How the GPU's compute is divided (maps request/limit to a share). */
    public IsolationPolicy policy() {
        return policy;
    }

    /** The token scheduler that orders offline tenants; its window is the gate's accounting window. */
    public TokenSchedulerConfig token() {
        return token;
    }

    /** Preemption bound and release delay. */
    public PreemptionConfig preemption() {
        return preemption;
    }

    /** Length of the sliding accounting window. */
    public long windowNanos() {
        return token.windowNanos();
    }

    /**
     * A tenant that reached its limit resumes once it may run this long (or its whole limit, if
     * smaller) without passing the limit again.
     */
    public long minSliceNanos() {
        return minSliceNanos;
    }

    /** How long leases of a dead thread stay open before the gate reclaims them. */
    public long deadOwnerTimeoutNanos() {
        return deadOwnerTimeoutNanos;
    }

    /** Period of {@link GateEvent.UsageReport}s and NVML correction, 0 for never. */
    public long usageReportIntervalNanos() {
        return usageReportIntervalNanos;
    }

    /** Per-process GPU samples for the correction, if any. */
    public Optional<ProcessUsageSource> usageSource() {
        return Optional.ofNullable(usageSource);
    }

    /** The process whose samples count (this JVM unless set). */
    public long pid() {
        return pid;
    }

    /** The clock. */
    public Ticker ticker() {
        return ticker;
    }

    /** The timer, if one was set; else the registry's shared timer or a timer thread of the gate's own. */
    public Optional<GateTimer> timer() {
        return Optional.ofNullable(timer);
    }

    @Override
    public boolean equals(@Nullable Object o) {
        return o instanceof GateConfig c && policy == c.policy && token.equals(c.token)
                && preemption.equals(c.preemption) && minSliceNanos == c.minSliceNanos
                && deadOwnerTimeoutNanos == c.deadOwnerTimeoutNanos
                && usageReportIntervalNanos == c.usageReportIntervalNanos
                && Objects.equals(usageSource, c.usageSource) && pid == c.pid && ticker.equals(c.ticker)
                && Objects.equals(timer, c.timer);
    }

    @Override
    public int hashCode() {
        return Objects.hash(policy, token, preemption, minSliceNanos, deadOwnerTimeoutNanos, usageReportIntervalNanos,
                usageSource, pid, ticker, timer);
    }

    @Override
    public String toString() {
        return "GateConfig[policy=" + policy + ", token=" + token + ", preemption=" + preemption
                + ", minSliceNanos=" + minSliceNanos + ", deadOwnerTimeoutNanos=" + deadOwnerTimeoutNanos
                + ", usageReportIntervalNanos=" + usageReportIntervalNanos + ", usageSource=" + usageSource
                + ", pid=" + pid + ", ticker=" + ticker + ", timer=" + timer + "]";
    }

    /**
     * Fail-fast builder: each setter checks its own value at once; {@link #build()} checks the
     * combination. The result does not depend on the order of the calls.
     *
     * <p>Thread safety: not thread-safe; use one builder on one thread.
     */
    public static final class Builder {
        private IsolationPolicy policy = IsolationPolicy.BEST_EFFORT;
        private @Nullable TokenSchedulerConfig token;
        private @Nullable Duration window;
        private @Nullable PreemptionConfig preemption;
        private @Nullable Duration preemptionBound;
        private @Nullable Duration releaseDelay;
        private @Nullable ReleasePolicy releasePolicy;
        private long minSlice = 1_000_000L;
        private long deadOwnerTimeout = 1_000_000_000L;
        private long usageReportInterval = 1_000_000_000L;
        private @Nullable ProcessUsageSource usageSource;
        private long pid = ProcessHandle.current().pid();
        private Ticker ticker = Ticker.system();
        private @Nullable GateTimer timer;

        private Builder() {
        }

        public Builder policy(IsolationPolicy policy) {
            this.policy = Validate.notNull("gateConfig.policy", policy);
            return this;
        }

        /**
         * Token scheduler settings (default: {@link TokenSchedulerConfig#ofDefaults()}). If
         * {@link #window} is also set, the two windows must be equal.
         */
        public Builder token(TokenSchedulerConfig token) {
            this.token = Validate.notNull("gateConfig.token", token);
            return this;
        }

        /**
         * The sliding accounting window (also the token scheduler's). Without {@link #token}, the
         * default token settings are used with this window, their base and minimum quota cut to the
         * window where they are longer. With {@link #token}, its window must be this one.
         */
        public Builder window(Duration window) {
            DurationChecks.positiveNanos("gateConfig.window", window);
            this.window = window;
            return this;
        }

        /**
         * Preemption bound and release delay as a whole (default: {@link PreemptionConfig#ofDefaults()}).
         * A value also set with {@link #preemptionBound} or {@link #releaseDelay} must agree with it.
         */
        public Builder preemption(PreemptionConfig preemption) {
            this.preemption = Validate.notNull("gateConfig.preemption", preemption);
            return this;
        }

        /** Longest time from an online acquire to online running before offline slices are overrun by force. */
        public Builder preemptionBound(Duration bound) {
            DurationChecks.positiveNanos("gateConfig.preemptionBound", bound);
            this.preemptionBound = bound;
            return this;
        }

        /** How long online must be idle before offline work resumes; 0 resumes at once. */
        public Builder releaseDelay(Duration delay) {
            DurationChecks.nonNegativeNanos("gateConfig.releaseDelay", delay);
            this.releaseDelay = delay;
            return this;
        }

        /**
         * The rule that picks how long online must be idle before offline work resumes: a fixed delay
         * ({@link ReleasePolicy#fixed}, the same as {@link #releaseDelay}) or the adaptive rule
         * ({@link ReleasePolicy#adaptive}: the hold picked from the observed online idle gaps and the
         * switch cost). A value also set with {@link #releaseDelay} or {@link #preemption} must agree with it.
         */
        public Builder releasePolicy(ReleasePolicy policy) {
            this.releasePolicy = Validate.notNull("gateConfig.releasePolicy", policy);
            return this;
        }

        /** Positive; at most the window (checked by {@link #build()}). */
        public Builder minSlice(Duration d) {
            this.minSlice = DurationChecks.positiveNanos("gateConfig.minSlice", d);
            return this;
        }

        /** Positive. */
        public Builder deadOwnerTimeout(Duration d) {
            this.deadOwnerTimeout = DurationChecks.positiveNanos("gateConfig.deadOwnerTimeout", d);
            return this;
        }

        /** Period of usage reports and NVML correction; {@link Duration#ZERO} turns both off. */
        public Builder usageReportInterval(Duration d) {
            this.usageReportInterval = DurationChecks.nonNegativeNanos("gateConfig.usageReportInterval", d);
            return this;
        }

        /** Per-process GPU samples (for example qgpu-nvml's sampler) that correct the lease-time books. */
        public Builder usageSource(ProcessUsageSource source) {
            this.usageSource = Validate.notNull("gateConfig.usageSource", source);
            return this;
        }

        /** The process whose samples count; this JVM's pid by default. */
        public Builder pid(long pid) {
            this.pid = Validate.atLeast("gateConfig.pid", pid, 0);
            return this;
        }

        public Builder ticker(Ticker ticker) {
            this.ticker = Validate.notNull("gateConfig.ticker", ticker);
            return this;
        }

        /**
         * The timer for timed work. Without one, a gate from a {@link GateRegistry} uses the
         * registry's one timer thread, and a gate from {@link Gate#create} a timer thread of its own.
         */
        public Builder timer(GateTimer timer) {
            this.timer = Validate.notNull("gateConfig.timer", timer);
            return this;
        }

        /**
         * The config.
         *
         * @throws InvalidValueException if a value set twice (on its own and in a sub-config)
         *                               disagrees, or the minimum slice is longer than the window
         */
        public GateConfig build() {
            TokenSchedulerConfig t = tokenConfig();
            PreemptionConfig p = preemptionConfig();
            if (minSlice > t.windowNanos()) {
                throw new InvalidValueException("gateConfig.minSlice", io.qgpu.core.time.Durations.format(minSlice),
                        "must be at most the window (" + io.qgpu.core.time.Durations.format(t.window()) + ")");
            }
            return new GateConfig(this, t, p);
        }

        private TokenSchedulerConfig tokenConfig() {
            if (token == null) {
                TokenSchedulerConfig d = TokenSchedulerConfig.ofDefaults();
                if (window == null) {
                    return d;
                }
                TokenSchedulerConfig.Builder b = d.toBuilder().window(window);
                if (d.baseQuota().compareTo(window) > 0) {
                    b.baseQuota(window);
                }
                if (d.minQuota().compareTo(window) > 0) {
                    b.minQuota(window);
                }
                return b.build();
            }
            if (window != null && !window.equals(token.window())) {
                throw new InvalidValueException("gateConfig.window", io.qgpu.core.time.Durations.format(window),
                        "differs from gateConfig.token's window (" + io.qgpu.core.time.Durations.format(token.window()) + "); set one of them");
            }
            return token;
        }

        private PreemptionConfig preemptionConfig() {
            if (preemption == null) {
                PreemptionConfig.Builder b = PreemptionConfig.ofDefaults().toBuilder();
                if (preemptionBound != null) {
                    b.preemptionBound(preemptionBound);
                }
                if (releaseDelay != null) {
                    b.releaseDelay(releaseDelay);
                }
                if (releasePolicy != null) {
                    if (releaseDelay != null && !ReleasePolicy.fixed(releaseDelay).equals(releasePolicy)) {
                        throw new InvalidValueException("gateConfig.releasePolicy", releasePolicy.describe(),
                                "differs from gateConfig.releaseDelay (" + io.qgpu.core.time.Durations.format(releaseDelay) + "); set one of them");
                    }
                    b.releasePolicy(releasePolicy);
                }
                return b.build();
            }
            if (releasePolicy != null && !releasePolicy.equals(preemption.releasePolicy())) {
                throw new InvalidValueException("gateConfig.releasePolicy", releasePolicy.describe(),
                        "differs from gateConfig.preemption's release rule (" + preemption.releasePolicy().describe()
                                + "); set one of them");
            }
            if (preemptionBound != null && !preemptionBound.equals(preemption.preemptionBound())) {
                throw new InvalidValueException("gateConfig.preemptionBound", io.qgpu.core.time.Durations.format(preemptionBound),
                        "differs from gateConfig.preemption's bound (" + io.qgpu.core.time.Durations.format(preemption.preemptionBound()) + "); set one of them");
            }
            if (releaseDelay != null && !releaseDelay.equals(preemption.releaseDelay())) {
                throw new InvalidValueException("gateConfig.releaseDelay", io.qgpu.core.time.Durations.format(releaseDelay),
                        "differs from gateConfig.preemption's release delay (" + preemption.releaseDelay()
                                + "); set one of them");
            }
            return preemption;
        }
    }
}
