/**
 * The qgpu model: the machines ({@link io.qgpu.api.Node}, {@link io.qgpu.api.GpuDevice},
 * {@link io.qgpu.api.Topology} of {@link io.qgpu.api.GpuLink}s), what a workload asks for
 * ({@link io.qgpu.api.Claim}, {@link io.qgpu.api.Gang}), what it gets ({@link io.qgpu.api.Placement},
 * {@link io.qgpu.api.PlacementResult}, {@link io.qgpu.api.PreemptionPlan}), the
 * {@link io.qgpu.api.GranularityRules} slices are cut by, and the {@link io.qgpu.api.Ticker} every
 * engine reads time from. Schedulers, adapters and tests speak it; qgpu-core's ledger and engines
 * consume and produce it. This module has no runtime dependency.
 *
 * <pre>{@code
 * Node node = Node.builder("node-a")
 *         .gpu(GpuDevice.builder("GPU-a0").index(0).model("Tesla T4").memoryGiB(16).build())
 *         .build();
 * Claim claim = Claim.builder("infer-1").memoryGiB(8).compute(40, 70).priority(PriorityClass.ONLINE).build();
 * }</pre>
 *
 * <p><b>Guarantees.</b> Every value type is immutable (records and final classes; collections are
 * copied) and thus safe to share between threads; results are sealed interfaces. Each value is
 * validated where it is built: a bad field throws {@link io.qgpu.api.InvalidValueException} naming
 * the field, the value and the rule (every exception qgpu throws on purpose is an unchecked
 * {@link io.qgpu.api.QgpuException}). Builders are mutable; use one from one thread. Units: memory in
 * bytes, compute in percent of one GPU, CPU in millicores, time in nanoseconds.
 *
 * <p>ARCHITECTURE.md, docs/placement.md and docs/formats.md (the model as JSON) in the repository.
 */
@NullMarked
package io.qgpu.api;

import org.jspecify.annotations.NullMarked;
