package io.qgpu.testkit.sim;

import io.qgpu.api.InvalidValueException;
import java.time.Duration;
import java.util.SplittableRandom;

/**
 * A distribution of durations (kernel lengths, service times, think times, suspension latencies),
 * sampled in nanoseconds from the tenant's own seeded {@link SplittableRandom}.
 *
 * <pre>{@code
 * Dist kernel = Dist.uniform(Duration.ofMillis(2), Duration.ofMillis(8));
 * Dist service = Dist.exponential(Duration.ofMillis(15));
 * Dist none = Dist.constant(Duration.ZERO);
 * long ns = kernel.sample(new SplittableRandom(42));
 * }</pre>
 *
 * <p>Thread safety: immutable; sampling uses the caller's generator.
 */
public sealed interface Dist {

    /** One sample, at least 0 nanoseconds. */
    long sample(SplittableRandom rnd);

    /** The mean in nanoseconds. */
    double meanNanos();

    /** Short text for reports, for example {@code exp(mean 15ms)}. */
    String describe();

    static Dist constant(Duration value) {
        return new Constant(nanos("dist.value", value));
    }

    static Dist uniform(Duration min, Duration max) {
        return new Uniform(nanos("dist.min", min), nanos("dist.max", max));
    }

    static Dist exponential(Duration mean) {
        return new Exponential(nanos("dist.mean", mean));
    }

    /** Log-normal with the given median and shape {@code sigma} (0.5: moderate spread, 1: heavy tail). */
    static Dist logNormal(Duration median, double sigma) {
        return new LogNormal(nanos("dist.median", median), sigma);
    }

    /** Always {@code nanos}. */
    record Constant(long nanos) implements Dist {
        public Constant {
            nonNegative("dist.value", nanos);
        }

        @Override
        public long sample(SplittableRandom rnd) {
            return nanos;
        }

        @Override
        public double meanNanos() {
            return nanos;
        }

        @Override
        public String describe() {
            return fmt(nanos);
        }
    }

    /** Uniform in {@code [min, max]}. */
    record Uniform(long min, long max) implements Dist {
        public Uniform {
            nonNegative("dist.min", min);
            if (max < min) {
                throw new InvalidValueException("dist.max", io.qgpu.core.time.Durations.format(max), "must be at least min (" + io.qgpu.core.time.Durations.format(min) + ")");
            }
        }

        @Override
        public long sample(SplittableRandom rnd) {
            return max == min ? min : min + rnd.nextLong(max - min + 1);
        }

        @Override
        public double meanNanos() {
            return (min + max) / 2.0;
        }

        @Override
        public String describe() {
            return "uniform(" + fmt(min) + ".." + fmt(max) + ")";
        }
    }

    /** Exponential with the given mean (memoryless: Poisson arrivals, service times). */
    record Exponential(long mean) implements Dist {
        public Exponential {
            if (mean < 1) {
                throw new InvalidValueException("dist.mean", io.qgpu.core.time.Durations.format(mean), "must be positive");
            }
        }

        @Override
        public long sample(SplittableRandom rnd) {
            return Math.round(-Math.log(1.0 - rnd.nextDouble()) * mean);
        }

        @Override
        public double meanNanos() {
            return mean;
        }

        @Override
        public String describe() {
            return "exp(mean " + fmt(mean) + ")";
        }
    }

    /** Log-normal: {@code median * exp(sigma * N(0,1))}. */
    record LogNormal(long median, double sigma) implements Dist {
        public LogNormal {
            if (median < 1) {
                throw new InvalidValueException("dist.median", io.qgpu.core.time.Durations.format(median), "must be positive");
            }
            if (!(sigma >= 0 && sigma <= 4)) {
                throw new InvalidValueException("dist.sigma", sigma, "must be between 0 and 4");
            }
        }

        @Override
        public long sample(SplittableRandom rnd) {
            // Box-Muller: one standard normal from two uniforms
            double u1 = 1.0 - rnd.nextDouble();
            double u2 = rnd.nextDouble();
            double z = Math.sqrt(-2.0 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
            return Math.round(median * Math.exp(sigma * z));
        }

        @Override
        public double meanNanos() {
            return median * Math.exp(sigma * sigma / 2);
        }

        @Override
        public String describe() {
            return "lognormal(median " + fmt(median) + ", sigma " + sigma + ")";
        }
    }

    private static long nanos(String field, Duration d) {
        if (d == null) {
            throw new InvalidValueException(field, null, "must not be null");
        }
        if (d.isNegative()) {
            throw new InvalidValueException(field, io.qgpu.core.time.Durations.format(d), "must not be negative");
        }
        try {
            return d.toNanos();
        } catch (ArithmeticException e) {
            throw new InvalidValueException(field, io.qgpu.core.time.Durations.format(d), "must fit in a long of nanoseconds");
        }
    }

    private static void nonNegative(String field, long nanos) {
        if (nanos < 0) {
            throw new InvalidValueException(field, io.qgpu.core.time.Durations.format(nanos), "must not be negative");
        }
    }

    /** Compact human form: 250ms, 1.5s, 40us. */
    static String fmt(long nanos) {
        if (nanos % 1_000_000_000L == 0 && nanos != 0) {
            return nanos / 1_000_000_000L + "s";
        }
        if (nanos >= 1_000_000_000L) {
            return trim(nanos / 1e9) + "s";
        }
        if (nanos >= 1_000_000L) {
            return trim(nanos / 1e6) + "ms";
        }
        if (nanos >= 1_000L) {
            return trim(nanos / 1e3) + "us";
        }
        return nanos + "ns";
    }

    private static String trim(double v) {
        String s = String.format(java.util.Locale.ROOT, "%.3f", v);
        s = s.replaceAll("0+$", "");
        return s.endsWith(".") ? s.substring(0, s.length() - 1) : s;
    }
}
