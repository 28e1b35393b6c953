/**
 * A discrete-event GPU simulator over the qgpu engines: tenants with workload models (closed-loop
 * kernels, open-loop inference requests, training iterations) share simulated GPUs in virtual time,
 * under the compute policy engines and the online/offline preemption machine, and
 * {@link io.qgpu.testkit.sim.SimResult} reports what each tenant and GPU got (shares, latencies,
 * preemption waits, a share time series, an optional trace). Start at
 * {@link io.qgpu.testkit.sim.Simulator}; a scenario is built from {@link io.qgpu.testkit.sim.GpuSpec}s,
 * {@link io.qgpu.testkit.sim.TenantSpec}s, {@link io.qgpu.testkit.sim.Workload}s and
 * {@link io.qgpu.testkit.sim.Dist}ributions; {@link io.qgpu.testkit.sim.ReleaseComparison} runs one
 * under several release rules. {@code qgpu simulate} runs it, and tests check the engines' promises
 * with it.
 *
 * <pre>{@code
 * Scenario s = Scenario.builder("demo")
 *         .gpu(GpuSpec.of("gpu0", IsolationPolicy.BEST_EFFORT, List.of(
 *                 TenantSpec.online("infer", new Workload.OpenLoop(10, Dist.exponential(Duration.ofMillis(20)))),
 *                 TenantSpec.offline("train", new Workload.Training(Dist.constant(Duration.ofMillis(100)),
 *                         Dist.constant(Duration.ofMillis(10)), 10)))))
 *         .build();
 * SimResult r = Simulator.standard().run(s);
 * }</pre>
 *
 * <p><b>Guarantees.</b> Deterministic per seed: events at the same virtual time run in the order they
 * were scheduled and each tenant draws from its own split of the scenario's seed, so a seed gives the
 * same result every time. A simulator is immutable and each run independent, so one simulator may run
 * scenarios on several threads at once; specs and results are immutable. A bad spec throws
 * {@link io.qgpu.api.InvalidValueException} naming the field. Times are virtual nanoseconds.
 *
 * <p>docs/compute.md in the repository, section "Simulator".
 */
@NullMarked
package io.qgpu.testkit.sim;

import org.jspecify.annotations.NullMarked;
