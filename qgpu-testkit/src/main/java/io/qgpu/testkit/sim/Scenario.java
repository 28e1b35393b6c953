package io.qgpu.testkit.sim;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Validate;
import io.qgpu.core.compute.TokenSchedulerConfig;
import io.qgpu.core.preempt.PreemptionConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * A simulation to run: GPUs with tenants, engine settings, virtual duration and seed. The CLI reads
 * it from JSON ({@code qgpu simulate SCENARIO.json}).
 *
 * <pre>{@code
 * Scenario s = Scenario.builder("two-trainers")
 *         .duration(Duration.ofSeconds(60))
 *         .seed(42)
 *         .gpu(GpuSpec.of("gpu0", IsolationPolicy.BEST_EFFORT, List.of(a, b)))
 *         .build();
 * SimResult r = Simulator.standard().run(s);
 * }</pre>
 *
 * @param name           a label
 * @param description    what the scenario shows, for people
 * @param durationNanos  virtual time to simulate
 * @param seed           seed of all random draws: same seed, same result
 * @param bucketNanos    width of the share time series' buckets
 * @param compute        token scheduler settings (window, quotas) for every GPU
 * @param preemption     preemption bound and release policy for every GPU
 * @param cost           what preemption costs on every GPU (atomic offline kernels, switch time)
 * @param gpus           the GPUs; tenant ids are unique over all of them
 *
 * <p>Thread safety: immutable.
 */
public record Scenario(String name, String description, long durationNanos, long seed, long bucketNanos,
                       TokenSchedulerConfig compute, PreemptionConfig preemption, PreemptionCost cost,
                       List<GpuSpec> gpus) {

    public Scenario {
        Validate.notBlank("scenario.name", name);
        Validate.notNull("scenario.description", description);
        positive("scenario.duration", durationNanos);
        positive("scenario.bucket", bucketNanos);
        if (bucketNanos > durationNanos) {
            throw new InvalidValueException("scenario.bucket", io.qgpu.core.time.Durations.format(bucketNanos),
                    "must not be longer than the duration (" + io.qgpu.core.time.Durations.format(durationNanos) + ")");
        }
        if (durationNanos / bucketNanos > 1_000_000) {
            throw new InvalidValueException("scenario.bucket", io.qgpu.core.time.Durations.format(bucketNanos),
                    "gives more than 1,000,000 buckets over the duration");
        }
        Validate.notNull("scenario.compute", compute);
        Validate.notNull("scenario.preemption", preemption);
        Validate.notNull("scenario.cost", cost);
        gpus = Validate.list("scenario.gpus", gpus);
        if (gpus.isEmpty()) {
            throw new InvalidValueException("scenario.gpus", gpus, "must not be empty");
        }
        Set<String> gpuIds = new HashSet<>();
        Set<String> tenantIds = new HashSet<>();
        for (GpuSpec g : gpus) {
            if (!gpuIds.add(g.id())) {
                throw new InvalidValueException("scenario.gpus[" + g.id() + "].id", g.id(), "is used twice");
            }
            for (TenantSpec t : g.tenants()) {
                if (!tenantIds.add(t.id())) {
                    throw new InvalidValueException("scenario.gpus[" + g.id() + "].tenants[" + t.id() + "].id", t.id(),
                            "is used on two GPUs; tenant ids must be unique in a scenario");
                }
            }
        }
    }

    public static Builder builder(String name) {
        return new Builder(name);
    }

    /** A duration that must be more than zero: the rule in words with its unit, not "at least 1". */
    private static void positive(String field, long nanos) {
        if (nanos < 1) {
            throw new InvalidValueException(field, io.qgpu.core.time.Durations.format(nanos),
                    "must be positive (at least 1ns)");
        }
    }

    public Duration duration() {
        return Duration.ofNanos(durationNanos);
    }

    public Scenario withSeed(long newSeed) {
        return new Scenario(name, description, durationNanos, newSeed, bucketNanos, compute, preemption, cost, gpus);
    }

    /** The same scenario with another preemption timing or release policy. */
    public Scenario withPreemption(PreemptionConfig p) {
        return new Scenario(name, description, durationNanos, seed, bucketNanos, compute, p, cost, gpus);
    }

    /** The same scenario run for {@code d}; the bucket shrinks if it would be longer than {@code d}. */
    public Scenario withDuration(Duration d) {
        long n = Validate.notNull("scenario.duration", d).toNanos();
        return new Scenario(name, description, n, seed, Math.min(bucketNanos, Math.max(1, n)), compute, preemption, cost,
                gpus);
    }

    /**
     * Fail-fast builder; defaults: 60 s, seed 1, bucket = duration / 100, Gemini's token settings,
     * qGPU's preemption timing, free preemption ({@link PreemptionCost#NONE}).
     */
    public static final class Builder {
        private final String name;
        private String description = "";
        private Duration duration = Duration.ofSeconds(60);
        private long seed = 1;
        private @Nullable Duration bucket;
        private TokenSchedulerConfig compute = TokenSchedulerConfig.ofDefaults();
        private PreemptionConfig preemption = PreemptionConfig.ofDefaults();
        private PreemptionCost cost = PreemptionCost.NONE;
        private final List<GpuSpec> gpus = new ArrayList<>();

        private Builder(String name) {
            this.name = name;
        }

        public Builder description(String d) {
            this.description = d;
            return this;
        }

        public Builder duration(Duration d) {
            this.duration = d;
            return this;
        }

        public Builder seed(long s) {
            this.seed = s;
            return this;
        }

        public Builder bucket(Duration b) {
            this.bucket = b;
            return this;
        }

        public Builder compute(TokenSchedulerConfig c) {
            this.compute = c;
            return this;
        }

        public Builder preemption(PreemptionConfig p) {
            this.preemption = p;
            return this;
        }

        public Builder cost(PreemptionCost c) {
            this.cost = c;
            return this;
        }

        public Builder gpu(GpuSpec g) {
            this.gpus.add(g);
            return this;
        }

        public Scenario build() {
            Validate.notNull("scenario.duration", duration);
            long d = duration.toNanos();
            long b = bucket == null ? Math.max(1, d / 100) : bucket.toNanos();
            return new Scenario(name, description, d, seed, b, compute, preemption, cost, gpus);
        }
    }
}
