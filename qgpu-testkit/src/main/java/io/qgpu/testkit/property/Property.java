package io.qgpu.testkit.property;

import io.qgpu.api.Validate;
import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.Iterator;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.SplittableRandom;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * Runs a property over generated cases from one seed; on the first failing case, shrinks it to a
 * smallest failing case and fails with an {@link AssertionError} that prints the seed, the shrunk
 * case, its failure, the original case and how to re-run it.
 *
 * <pre>{@code
 * @Test
 * void sortedListsStaySorted() {
 *     Property.forAll(Gens.lists(Gens.ints(0, 100), 0, 30))
 *             .tries(200)
 *             .check(list -> isSorted(sort(list)));
 * }
 *
 * @Test
 * void neverOversubscribes() {
 *     Property.forAll(QgpuGens.scenarios(InventoryOptions.defaults(), ClaimOptions.defaults(), 40))
 *             .verify(s -> Replay.run(factory, s).assertNoViolations());   // assertions inside
 * }
 * }</pre>
 *
 * <h2>Seeds</h2>
 * A seed fixed with {@link #seed(long)} is used as is. Otherwise the {@value Seeds#PROPERTY}
 * system property fixes it (for example {@code -Dqgpu.seed=1234}; see {@link Seeds}), else each run
 * takes a fresh random seed. Case {@code i} always comes from the {@code i}-th split of a
 * {@link SplittableRandom} seeded with the seed, so a seed reproduces every case exactly.
 *
 * <h2>Shrinking</h2>
 * Greedy: adopt the first shrink candidate that still fails, repeat until none fails or
 * {@link #maxShrinks(int)} candidates were tried.
 *
 * <p>Thread safety: a {@code Property} is a mutable builder; configure and run it on one thread.
 *
 * @param <T> the case type
 */
public final class Property<T> {

    private final Gen<T> gen;
    private @Nullable String name;
    private int tries = 100;
    private @Nullable Long seed;
    private int maxShrinks = 2_000;

    private Property(Gen<T> gen) {
        this.gen = gen;
    }

    /** A property over the values of {@code gen}. */
    public static <T> Property<T> forAll(Gen<T> gen) {
        return new Property<>(Validate.notNull("property.gen", gen));
    }

    /** Name printed on failure; default the calling test's {@code Class#method}. */
    public Property<T> named(String n) {
        this.name = Validate.notBlank("property.name", n);
        return this;
    }

    /** Number of cases (default 100). */
    public Property<T> tries(int n) {
        this.tries = Validate.between("property.tries", n, 1, 10_000_000);
        return this;
    }

    /** Fixes the seed in code (it then wins over {@code -Dqgpu.seed}). */
    public Property<T> seed(long s) {
        this.seed = s;
        return this;
    }

    /** Most shrink candidates to evaluate (default 2000); 0 turns shrinking off. */
    public Property<T> maxShrinks(int n) {
        this.maxShrinks = Validate.between("property.maxShrinks", n, 0, 10_000_000);
        return this;
    }

    /** Fails with an {@link AssertionError} unless {@code predicate} holds (and does not throw) for every case. */
    public void check(Predicate<? super T> predicate) {
        run(predicate).orThrow();
    }

    /** Fails with an {@link AssertionError} if {@code body} throws for a case (assertions inside it). */
    public void verify(Consumer<? super T> body) {
        runVerify(body).orThrow();
    }

    /** Runs the property with a predicate and returns the outcome instead of throwing. */
    public PropertyResult<T> run(Predicate<? super T> predicate) {
        Validate.notNull("property.predicate", predicate);
        return execute(value -> {
            try {
                return predicate.test(value) ? null : new AssertionError("predicate returned false");
            } catch (VirtualMachineError e) {
                throw e;
            } catch (Throwable t) {
                return t;
            }
        });
    }

    /** Runs the property with a throwing body and returns the outcome instead of throwing. */
    public PropertyResult<T> runVerify(Consumer<? super T> body) {
        Validate.notNull("property.body", body);
        return execute(value -> {
            try {
                body.accept(value);
                return null;
            } catch (VirtualMachineError e) {
                throw e;
            } catch (Throwable t) {
                return t;
            }
        });
    }

    /** A case check: the failure, or {@code null} when the case passes. */
    private interface Check<T> {
        @Nullable Throwable failure(T value);
    }

    private PropertyResult<T> execute(Check<T> check) {
        String n = name != null ? name : callerName().orElse("property");
        long s;
        PropertyResult.SeedSource source;
        OptionalLong fromProperty = Seeds.fromSystemProperty();
        if (seed != null) {
            s = seed;
            source = PropertyResult.SeedSource.CODE;
        } else if (fromProperty.isPresent()) {
            s = fromProperty.getAsLong();
            source = PropertyResult.SeedSource.SYSTEM_PROPERTY;
        } else {
            s = Seeds.random();
            source = PropertyResult.SeedSource.RANDOM;
        }
        SplittableRandom root = new SplittableRandom(s);
        for (int i = 0; i < tries; i++) {
            Shrinkable<T> c = gen.sample(root.split());
            Throwable failure = check.failure(c.value());
            if (failure != null) {
                return shrink(n, s, source, i, c, failure, check);
            }
        }
        return new PropertyResult.Passed<>(n, s, source, tries);
    }

    private PropertyResult<T> shrink(String n, long s, PropertyResult.SeedSource source, int caseIndex,
                                     Shrinkable<T> original, Throwable firstFailure, Check<T> check) {
        Shrinkable<T> current = original;
        Throwable failure = firstFailure;
        int steps = 0;
        int budget = maxShrinks;
        boolean progressed = true;
        while (progressed && budget > 0) {
            progressed = false;
            Iterator<Shrinkable<T>> it = current.shrinks().iterator();
            while (it.hasNext() && budget > 0) {
                Shrinkable<T> candidate = it.next();
                budget--;
                T value;
                try {
                    value = candidate.value();
                } catch (RuntimeException e) {
                    continue; // a generator that cannot build this candidate: not a smaller failing case
                }
                Throwable f = check.failure(value);
                if (f != null) {
                    current = candidate;
                    failure = f;
                    steps++;
                    progressed = true;
                    break;
                }
            }
        }
        return new PropertyResult.Falsified<>(n, s, source, caseIndex, tries, original.value(), current.value(),
                steps, failure);
    }

    /** {@code Class#method} of the nearest caller annotated as a JUnit test, if any. */
    private static Optional<String> callerName() {
        return StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE).walk(frames -> frames
                .filter(f -> f.getDeclaringClass() != Property.class)
                .filter(f -> isTestMethod(f.getDeclaringClass(), f.getMethodName()))
                .findFirst()
                .map(f -> f.getDeclaringClass().getName() + "#" + f.getMethodName()));
    }

    private static boolean isTestMethod(Class<?> type, String method) {
        try {
            for (Method m : type.getDeclaredMethods()) {
                if (m.getName().equals(method)) {
                    for (Annotation a : m.getAnnotations()) {
                        String an = a.annotationType().getSimpleName();
                        if (an.equals("Test") || an.endsWith("Test") || an.equals("TestTemplate")) {
                            return true;
                        }
                    }
                }
            }
        } catch (SecurityException | LinkageError e) {
            return false;
        }
        return false;
    }
}
