/**
 * The JNA binding of NVML ({@code libnvidia-ml.so.1}), for code that reads real NVIDIA GPUs: discovery,
 * usage sampling and health monitoring in the subpackages build on it. {@link io.qgpu.nvml.Nvml} is an
 * open session and the entry point; {@link io.qgpu.nvml.NvmlDevice} is one GPU (or MIG device),
 * {@link io.qgpu.nvml.NvmlEventSet} waits for events, and the records ({@link io.qgpu.nvml.NvmlMemory},
 * {@link io.qgpu.nvml.NvmlProcess}, ...) carry NVML's answers.
 *
 * <pre>{@code
 * try (Nvml nvml = Nvml.open()) {
 *     for (NvmlDevice gpu : nvml.devices()) {
 *         log.info("{} {} {} bytes", gpu.uuid(), gpu.name(), gpu.memory().total());
 *     }
 * }
 * }</pre>
 *
 * <p><b>Guarantees.</b> Every failing call throws {@link io.qgpu.nvml.NvmlException} with its typed
 * {@link io.qgpu.nvml.NvmlReturn} (unknown codes are {@code UNRECOGNIZED}, the raw code kept), the
 * function and the GPU; a missing library or required function is an
 * {@link io.qgpu.nvml.NvmlLibraryException} when opening, and no {@link UnsatisfiedLinkError} escapes.
 * A call that finds a GPU lost marks it unhealthy in the session and tells the session's health
 * listeners. Sessions and devices are thread-safe; {@code close()} is idempotent and waits for calls in
 * flight, after which calls throw with {@code UNINITIALIZED}. The records are immutable. Memory in bytes.
 *
 * <p>docs/nvml.md in the repository.
 */
@NullMarked
package io.qgpu.nvml;

import org.jspecify.annotations.NullMarked;
