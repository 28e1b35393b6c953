/**
 * Seeded property-based testing without a framework, for tests of GPU schedulers:
 * {@link io.qgpu.testkit.property.Gen} (a generator with integrated shrinking,
 * {@link io.qgpu.testkit.property.Shrinkable}), the combinators of {@link io.qgpu.testkit.property.Gens},
 * generators of the qgpu model in {@link io.qgpu.testkit.property.QgpuGens} (inventories, claims on the
 * granularity grid, place/release sequences, whole scenarios; bounded by
 * {@link io.qgpu.testkit.property.ClaimOptions} and {@link io.qgpu.testkit.property.InventoryOptions}),
 * and the runner {@link io.qgpu.testkit.property.Property}, which shrinks a failing case and prints its
 * seed. The generators also feed a plain loop or another framework through a {@code SplittableRandom}.
 *
 * <pre>{@code
 * Property.forAll(QgpuGens.scenarios(InventoryOptions.defaults(), ClaimOptions.defaults(), 40))
 *         .tries(200)
 *         .verify(s -> Replay.run(factory, s).assertNoViolations());
 * Claim c = QgpuGens.claims(ClaimOptions.defaults()).generate(new SplittableRandom(42));
 * }</pre>
 *
 * <p><b>Guarantees.</b> Deterministic per seed: a generator takes all its randomness from the
 * {@code SplittableRandom} it is given, and case {@code i} of a run comes from the {@code i}-th split of
 * the seed, so a seed reproduces every case, the failing one and its shrunk form. The seed is the one
 * fixed in code, else the {@code qgpu.seed} system property ({@link io.qgpu.testkit.property.Seeds}),
 * else a fresh random one. The generators here and the options are immutable and may be shared
 * between threads; a {@code Property} is a builder for one thread.
 *
 * <p>docs/testkit.md in the repository, sections "Generators and the property runner" and "A failure,
 * and re-running it with its seed".
 */
@NullMarked
package io.qgpu.testkit.property;

import org.jspecify.annotations.NullMarked;
