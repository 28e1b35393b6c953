package io.qgpu.core.gate;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.Ticker;
import io.qgpu.api.Validate;
import io.qgpu.api.spi.ProcessUsageSource;
import io.qgpu.core.compute.TokenSchedulerConfig;
import io.qgpu.core.preempt.PreemptionConfig;
import java.time.Duration;

/**
 * Settings of a {@link Gate}. Defaults: isolation policy {@code best-effort}; Gemini's token settings
 * (sliding window 10 s, base quota 250 ms, minimum quota 100 ms); qGPU's preemption timing (online
 * runs within 1 ms, offline resumes 100 ms after online idles); minimum slice 1 ms; dead-owner
 * timeout 1 s; usage reports every second; no NVML correction; the system ticker and a timer thread
 * of the gate's own.
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
 * @param policy              how the GPU's compute is divided (maps request/limit to a share)
 * @param token               the token scheduler that orders offline tenants; its window is the
 *                            gate's accounting window
 * @param preemption          preemption bound and release delay
 * @param minSliceNanos       a tenant that reached its limit resumes once it may run this long
 *                            (or its whole limit, if smaller) without passing the limit again
 * @param deadOwnerTimeoutNanos how long leases of a dead thread stay open before the gate reclaims them
 * @param usageReportIntervalNanos period of {@link GateEvent.UsageReport}s and NVML correction, 0 for never
 * @param usageSource         per-process GPU samples for the correction, or {@code null} for none
 * @param pid                 the process whose samples count (this JVM unless set)
 * @param ticker              the clock
 * @param timer               the timer, or {@code null} for a daemon timer thread owned by the gate
 * @param recycleLeases       whether a lease closed by its owner thread is reused by that thread's next
 *                            acquire (no allocation per lease; see {@link Lease}); on by default
 *
 * <p>Thread safety: immutable.
 */
public record GateConfig(IsolationPolicy policy, TokenSchedulerConfig token, PreemptionConfig preemption,
                         long minSliceNanos, long deadOwnerTimeoutNanos, long usageReportIntervalNanos,
                         ProcessUsageSource usageSource, long pid, Ticker ticker, GateTimer timer,
                         boolean recycleLeases) {

    public GateConfig {
        Validate.notNull("gateConfig.policy", policy);
        Validate.notNull("gateConfig.token", token);
        Validate.notNull("gateConfig.preemption", preemption);
        Validate.atLeast("gateConfig.minSlice", minSliceNanos, 1);
        Validate.atLeast("gateConfig.deadOwnerTimeout", deadOwnerTimeoutNanos, 1);
        Validate.atLeast("gateConfig.usageReportInterval", usageReportIntervalNanos, 0);
        Validate.atLeast("gateConfig.pid", pid, 0);
        Validate.notNull("gateConfig.ticker", ticker);
        if (minSliceNanos > token.windowNanos()) {
            throw new InvalidValueException("gateConfig.minSlice", Duration.ofNanos(minSliceNanos),
                    "must be at most the window (" + token.window() + ")");
        }
    }

    /** The defaults listed above. */
    public static GateConfig ofDefaults() {
        return custom().build();
    }

    /** A builder starting from the defaults. */
    public static Builder custom() {
        return new Builder();
    }

    /** A builder starting from this config. */
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
        b.recycleLeases = recycleLeases;
        return b;
    }

    /** Length of the sliding accounting window. */
    public long windowNanos() {
        return token.windowNanos();
    }

    /** Fail-fast builder: each setter checks its own value, {@link #build()} the combination. */
    public static final class Builder {
        private IsolationPolicy policy = IsolationPolicy.BEST_EFFORT;
        private TokenSchedulerConfig token = TokenSchedulerConfig.ofDefaults();
        private PreemptionConfig preemption = PreemptionConfig.ofDefaults();
        private long minSlice = 1_000_000L;
        private long deadOwnerTimeout = 1_000_000_000L;
        private long usageReportInterval = 1_000_000_000L;
        private ProcessUsageSource usageSource;
        private long pid = ProcessHandle.current().pid();
        private Ticker ticker = Ticker.system();
        private GateTimer timer;
        private boolean recycleLeases = true;

        private Builder() {
        }

        public Builder policy(IsolationPolicy policy) {
            this.policy = Validate.notNull("gateConfig.policy", policy);
            return this;
        }

        /** Token scheduler settings; the window set here wins over an earlier {@link #window}. */
        public Builder token(TokenSchedulerConfig token) {
            this.token = Validate.notNull("gateConfig.token", token);
            return this;
        }

        /** The sliding accounting window (also the token scheduler's). */
        public Builder window(Duration window) {
            TokenSchedulerConfig.Builder b = token.toBuilder().window(positive("gateConfig.window", window));
            if (token.baseQuotaNanos() > window.toNanos()) {
                b.baseQuota(window);
                if (token.minQuotaNanos() > window.toNanos()) {
                    b.minQuota(window);
                }
            }
            this.token = b.build();
            return this;
        }

        public Builder preemption(PreemptionConfig preemption) {
            this.preemption = Validate.notNull("gateConfig.preemption", preemption);
            return this;
        }

        /** Longest time from an online acquire to online running before offline slices are overrun by force. */
        public Builder preemptionBound(Duration bound) {
            this.preemption = preemption.toBuilder().preemptionBound(bound).build();
            return this;
        }

        /** How long online must be idle before offline work resumes; 0 resumes at once. */
        public Builder releaseDelay(Duration delay) {
            this.preemption = preemption.toBuilder().releaseDelay(delay).build();
            return this;
        }

        public Builder minSlice(Duration d) {
            this.minSlice = positive("gateConfig.minSlice", d).toNanos();
            return this;
        }

        public Builder deadOwnerTimeout(Duration d) {
            this.deadOwnerTimeout = positive("gateConfig.deadOwnerTimeout", d).toNanos();
            return this;
        }

        /** Period of usage reports and NVML correction; {@link Duration#ZERO} turns both off. */
        public Builder usageReportInterval(Duration d) {
            Validate.notNull("gateConfig.usageReportInterval", d);
            if (d.isNegative()) {
                throw new InvalidValueException("gateConfig.usageReportInterval", d, "must not be negative");
            }
            this.usageReportInterval = nanos("gateConfig.usageReportInterval", d);
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

        /** The timer for timed work; without one the gate starts a daemon timer thread of its own. */
        public Builder timer(GateTimer timer) {
            this.timer = Validate.notNull("gateConfig.timer", timer);
            return this;
        }

        /** Whether leases closed by their owner thread are reused by its next acquire (default true). */
        public Builder recycleLeases(boolean recycle) {
            this.recycleLeases = recycle;
            return this;
        }

        public GateConfig build() {
            return new GateConfig(policy, token, preemption, minSlice, deadOwnerTimeout, usageReportInterval,
                    usageSource, pid, ticker, timer, recycleLeases);
        }

        private static Duration positive(String field, Duration d) {
            Validate.notNull(field, d);
            if (d.isNegative() || d.isZero()) {
                throw new InvalidValueException(field, d, "must be positive");
            }
            nanos(field, d);
            return d;
        }

        private static long nanos(String field, Duration d) {
            try {
                return d.toNanos();
            } catch (ArithmeticException e) {
                throw new InvalidValueException(field, d, "must fit in a long of nanoseconds");
            }
        }
    }
}
