/**
 * Independent oracles that judge any GPU scheduler's output, for scheduler authors' tests. A scheduler
 * is adapted with two calls ({@link io.qgpu.testkit.invariants.SchedulerUnderTest}, made fresh by a
 * {@link io.qgpu.testkit.invariants.SchedulerFactory}).
 * {@link io.qgpu.testkit.invariants.PlacementInvariants} recomputes every GPU's and node's load from the
 * nodes, the rules and the live placements and reports each broken
 * {@link io.qgpu.testkit.invariants.Invariant} as a {@link io.qgpu.testkit.invariants.Violation};
 * {@link io.qgpu.testkit.invariants.Feasibility} says whether a claim fits an empty cluster;
 * {@link io.qgpu.testkit.invariants.Replay} drives a scheduler through operations and checks
 * determinism, release and completeness; {@link io.qgpu.testkit.invariants.CheckedScheduler} wraps one
 * for example-based tests.
 *
 * <pre>{@code
 * List<Violation> v = PlacementInvariants.check(inventory.rules(), inventory.nodes(), livePlacements);
 * PlacementInvariants.assertHolds(inventory, livePlacements);   // AssertionError listing them
 * }</pre>
 *
 * <p><b>Guarantees.</b> The oracles share no code with qgpu's ledger or admission rules, so they can
 * judge those too. The checks return the violations they find; the assertions ({@code assertHolds},
 * {@code Replay.Report.assertNoViolations}, {@code CheckedScheduler}'s calls) throw an
 * {@link AssertionError} listing them, and the last two also list the calls that led to them. The
 * oracles are stateless; {@code Replay} drives its own scheduler instances on the calling thread; a
 * {@code CheckedScheduler} is for one test thread; violations and reports are immutable.
 *
 * <p>docs/testkit.md in the repository, section "Judge any scheduler's output".
 */
@NullMarked
package io.qgpu.testkit.invariants;

import org.jspecify.annotations.NullMarked;
