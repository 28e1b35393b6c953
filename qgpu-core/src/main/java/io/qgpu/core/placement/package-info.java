/**
 * The placement engine: where each claim goes (which node, which GPUs, how much of each), committed to a
 * {@link io.qgpu.core.ledger.Ledger}. {@link io.qgpu.core.placement.PlacementEngine} places, checks,
 * explains and releases single claims, configured by {@link io.qgpu.core.placement.PlacementConfig};
 * {@link io.qgpu.core.placement.GangPlacer} places a gang all or nothing;
 * {@link io.qgpu.core.placement.PreemptionPlanner} proposes and commits evictions for a claim that does
 * not fit. {@link io.qgpu.core.placement.PlacementScores}, {@link io.qgpu.core.placement.Fragmentation}
 * and the opt-in scorers ({@link io.qgpu.core.placement.FragmentationScorer},
 * {@link io.qgpu.core.placement.HostLoadScorer}) give the score formulas to custom scorers and reports.
 *
 * <pre>{@code
 * PlacementEngine engine = PlacementEngine.builder(ledger).build();
 * PlacementResult r = engine.place(Claim.builder("infer-1").memoryGiB(8).compute(40, 70).build());
 * if (r instanceof PlacementResult.Unschedulable u) {
 *     log.info("{}", u.summary());       // "infer-1 unschedulable: 0/4 nodes are available: ..."
 * }
 * }</pre>
 *
 * <p><b>Guarantees.</b> Placements never over-commit: every commit goes through the ledger, which
 * re-validates it atomically; a lost race is retried on a fresh view, at most
 * {@code maxCommitAttempts} times, then answered {@code Unschedulable} with a {@code CONFLICT} reason.
 * A claim that fits nowhere is a result with its reasons counted by cause (and detailed for a bounded
 * number of nodes), never an exception. The engine, the gang placer and the planner are thread-safe;
 * configs, results and explanations are immutable. Registered filters and scorers must be
 * thread-safe.
 *
 * <p>docs/placement.md in the repository.
 */
@NullMarked
package io.qgpu.core.placement;

import org.jspecify.annotations.NullMarked;
