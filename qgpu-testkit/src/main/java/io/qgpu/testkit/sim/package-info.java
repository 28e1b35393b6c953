/**
 * A discrete-event GPU simulator over the qgpu engines: tenants with workload models (closed-loop
 * kernels, open-loop inference requests, training iterations) share simulated GPUs in virtual time,
 * under the compute policy engines and the online/offline preemption machine. Deterministic per seed.
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
 */
@org.jspecify.annotations.NullMarked
package io.qgpu.testkit.sim;
