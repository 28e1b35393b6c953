/**
 * Compute sharing on one GPU: who holds the GPU's token next and for how long, so that each tenant gets
 * the share its {@link io.qgpu.api.IsolationPolicy} promises (best-effort, fixed-share, burst-share,
 * elastic), measured as GPU time in a sliding window. {@link io.qgpu.core.compute.ComputeEngine} is the
 * policy engine of one GPU, run by Gemini's {@link io.qgpu.core.compute.TokenScheduler} with the
 * settings of a {@link io.qgpu.core.compute.TokenSchedulerConfig}; {@link io.qgpu.core.compute.UsageWindow}
 * keeps GPU time per tenant. The simulator, the runtime gate and model checkers drive them.
 *
 * <pre>{@code
 * ComputeEngine gpu0 = ComputeEngine.create(IsolationPolicy.BURST_SHARE, TokenSchedulerConfig.ofDefaults(), Ticker.system());
 * gpu0.addTenant("train-a", 60, 100);
 * gpu0.request("train-a");
 * if (gpu0.schedule() instanceof TokenDecision.Granted g) {
 *     gpu0.release("train-a", 0);       // after running until g.grant().expiresAtNanos()
 * }
 * }</pre>
 *
 * <p><b>Guarantees.</b> The engines never sleep and start no thread: decisions come back as values
 * ({@link io.qgpu.core.compute.TokenDecision}) and time comes from the injected
 * {@link io.qgpu.api.Ticker}, so a decision depends only on the calls made and the times read. An
 * engine made by {@code ComputeEngine.create} keeps each tenant under its limit in every window,
 * provided the tenant stops when its grant expires. A call the engine's state does not allow throws
 * {@link io.qgpu.core.compute.ComputeStateException} and changes nothing; bad values throw
 * {@link io.qgpu.api.InvalidValueException}. Engines and usage windows are not thread-safe (guard them
 * with the caller's lock); grants, reports, shares and configs are immutable. Times in nanoseconds,
 * requests and limits in percent of the GPU.
 *
 * <p>docs/compute.md in the repository.
 */
@NullMarked
package io.qgpu.core.compute;

import org.jspecify.annotations.NullMarked;
