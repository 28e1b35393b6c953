/**
 * Extension points of the placement engine: filters that refuse nodes or GPUs with
 * {@link io.qgpu.api.Reason}s ({@link io.qgpu.api.placement.NodeFilter},
 * {@link io.qgpu.api.placement.GpuFilter}), and scorers that rank nodes and GPU sets
 * ({@link io.qgpu.api.placement.NodeScorer}, {@link io.qgpu.api.placement.GpuSetScorer}, a set being a
 * {@link io.qgpu.api.placement.GpuSet}). Register them on the engine's builder
 * ({@code io.qgpu.core.placement.PlacementEngine.Builder}); the engine's own rules always apply, a
 * filter only adds refusals.
 *
 * <pre>{@code
 * NodeFilter noDrainingNodes = (claim, node, view) ->
 *         "true".equals(node.node().labels().get("draining"))
 *                 ? List.of(Reason.of(ReasonCode.NODE_LABELS_MISMATCH, node.name(), "node is draining"))
 *                 : List.of();
 * }</pre>
 *
 * <p>Every SPI method receives immutable snapshots ({@link io.qgpu.api.NodeState},
 * {@link io.qgpu.api.GpuState}, {@link io.qgpu.api.placement.GpuSet}) and a read-only
 * {@link io.qgpu.api.ClusterView}; implementations must be thread-safe and side-effect free (the engine
 * calls them from whichever threads call it) and should be cheap: a placement may call a filter for many
 * nodes, and a refusal or an explanation calls it for every node. A score must lie in [0, 1]; the engine
 * refuses any other value with an {@link io.qgpu.api.InvalidValueException} naming
 * {@code <scorer name>.score}.
 *
 * <p>docs/placement.md in the repository, section "Extension points".
 */
@NullMarked
package io.qgpu.api.placement;

import org.jspecify.annotations.NullMarked;
