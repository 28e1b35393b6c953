/**
 * Extension points of the placement engine: filters that refuse nodes or GPUs with
 * {@link io.qgpu.api.Reason}s, and scorers that rank nodes and GPU sets. Register them on the
 * engine's builder ({@code io.qgpu.core.placement.PlacementEngine.Builder}).
 *
 * <p>Every SPI method receives immutable snapshots ({@link io.qgpu.api.NodeState},
 * {@link io.qgpu.api.GpuState}) and a read-only {@link io.qgpu.api.ClusterView}; implementations
 * must be thread-safe (the engine calls them from whichever threads call it) and should be cheap:
 * filters run for every node of the cluster on every placement.
 */
@org.jspecify.annotations.NullMarked
package io.qgpu.api.placement;
