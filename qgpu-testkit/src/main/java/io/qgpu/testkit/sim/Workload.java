package io.qgpu.testkit.sim;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Validate;

/**
 * What a simulated tenant asks of its GPU.
 *
 * <pre>{@code
 * Workload busy = new Workload.ClosedLoop(Dist.constant(Duration.ofMillis(5)), Dist.constant(Duration.ZERO));
 * Workload inference = new Workload.OpenLoop(20.0, Dist.exponential(Duration.ofMillis(10)));
 * Workload training = new Workload.Training(Dist.uniform(Duration.ofMillis(80), Duration.ofMillis(120)),
 *         Dist.constant(Duration.ofMillis(20)), 10);
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public sealed interface Workload {

    /** Short text for reports. */
    String describe();

    /**
     * Kernels back to back: each runs for a sample of {@code kernel}; after it the tenant spends a
     * sample of {@code think} off the GPU (0: always busy).
     */
    record ClosedLoop(Dist kernel, Dist think) implements Workload {
        public ClosedLoop {
            Validate.notNull("workload.kernel", kernel);
            Validate.notNull("workload.think", think);
        }

        @Override
        public String describe() {
            return "closed-loop kernels " + kernel.describe()
                    + (think.meanNanos() == 0 ? "" : ", think " + think.describe());
        }
    }

    /**
     * Requests arrive as a Poisson process at {@code ratePerSecond}; each needs a sample of
     * {@code service} of GPU time; they queue first come, first served. Latency is arrival to completion.
     */
    record OpenLoop(double ratePerSecond, Dist service) implements Workload {
        public OpenLoop {
            if (!(ratePerSecond > 0 && ratePerSecond <= 1_000_000)) {
                throw new InvalidValueException("workload.rate", ratePerSecond, "must be in (0, 1000000] requests per second");
            }
            Validate.notNull("workload.service", service);
        }

        @Override
        public String describe() {
            return "open-loop " + (ratePerSecond == Math.rint(ratePerSecond) ? String.valueOf((long) ratePerSecond)
                    : String.valueOf(ratePerSecond)) + " req/s, service " + service.describe();
        }
    }

    /**
     * Training iterations: a compute phase of a sample of {@code compute}, split into
     * {@code kernelsPerIteration} equal kernels, then a data-loading phase of a sample of
     * {@code dataLoad} off the GPU.
     */
    record Training(Dist compute, Dist dataLoad, int kernelsPerIteration) implements Workload {
        public Training {
            Validate.notNull("workload.compute", compute);
            Validate.notNull("workload.dataLoad", dataLoad);
            Validate.between("workload.kernels", kernelsPerIteration, 1, 100_000);
        }

        @Override
        public String describe() {
            return "training iterations " + compute.describe() + " in " + kernelsPerIteration + " kernels"
                    + (dataLoad.meanNanos() == 0 ? "" : ", data loading " + dataLoad.describe());
        }
    }
}
