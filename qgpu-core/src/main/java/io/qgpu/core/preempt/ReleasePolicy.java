package io.qgpu.core.preempt;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Validate;
import java.time.Duration;
import java.util.Arrays;

/**
 * How long a GPU stays with online work after the last online tenant went idle before it goes back
 * to offline work (the hold, or release delay). Pure: the hold is a function of the GPU's recent
 * {@link IdleGaps}, which the {@link PreemptionMachine} records in its state, so the same rule runs
 * in the simulator, a model checker and a runtime gate, on any clock.
 *
 * <ul>
 *   <li>{@link #fixed(Duration)}: always the same hold (qGPU: 100 ms).</li>
 *   <li>{@link #adaptive(Duration, Duration)}: a hold chosen from the observed idle gaps and the cost
 *       of a switch (suspend plus resume of offline work, including waiting for a kernel that cannot
 *       be interrupted). Going back to offline work after a hold {@code h} pays off for a gap
 *       {@code g > h} by {@code g - h - switchCost} of offline GPU time; a gap {@code g <= h} costs
 *       nothing (online comes back while the GPU is still held). The adaptive rule picks the hold
 *       among 0, the observed gaps and {@code maxHold} that maximizes the sum of that gain over the
 *       recent gaps, preferring the shorter hold on a tie. Under memoryless (Poisson) arrivals with a
 *       mean gap longer than the switch cost this is 0: release at once; with bursts of short gaps
 *       it holds just past the burst gaps. Until {@link Adaptive#minSamples()} gaps are known it holds
 *       for the switch cost (the ski-rental rule: at most twice the best hold in hindsight).</li>
 * </ul>
 *
 * <pre>{@code
 * PreemptionConfig qgpu = PreemptionConfig.custom().releasePolicy(ReleasePolicy.fixed(Duration.ofMillis(100))).build();
 * PreemptionConfig adaptive = PreemptionConfig.custom()
 *         .releasePolicy(ReleasePolicy.adaptive(Duration.ofNanos(200_000), Duration.ofMillis(200)))
 *         .build();
 * long hold = adaptive.releasePolicy().holdNanos(state.idleGaps());
 * }</pre>
 *
 * <p>Thread safety: implementations are immutable.
 */
public sealed interface ReleasePolicy permits ReleasePolicy.Fixed, ReleasePolicy.Adaptive {

    /** Gaps the adaptive rule keeps. */
    int DEFAULT_HISTORY = 64;
    /** Gaps the adaptive rule needs before it trusts them. */
    int DEFAULT_MIN_SAMPLES = 8;

    /** The hold to apply now, given the recent idle gaps; between 0 and {@link #maxHoldNanos()}. */
    long holdNanos(IdleGaps gaps);

    /** The longest hold this policy may pick. */
    long maxHoldNanos();

    /** How many gaps the machine should keep for this policy (0: none). */
    int history();

    /** Short text for reports: {@code 100ms} or {@code adaptive(switch 200us, max 200ms)}. */
    String describe();

    /** Always {@code delay} (0 or more). */
    static ReleasePolicy fixed(Duration delay) {
        Validate.notNull("preemption.releaseDelay", delay);
        if (delay.isNegative()) {
            throw new InvalidValueException("preemption.releaseDelay", io.qgpu.core.time.Durations.format(delay), "must not be negative");
        }
        return new Fixed(nanos("preemption.releaseDelay", delay));
    }

    /** The adaptive rule with the default history (64 gaps) and warm-up (8 gaps). */
    static ReleasePolicy adaptive(Duration switchCost, Duration maxHold) {
        Validate.notNull("preemption.release.switchCost", switchCost);
        Validate.notNull("preemption.release.maxHold", maxHold);
        return new Adaptive(nanos("preemption.release.switchCost", switchCost), nanos("preemption.release.maxHold", maxHold),
                DEFAULT_HISTORY, DEFAULT_MIN_SAMPLES);
    }

    /** {@code 100ms}, {@code 250us}, {@code 2s}, {@code 17ns}: the largest unit that divides it. */
    private static String fmt(long nanos) {
        return io.qgpu.core.time.Durations.format(nanos);
    }

    private static long nanos(String field, Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException e) {
            throw new InvalidValueException(field, io.qgpu.core.time.Durations.format(d), "must fit in a long of nanoseconds");
        }
    }

    /**
     * The same hold every time.
     *
     * @param delayNanos the hold, 0 or more
     */
    record Fixed(long delayNanos) implements ReleasePolicy {
        public Fixed {
            Validate.atLeast("preemption.releaseDelay", delayNanos, 0);
        }

        @Override
        public long holdNanos(IdleGaps gaps) {
            return delayNanos;
        }

        @Override
        public long maxHoldNanos() {
            return delayNanos;
        }

        @Override
        public int history() {
            return 0;
        }

        @Override
        public String describe() {
            return fmt(delayNanos);
        }
    }

    /**
     * The adaptive rule (see {@link ReleasePolicy}).
     *
     * @param switchCostNanos GPU time one switch to offline work and back costs, 0 or more
     * @param maxHoldNanos    the longest hold, 0 or more
     * @param history         gaps kept, 1..65536
     * @param minSamples      gaps needed before they are used, 1..history
     */
    record Adaptive(long switchCostNanos, long maxHoldNanos, int history, int minSamples) implements ReleasePolicy {
        public Adaptive {
            Validate.atLeast("preemption.release.switchCost", switchCostNanos, 0);
            Validate.atLeast("preemption.release.maxHold", maxHoldNanos, 0);
            Validate.between("preemption.release.history", history, 1, 1 << 16);
            Validate.between("preemption.release.minSamples", minSamples, 1, history);
        }

        @Override
        public long holdNanos(IdleGaps gaps) {
            if (gaps.size() < minSamples) {
                return Math.min(switchCostNanos, maxHoldNanos);
            }
            long[] g = gaps.toArray();
            Arrays.sort(g);
            int n = g.length;
            // gain(h) = sum over gaps g > h of (g - h - cost); candidates: 0, each gap <= maxHold, maxHold
            long[] suffix = new long[n + 1];
            for (int k = n - 1; k >= 0; k--) {
                suffix[k] = suffix[k + 1] + g[k];
            }
            long best = 0;
            double bestGain = gain(g, suffix, 0);
            for (int k = 0; k < n && g[k] <= maxHoldNanos; k++) {
                double v = gain(g, suffix, g[k]);
                if (v > bestGain) {
                    bestGain = v;
                    best = g[k];
                }
            }
            if (gain(g, suffix, maxHoldNanos) > bestGain) {
                best = maxHoldNanos;
            }
            return best;
        }

        /** Sum over gaps longer than {@code h} of {@code g - h - switchCost}. */
        private double gain(long[] sorted, long[] suffix, long h) {
            int first = upperBound(sorted, h);
            int count = sorted.length - first;
            return (double) suffix[first] - (double) count * h - (double) count * switchCostNanos;
        }

        private static int upperBound(long[] sorted, long h) {
            int lo = 0;
            int hi = sorted.length;
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (sorted[mid] <= h) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            return lo;
        }

        @Override
        public String describe() {
            return "adaptive(switch " + fmt(switchCostNanos) + ", max " + fmt(maxHoldNanos) + ")";
        }
    }
}
