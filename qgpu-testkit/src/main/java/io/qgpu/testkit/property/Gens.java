package io.qgpu.testkit.property;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Validate;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.stream.IntStream;
import java.util.stream.Stream;

/**
 * Basic generators and combinators. Integers shrink towards a target (0 when it is in range, else
 * the bound nearest to 0) by halving the distance; lists shrink by dropping chunks (halves, then
 * quarters, down to single elements) and then by shrinking elements; a choice between generators
 * shrinks towards the earlier ones.
 *
 * <pre>{@code
 * Gen<List<Integer>> lists = Gens.lists(Gens.ints(0, 100), 0, 20);
 * Gen<String> names = Gens.elements("a", "b", "c");
 * Gen<Object> either = Gens.oneOf(Gens.ints(0, 9).map(i -> (Object) i), names.map(s -> (Object) s));
 * Gen<Optional<String>> maybe = Gens.optionals(names);
 * }</pre>
 *
 * <p>Thread safety: every generator here is stateless and may be shared between threads.
 */
public final class Gens {

    private Gens() {
    }

    // ------------------------------------------------------------------ numbers

    /** Ints in {@code [min, max]}, shrinking towards 0 or the bound nearest to it. */
    public static Gen<Integer> ints(int min, int max) {
        return ints(min, max, clampTarget(min, max));
    }

    /** Ints in {@code [min, max]}, shrinking towards {@code target} (which must be in range). */
    public static Gen<Integer> ints(int min, int max, int target) {
        return longs(min, max, target).map(Long::intValue);
    }

    /** Longs in {@code [min, max]}, shrinking towards 0 or the bound nearest to it. */
    public static Gen<Long> longs(long min, long max) {
        return longs(min, max, clampTarget(min, max));
    }

    /**
     * Longs in {@code [min, max]}, shrinking towards {@code target}. One value in sixteen is
     * {@code min}, one {@code max}: edge cases come up early.
     */
    public static Gen<Long> longs(long min, long max, long target) {
        if (min > max) {
            throw new InvalidValueException("gens.longs.max", max, "must be at least min (" + min + ")");
        }
        if (target < min || target > max) {
            throw new InvalidValueException("gens.longs.target", target, "must be between " + min + " and " + max);
        }
        return r -> {
            int edge = r.nextInt(16);
            long v;
            if (edge == 0) {
                v = min;
            } else if (edge == 1) {
                v = max;
            } else {
                v = uniform(r, min, max);
            }
            return integral(v, target);
        };
    }

    /** {@code false} or {@code true}; shrinks to {@code false}. */
    public static Gen<Boolean> booleans() {
        return elements(false, true);
    }

    /** Always {@code value}. */
    public static <T> Gen<T> constant(T value) {
        return r -> Shrinkable.unshrinkable(value);
    }

    // ------------------------------------------------------------------ choices

    /** One of the values; shrinks towards the first. */
    @SafeVarargs
    public static <T> Gen<T> elements(T... values) {
        List<T> list = new ArrayList<>(values.length);
        for (T v : values) {   // element by element: the array itself never leaves this method
            list.add(v);
        }
        return elements(list);
    }

    /** One of the values; shrinks towards the first. */
    public static <T> Gen<T> elements(List<T> values) {
        Validate.notNull("gens.elements", values);
        if (values.isEmpty()) {
            throw new InvalidValueException("gens.elements", values, "must not be empty");
        }
        List<T> copy = List.copyOf(values);
        return ints(0, copy.size() - 1, 0).map(copy::get);
    }

    /** One of the generators, equally likely; shrinks towards values of the earlier ones. */
    @SafeVarargs
    public static <T> Gen<T> oneOf(Gen<? extends T>... gens) {
        List<Weighted<T>> ws = new ArrayList<>();
        for (Gen<? extends T> g : gens) {
            ws.add(weight(1, g));
        }
        return frequency(ws);
    }

    /** A generator with a weight, for {@link #frequency}. */
    public record Weighted<T>(int weight, Gen<? extends T> gen) {
        public Weighted {
            Validate.atLeast("weighted.weight", weight, 1);
            Validate.notNull("weighted.gen", gen);
        }
    }

    public static <T> Weighted<T> weight(int weight, Gen<? extends T> gen) {
        return new Weighted<>(weight, gen);
    }

    /** One of the generators, chosen by weight; shrinks towards values of the earlier ones. */
    @SafeVarargs
    public static <T> Gen<T> frequency(Weighted<T>... choices) {
        List<Weighted<T>> list = new ArrayList<>(choices.length);
        for (Weighted<T> w : choices) {   // element by element: the array itself never leaves this method
            list.add(w);
        }
        return frequency(list);
    }

    /** One of the generators, chosen by weight; shrinks towards values of the earlier ones. */
    public static <T> Gen<T> frequency(List<Weighted<T>> choices) {
        List<Weighted<T>> cs = Validate.list("gens.frequency", choices);
        if (cs.isEmpty()) {
            throw new InvalidValueException("gens.frequency", cs, "must not be empty");
        }
        int total = cs.stream().mapToInt(Weighted::weight).sum();
        return r -> {
            int pick = r.nextInt(total);
            int i = 0;
            while (pick >= cs.get(i).weight()) {
                pick -= cs.get(i).weight();
                i++;
            }
            long altSeed = r.nextLong();
            return choice(cs, i, narrow(cs.get(i).gen().sample(r)), altSeed);
        };
    }

    private static <T> Shrinkable<T> choice(List<Weighted<T>> cs, int index, Shrinkable<T> chosen, long altSeed) {
        return Shrinkable.of(chosen.value(), () -> Stream.concat(
                IntStream.range(0, index).mapToObj(j ->
                        choice(cs, j, narrow(cs.get(j).gen().sample(new SplittableRandom(altSeed + j))), altSeed)),
                chosen.shrinks()));
    }

    /** Empty (shrink target) in one case of four, else a value of {@code gen}. */
    public static <T> Gen<Optional<T>> optionals(Gen<T> gen) {
        return frequency(weight(1, constant(Optional.<T>empty())), weight(3, gen.map(Optional::of)));
    }

    // ------------------------------------------------------------------ collections

    /**
     * Lists of {@code minSize..maxSize} elements. Shrinks by removing chunks (the tail down to
     * {@code minSize}, halves, quarters, ... single elements), then by shrinking each element.
     */
    public static <T> Gen<List<T>> lists(Gen<T> element, int minSize, int maxSize) {
        Validate.notNull("gens.lists.element", element);
        Validate.atLeast("gens.lists.minSize", minSize, 0);
        if (maxSize < minSize) {
            throw new InvalidValueException("gens.lists.maxSize", maxSize, "must be at least minSize (" + minSize + ")");
        }
        return r -> {
            int n = minSize + r.nextInt(maxSize - minSize + 1);
            List<Shrinkable<T>> elems = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                elems.add(element.sample(r));
            }
            return listTree(elems, minSize);
        };
    }

    private static <T> Shrinkable<List<T>> listTree(List<Shrinkable<T>> elems, int minSize) {
        List<T> value = new ArrayList<>(elems.size());
        for (Shrinkable<T> e : elems) {
            value.add(e.value());
        }
        List<T> frozen = Collections.unmodifiableList(value);
        return Shrinkable.of(frozen, () -> Stream.concat(removals(elems, minSize), elementShrinks(elems, minSize)));
    }

    private static <T> Stream<Shrinkable<List<T>>> removals(List<Shrinkable<T>> elems, int minSize) {
        int n = elems.size();
        if (n <= minSize) {
            return Stream.empty();
        }
        Stream<Shrinkable<List<T>>> toMin = Stream.of(minSize).map(k -> listTree(elems.subList(0, k), minSize));
        Stream<Shrinkable<List<T>>> chunks = IntStream.iterate(n / 2, c -> c > 0, c -> c / 2).boxed()
                .flatMap(chunk -> IntStream.iterate(0, s -> s < n, s -> s + chunk)
                        .filter(s -> n - Math.min(chunk, n - s) >= minSize)
                        .mapToObj(s -> {
                            List<Shrinkable<T>> rest = new ArrayList<>(elems.subList(0, s));
                            rest.addAll(elems.subList(Math.min(n, s + chunk), n));
                            return listTree(rest, minSize);
                        }));
        return Stream.concat(toMin, chunks);
    }

    private static <T> Stream<Shrinkable<List<T>>> elementShrinks(List<Shrinkable<T>> elems, int minSize) {
        return IntStream.range(0, elems.size()).boxed().flatMap(i -> elems.get(i).shrinks().map(s -> {
            List<Shrinkable<T>> copy = new ArrayList<>(elems);
            copy.set(i, s);
            return listTree(copy, minSize);
        }));
    }

    // ------------------------------------------------------------------ records

    /** A value made of two generated parts; shrinks the first part, then the second. */
    public static <A, B, R> Gen<R> zip(Gen<A> a, Gen<B> b, BiFunction<? super A, ? super B, ? extends R> f) {
        Validate.notNull("gens.zip", f);
        return r -> {
            Shrinkable<A> sa = a.sample(r);
            Shrinkable<B> sb = b.sample(r);
            return pair(sa, sb).map(p -> f.apply(p.a(), p.b()));
        };
    }

    /** Three parts. */
    public static <A, B, C, R> Gen<R> zip(Gen<A> a, Gen<B> b, Gen<C> c, Fn3<A, B, C, R> f) {
        Validate.notNull("gens.zip", f);
        return zip(zip(a, b, Pair::new), c, (ab, cv) -> f.apply(ab.a(), ab.b(), cv));
    }

    /** Four parts. */
    public static <A, B, C, D, R> Gen<R> zip(Gen<A> a, Gen<B> b, Gen<C> c, Gen<D> d, Fn4<A, B, C, D, R> f) {
        Validate.notNull("gens.zip", f);
        return zip(zip(a, b, Pair::new), zip(c, d, Pair::new), (ab, cd) -> f.apply(ab.a(), ab.b(), cd.a(), cd.b()));
    }

    /** A function of three arguments. */
    @FunctionalInterface
    public interface Fn3<A, B, C, R> {
        R apply(A a, B b, C c);
    }

    /** A function of four arguments. */
    @FunctionalInterface
    public interface Fn4<A, B, C, D, R> {
        R apply(A a, B b, C c, D d);
    }

    private record Pair<A, B>(A a, B b) {
    }

    private static <A, B> Shrinkable<Pair<A, B>> pair(Shrinkable<A> a, Shrinkable<B> b) {
        return Shrinkable.of(new Pair<>(a.value(), b.value()), () -> Stream.concat(
                a.shrinks().map(x -> pair(x, b)),
                b.shrinks().map(y -> pair(a, y))));
    }

    // ------------------------------------------------------------------ internals used by Gen

    static <T, R> Shrinkable<R> bind(Shrinkable<T> outer, Function<? super T, Gen<R>> f, long innerSeed) {
        Shrinkable<R> inner = f.apply(outer.value()).sample(new SplittableRandom(innerSeed));
        return bound(outer, inner, f, innerSeed);
    }

    private static <T, R> Shrinkable<R> bound(Shrinkable<T> outer, Shrinkable<R> inner,
                                              Function<? super T, Gen<R>> f, long innerSeed) {
        return Shrinkable.of(inner.value(), () -> Stream.concat(
                outer.shrinks().map(o -> bind(o, f, innerSeed)),
                inner.shrinks().map(i -> bound(outer, i, f, innerSeed))));
    }

    static <T> Shrinkable<T> filtered(Shrinkable<T> s, Predicate<? super T> p) {
        return Shrinkable.of(s.value(), () -> s.shrinks().filter(c -> p.test(c.value())).map(c -> filtered(c, p)));
    }

    static <T> Shrinkable<T> tree(T value, Function<T, List<T>> candidates) {
        return Shrinkable.of(value, () -> candidates.apply(value).stream().map(c -> tree(c, candidates)));
    }

    @SuppressWarnings("unchecked")
    private static <T> Shrinkable<T> narrow(Shrinkable<? extends T> s) {
        return (Shrinkable<T>) s; // Shrinkable only produces T values: covariant use is safe
    }

    // ------------------------------------------------------------------ integers

    /** The shrink tree of an integral value towards {@code target}. */
    static Shrinkable<Long> integral(long value, long target) {
        return Shrinkable.of(value, () -> towards(value, target).stream().map(c -> integral(c, target)));
    }

    /** Candidates between {@code target} and {@code value}: the target, then halfway, ..., then one step. */
    static List<Long> towards(long value, long target) {
        if (value == target) {
            return List.of();
        }
        List<Long> out = new ArrayList<>();
        out.add(target);
        long step = (value >> 1) - (target >> 1); // about (value - target) / 2, without overflow
        while (step != 0) {
            long c = value - step;
            if (c != target && c != value && !out.contains(c)) {
                out.add(c);
            }
            step /= 2;
        }
        long last = value > target ? value - 1 : value + 1;
        if (last != target && !out.contains(last)) {
            out.add(last);
        }
        return out;
    }

    private static long uniform(SplittableRandom r, long min, long max) {
        if (max < Long.MAX_VALUE) {
            return r.nextLong(min, max + 1);
        }
        if (min > Long.MIN_VALUE) {
            return r.nextLong(min - 1, max) + 1;
        }
        return r.nextLong();
    }

    private static int clampTarget(int min, int max) {
        return (int) clampTarget((long) min, max);
    }

    private static long clampTarget(long min, long max) {
        if (min > max) {
            throw new InvalidValueException("gens.max", max, "must be at least min (" + min + ")");
        }
        return min > 0 ? min : Math.min(max, 0);
    }
}
