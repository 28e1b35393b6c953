/**
 * The runtime gate: JVM code that shares a GPU wraps each unit of GPU work in a {@link
 * io.qgpu.core.gate.Lease} from the {@link io.qgpu.core.gate.Gate} of that GPU, so that every
 * {@link io.qgpu.core.gate.Tenant} of the process stays within its quota over a sliding window and
 * online work preempts offline work at the offline side's next {@link
 * io.qgpu.core.gate.Lease#checkpoint() checkpoint}. One gate per GPU, from a {@link
 * io.qgpu.core.gate.GateRegistry}; settings in {@link io.qgpu.core.gate.GateConfig}; events to a
 * {@link io.qgpu.core.gate.GateListener}; time from the config's ticker and a {@link
 * io.qgpu.core.gate.GateTimer} (a {@link io.qgpu.core.gate.ManualGateTimer} in tests: nothing in the
 * gate sleeps).
 *
 * <pre>{@code
 * Gate gpu0 = GateRegistry.shared().gate("GPU-0b5c...");
 * Tenant chat = gpu0.register(GateTenantSpec.online("chat").limit(60).build());
 * try (Lease lease = gpu0.acquire(chat)) {
 *     runBatch();
 * }
 * }</pre>
 *
 * <h2>What it guarantees</h2>
 * <ul>
 *   <li>A tenant's lease time in any window stays within its limit plus at most one slice; an online
 *       acquire waits for at most one offline slice (the one in progress on each offline lease) unless
 *       that slice overruns the preemption bound.</li>
 *   <li>A lease object stands for one acquire; once closed it stays closed, and closing it again, from
 *       any thread, does nothing and touches no later lease.</li>
 *   <li>{@link io.qgpu.core.gate.Gate#unregister} never returns while a lease of the tenant is open,
 *       and no lease of an unregistered tenant is granted.</li>
 *   <li>A waiter that gives up (timeout, interrupt, cancelled future) leaves no lease and no request
 *       behind; a dead thread's leases are reclaimed; a closed gate keeps nothing reachable from the
 *       threads that used it.</li>
 *   <li>{@link io.qgpu.core.gate.Lease} and {@link io.qgpu.core.gate.Tenant} are sealed: only the gate
 *       makes them. Every class says its thread safety; the gate, its registry, tenants and leases are
 *       thread-safe, configs and records immutable.</li>
 * </ul>
 * How the gate decides, its lock-free fast path, its accounting, which test holds each guarantee and
 * what was measured: the project's {@code docs/gate.md}.
 */
@NullMarked
package io.qgpu.core.gate;

import org.jspecify.annotations.NullMarked;
