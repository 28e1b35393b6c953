package io.qgpu.testkit.property;

import io.qgpu.api.Validate;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * A seeded generator of values with shrinking. Plain Java: it needs no test framework, so the same
 * generators feed {@link Property}, a plain JUnit loop, or another property framework.
 *
 * <pre>{@code
 * Gen<Claim> claims = QgpuGens.claims(ClaimOptions.defaults());
 * SplittableRandom random = new SplittableRandom(42);
 * Claim c = claims.generate(random);                 // just a value, from any framework
 * Shrinkable<Claim> s = claims.sample(random);       // a value and its shrink candidates
 * s.shrinks().limit(3).map(Shrinkable::value).toList();
 *
 * record Pair(int a, long b) { }
 * Gen<Pair> pairs = Gens.zip(Gens.ints(0, 9), Gens.longs(0, 99), Pair::new);
 * Gen<String> digits = Gens.ints(0, 9).map(String::valueOf);
 * }</pre>
 *
 * <p>The same seed always gives the same value. Implementations must take all their randomness
 * from the {@code SplittableRandom} they are given. Thread safety: a generator is stateless and may
 * be shared; a {@code SplittableRandom} may not.
 *
 * @param <T> the value type
 */
@FunctionalInterface
public interface Gen<T> {

    /** A value and its shrink tree, taking randomness only from {@code random}. */
    Shrinkable<T> sample(SplittableRandom random);

    /** Just a value. */
    default T generate(SplittableRandom random) {
        return sample(random).value();
    }

    /** {@code count} values from a fresh random seeded with {@code seed}. */
    default List<T> samples(long seed, int count) {
        Validate.atLeast("gen.samples.count", count, 0);
        SplittableRandom r = new SplittableRandom(seed);
        List<T> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            out.add(generate(r));
        }
        return out;
    }

    /** Values mapped through {@code f}; they shrink as their sources do. */
    default <R> Gen<R> map(Function<? super T, ? extends R> f) {
        Validate.notNull("gen.map", f);
        return r -> sample(r).map(f);
    }

    /**
     * A generator that depends on a generated value. Shrinks the outer value first (regenerating
     * the inner one from the same seed), then the inner one.
     */
    default <R> Gen<R> flatMap(Function<? super T, Gen<R>> f) {
        Validate.notNull("gen.flatMap", f);
        return r -> {
            long innerSeed = r.nextLong();
            return Gens.bind(sample(r), f, innerSeed);
        };
    }

    /**
     * Only values accepted by {@code p}; gives up with {@link IllegalStateException} after 1000
     * refused tries (use a generator that builds valid values instead). Shrinks stay accepted.
     */
    default Gen<T> filter(Predicate<? super T> p) {
        Validate.notNull("gen.filter", p);
        return r -> {
            for (int i = 0; i < 1000; i++) {
                Shrinkable<T> s = sample(r);
                if (p.test(s.value())) {
                    return Gens.filtered(s, p);
                }
            }
            throw new IllegalStateException("filter refused 1000 values in a row; generate valid values directly");
        };
    }

    /** The same values without shrinking. */
    default Gen<T> noShrink() {
        return r -> Shrinkable.unshrinkable(generate(r));
    }

    /** A generator that does not shrink, from a function of the random source. */
    static <T> Gen<T> of(Function<SplittableRandom, T> f) {
        Validate.notNull("gen.of", f);
        return r -> Shrinkable.unshrinkable(f.apply(r));
    }

    /**
     * A generator with value-based shrinking: a value {@code v} shrinks to {@code candidates(v)},
     * simplest first, and each candidate shrinks the same way. {@code candidates} must eventually
     * return an empty list.
     */
    static <T> Gen<T> withShrinks(Function<SplittableRandom, T> f, Function<T, List<T>> candidates) {
        Validate.notNull("gen.withShrinks", candidates);
        return r -> Gens.tree(f.apply(r), candidates);
    }
}
