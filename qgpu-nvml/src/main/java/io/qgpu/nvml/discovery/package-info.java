/**
 * Discovery of the local GPUs over NVML, for node agents (the device plugin) and tools
 * ({@code qgpu inventory}) that build the scheduler's node model from the machine they run on.
 * {@link io.qgpu.nvml.discovery.NvmlDiscovery} implements the {@link io.qgpu.api.spi.GpuDiscovery} SPI:
 * the GPUs (UUID, model, memory, index, NUMA node, health) and the link of every pair (NVLink lanes,
 * direct or through NVSwitches, else the PCIe common-ancestor level). Its
 * {@link io.qgpu.nvml.discovery.NvmlInventory} adds the facts the node model has no room for:
 * {@link io.qgpu.nvml.discovery.NvmlDeviceInfo} per GPU, {@link io.qgpu.nvml.discovery.NvmlPairFacts} per
 * pair, {@link io.qgpu.nvml.discovery.MigInstance}s.
 *
 * <pre>{@code
 * try (NvmlDiscovery discovery = NvmlDiscovery.builder().build()) {   // opens its own NVML session
 *     NvmlInventory inv = discovery.inventory("node-a");
 *     Node node = inv.node();
 *     inv.link(0, 1).label();                                        // "NV18", "PIX", "SYS"...
 * }
 * }</pre>
 *
 * <p><b>Guarantees.</b> By default a MIG-enabled GPU is reported as its MIG instances, each a device of
 * its own, and every pair involving an instance is {@code SYS}. GPUs NVML lists but that cannot be used
 * (lost, no permission, insufficient power, reset required, an IRQ issue) are left out of the node and
 * named in {@code NvmlInventory.unreachable()}; any other NVML failure fails the discovery with its
 * {@link io.qgpu.nvml.NvmlException}. {@code NvmlDiscovery} is thread-safe and reads NVML afresh on
 * each call; the inventory records are immutable. Memory in bytes.
 *
 * <p>docs/nvml.md in the repository, section "Discovery".
 */
@NullMarked
package io.qgpu.nvml.discovery;

import org.jspecify.annotations.NullMarked;
