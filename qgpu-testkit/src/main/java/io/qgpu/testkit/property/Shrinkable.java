package io.qgpu.testkit.property;

import io.qgpu.api.Validate;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;

/**
 * A generated value and, lazily, the simpler values it can shrink to, each itself shrinkable: a
 * shrink tree. Generators return these ({@link Gen#sample}) so that shrinking survives
 * {@link Gen#map}, {@link Gen#flatMap} and {@link Gens#zip}: a mapped value shrinks by shrinking
 * what it was made from.
 *
 * <pre>{@code
 * Shrinkable<Integer> s = Gens.ints(0, 100).sample(new SplittableRandom(7));
 * s.value();                                   // the generated int
 * s.shrinks().map(Shrinkable::value).toList(); // candidates, simplest first: 0, v/2, ...
 * }</pre>
 *
 * <p>Candidates are ordered simplest first; {@link #shrinks()} returns a fresh stream on every
 * call. Thread safety: immutable when the functions it was built from are pure.
 *
 * @param <T> the value type
 */
public interface Shrinkable<T> {

    /** The value. */
    T value();

    /** Simpler candidates, simplest first; empty when the value is minimal. */
    Stream<Shrinkable<T>> shrinks();

    /** A value with these candidates. */
    static <T> Shrinkable<T> of(T value, Supplier<Stream<Shrinkable<T>>> shrinks) {
        Validate.notNull("shrinkable.shrinks", shrinks);
        return new Shrinkable<>() {
            @Override
            public T value() {
                return value;
            }

            @Override
            public Stream<Shrinkable<T>> shrinks() {
                return shrinks.get();
            }

            @Override
            public String toString() {
                return String.valueOf(value);
            }
        };
    }

    /** A value that does not shrink. */
    static <T> Shrinkable<T> unshrinkable(T value) {
        return of(value, Stream::empty);
    }

    /** The same tree with {@code f} applied to every value; {@code f} runs once per node visited. */
    default <R> Shrinkable<R> map(Function<? super T, ? extends R> f) {
        Shrinkable<T> self = this;
        return new Shrinkable<>() {
            private @Nullable Computed<R> computed;

            @Override
            public synchronized R value() {
                Computed<R> c = computed;
                if (c == null) {
                    c = new Computed<>(f.apply(self.value()));
                    computed = c;
                }
                return c.value();
            }

            @Override
            public Stream<Shrinkable<R>> shrinks() {
                return self.shrinks().map(s -> s.map(f));
            }

            @Override
            public String toString() {
                return String.valueOf(value());
            }
        };
    }
}
