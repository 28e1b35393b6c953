/**
 * The scheduler contract suite, for teams that write a GPU scheduler: extend
 * {@link io.qgpu.testkit.contract.SchedulerContractSuite} in your test sources, say how to make your
 * scheduler, and inherit the whole battery as JUnit 5 tests named by rule
 * ({@code rule_1_03_neverOversubscribesMemory}). Rules that need a
 * {@link io.qgpu.testkit.contract.Capability} the scheduler does not declare are skipped with the reason.
 *
 * <pre>{@code
 * class MySchedulerContractTest extends SchedulerContractSuite {
 *     @Override
 *     protected SchedulerUnderTest createScheduler(GranularityRules rules, List<Node> nodes) {
 *         return new MyAdapter(new MyScheduler(rules, nodes));   // fresh and empty, every call
 *     }
 * }
 * }</pre>
 *
 * <p><b>Guarantees.</b> Rules are single-threaded and get a fresh scheduler per rule and per property
 * case; every answer in every rule is also judged by the independent oracle of
 * {@code io.qgpu.testkit.invariants}, so a failure names the broken invariant and lists the calls that
 * led to it. The property rules are seeded and
 * print their seed; {@code -Dqgpu.seed=<seed>} re-runs a failure exactly. The suite is itself tested
 * against schedulers broken in exactly the way each rule guards against.
 *
 * <p>docs/testkit.md in the repository, section "Run the contract suite against your scheduler".
 */
@NullMarked
package io.qgpu.testkit.contract;

import org.jspecify.annotations.NullMarked;
