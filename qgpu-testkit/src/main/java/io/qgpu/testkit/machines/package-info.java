/**
 * Fake GPUs and machines for tests of GPU schedulers, built from the qgpu model.
 * {@link io.qgpu.testkit.machines.Machines} holds presets modelled on real hardware (DGX H100, DGX A100,
 * DGX-1V, a 4 x T4 PCIe server, Tencent Cloud GN7 and GN10Xp instances), each a
 * {@link io.qgpu.testkit.machines.MachineType}; {@link io.qgpu.testkit.machines.FakeCluster} builds an
 * inventory of many nodes with labels, policies, GPUs kept for a class and unhealthy GPUs;
 * {@link io.qgpu.testkit.machines.FakeGpuDiscovery} stands in for NVML discovery.
 *
 * <pre>{@code
 * Node dgx = Machines.DGX_1V.node("dgx1-0");
 * Inventory inv = FakeCluster.builder()
 *         .nodes(Machines.GN7_20XLARGE320, 3, g -> g.isolation(IsolationPolicy.BURST_SHARE))
 *         .unhealthy("gn7-4xt4-1", 2)              // node name, NVML index
 *         .build();
 * }</pre>
 *
 * <p><b>Guarantees.</b> Everything is deterministic: GPU UUIDs come from
 * {@link io.qgpu.testkit.machines.FakeUuids} (the same node name and index always give the same UUID),
 * so the same builder calls give equal inventories from run to run and machine to machine. A duplicate
 * node name, or an unhealthy GPU on an unknown node or index, throws
 * {@link io.qgpu.api.InvalidValueException}. Machine types and the built inventories are immutable; a
 * {@code FakeCluster} builder is not thread-safe.
 *
 * <p>docs/testkit.md in the repository, section "Fake machines and clusters".
 */
@NullMarked
package io.qgpu.testkit.machines;

import org.jspecify.annotations.NullMarked;
