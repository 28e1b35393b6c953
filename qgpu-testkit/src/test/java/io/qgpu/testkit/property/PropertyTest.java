package io.qgpu.testkit.property;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Locality;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Selectors;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The harness itself: shrinking reaches minimal cases, seeds replay, failures say how to re-run. */
class PropertyTest {

    private String savedSeed;

    @BeforeEach
    void saveSeed() {
        savedSeed = System.getProperty(Seeds.PROPERTY);
        System.clearProperty(Seeds.PROPERTY);
    }

    @AfterEach
    void restoreSeed() {
        if (savedSeed == null) {
            System.clearProperty(Seeds.PROPERTY);
        } else {
            System.setProperty(Seeds.PROPERTY, savedSeed);
        }
    }

    private static <T> PropertyResult.Falsified<T> falsified(PropertyResult<T> r) {
        return assertInstanceOf(PropertyResult.Falsified.class, r, "the property should have failed");
    }

    @Test
    void anIntShrinksToTheSmallestFailingValue() {
        for (long seed = 1; seed <= 20; seed++) {
            PropertyResult.Falsified<Integer> f = falsified(Property.forAll(Gens.ints(0, 1_000_000)).seed(seed)
                    .run(x -> x < 100));
            assertEquals(100, f.shrunk(), "seed " + seed);
        }
        PropertyResult.Falsified<Integer> negative = falsified(Property.forAll(Gens.ints(-1_000_000, 1_000_000)).seed(3)
                .run(x -> x > -37));
        assertEquals(-37, negative.shrunk());
        PropertyResult.Falsified<Long> longs = falsified(Property.forAll(Gens.longs(Long.MIN_VALUE, Long.MAX_VALUE)).seed(9)
                .run(x -> x < 1L << 40));
        assertEquals(1L << 40, longs.shrunk());
    }

    @Test
    void aListShrinksByRemovingElementsAndShrinkingThem() {
        Gen<List<Integer>> lists = Gens.lists(Gens.ints(0, 1000), 0, 40);
        for (long seed = 1; seed <= 10; seed++) {
            PropertyResult.Falsified<List<Integer>> size = falsified(Property.forAll(lists).seed(seed).run(l -> l.size() < 3));
            assertEquals(List.of(0, 0, 0), size.shrunk(), "seed " + seed);
            PropertyResult.Falsified<List<Integer>> big = falsified(Property.forAll(lists).seed(seed)
                    .run(l -> l.stream().allMatch(x -> x < 500)));
            assertEquals(List.of(500), big.shrunk(), "seed " + seed);
        }
    }

    @Test
    void aSumPropertyShrinksToALocallyMinimalList() {
        PropertyResult.Falsified<List<Integer>> f = falsified(Property.forAll(Gens.lists(Gens.ints(0, 100), 0, 30)).seed(5)
                .run(l -> l.stream().mapToInt(Integer::intValue).sum() < 150));
        List<Integer> l = f.shrunk();
        assertTrue(sum(l) >= 150, l::toString);
        // 1-minimal: dropping any element, or lowering any element by one, makes it pass
        for (int i = 0; i < l.size(); i++) {
            List<Integer> without = new java.util.ArrayList<>(l);
            without.remove(i);
            assertTrue(sum(without) < 150, "removing element " + i + " of " + l + " still fails");
            if (l.get(i) > 0) {
                List<Integer> lower = new java.util.ArrayList<>(l);
                lower.set(i, l.get(i) - 1);
                assertTrue(sum(lower) < 150, "lowering element " + i + " of " + l + " still fails");
            }
        }
    }

    private static int sum(List<Integer> l) {
        return l.stream().mapToInt(Integer::intValue).sum();
    }

    record Pair(int a, int b) {
    }

    @Test
    void recordsShrinkThroughZipAndMap() {
        Gen<Pair> pairs = Gens.zip(Gens.ints(0, 1000), Gens.ints(0, 1000), Pair::new);
        PropertyResult.Falsified<Pair> f = falsified(Property.forAll(pairs).seed(11).tries(1000)
                .run(p -> p.a() < 3 || p.b() < 7));
        assertEquals(new Pair(3, 7), f.shrunk());
        PropertyResult.Falsified<String> mapped = falsified(Property.forAll(Gens.ints(0, 999).map(i -> "n" + i)).seed(2)
                .run(s -> s.length() < 3));
        assertEquals("n10", mapped.shrunk());
    }

    @Test
    void flatMapShrinksTheOuterAndTheInnerValue() {
        Gen<List<Integer>> dependent = Gens.ints(0, 20).flatMap(n -> Gens.lists(Gens.ints(0, 100), n, n));
        PropertyResult.Falsified<List<Integer>> f = falsified(Property.forAll(dependent).seed(4).tries(1000)
                .run(l -> l.size() < 4));
        assertEquals(List.of(0, 0, 0, 0), f.shrunk());
    }

    @Test
    void choicesShrinkTowardsTheEarlierAlternative() {
        Gen<Object> g = Gens.oneOf(Gens.constant((Object) "first"), Gens.ints(0, 100).map(i -> (Object) i));
        PropertyResult.Falsified<Object> f = falsified(Property.forAll(g).seed(8).run(x -> false));
        assertEquals("first", f.shrunk());
        PropertyResult.Falsified<Boolean> b = falsified(Property.forAll(Gens.booleans()).seed(1).run(x -> false));
        assertEquals(false, b.shrunk());
        PropertyResult.Falsified<String> e = falsified(Property.forAll(Gens.elements("a", "b", "c")).seed(1).run(x -> false));
        assertEquals("a", e.shrunk());
    }

    @Test
    void aClaimShrinksToTheSimplestFailingClaim() {
        Gen<Claim> claims = QgpuGens.claims(ClaimOptions.defaults());
        PropertyResult.Falsified<Claim> f = falsified(Property.forAll(claims).seed(21).tries(500)
                .run(c -> c.exclusive() || c.memoryPerGpuBytes() <= 4 * GpuDevice.GIB));
        Claim c = f.shrunk();
        assertEquals(5 * GpuDevice.GIB, c.memoryPerGpuBytes());
        assertEquals(1, c.gpuCount());
        assertEquals(0, c.computeRequest());
        assertEquals(5, c.computeLimit(), "the smallest limit on the 5% grid");
        assertEquals(PriorityClass.OFFLINE, c.priority());
        assertEquals(Locality.none(), c.locality());
        assertEquals(Selectors.none(), c.selectors());
    }

    @Test
    void theSameSeedGivesTheSameCasesAndTheSameShrunkCase() {
        Gen<List<Integer>> lists = Gens.lists(Gens.ints(0, 1000), 0, 30);
        assertEquals(lists.samples(77, 50), lists.samples(77, 50));
        PropertyResult.Falsified<List<Integer>> a = falsified(Property.forAll(lists).seed(77).run(l -> sum(l) < 2000));
        PropertyResult.Falsified<List<Integer>> b = falsified(Property.forAll(lists).seed(77).run(l -> sum(l) < 2000));
        assertEquals(a.original(), b.original());
        assertEquals(a.shrunk(), b.shrunk());
        assertEquals(a.caseIndex(), b.caseIndex());
        assertEquals(a.message(), b.message());
    }

    @Test
    void aFailurePrintsTheSeedTheShrunkCaseAndHowToReRun() {
        AssertionError e = assertThrows(AssertionError.class,
                () -> Property.forAll(Gens.ints(0, 10_000)).check(x -> x < 100));
        String m = e.getMessage();
        assertTrue(m.startsWith("Property io.qgpu.testkit.property.PropertyTest#aFailurePrintsTheSeedTheShrunkCaseAndHowToReRun"
                + " falsified by case "), m);
        assertTrue(m.contains(", random)"), m);
        assertTrue(m.contains("Shrunk case (after "), m);
        assertTrue(m.contains("\n  100\n"), m);
        assertTrue(m.contains("Failure of the shrunk case:\n  predicate returned false"), m);
        assertTrue(m.contains("Re-run with this seed: -Dqgpu.seed="), m);
        assertTrue(m.contains("-Dtest='PropertyTest#aFailurePrintsTheSeedTheShrunkCaseAndHowToReRun'"), m);
    }

    @Test
    void theSystemPropertyReplaysAFailureExactly() {
        Gen<List<Integer>> lists = Gens.lists(Gens.ints(0, 1000), 0, 30);
        PropertyResult.Falsified<List<Integer>> first = falsified(Property.forAll(lists).named("p").run(l -> sum(l) < 3000));
        assertEquals(PropertyResult.SeedSource.RANDOM, first.source());
        System.setProperty(Seeds.PROPERTY, Long.toString(first.seed()));
        PropertyResult.Falsified<List<Integer>> replay = falsified(Property.forAll(lists).named("p").run(l -> sum(l) < 3000));
        assertEquals(PropertyResult.SeedSource.SYSTEM_PROPERTY, replay.source());
        assertEquals(first.seed(), replay.seed());
        assertEquals(first.original(), replay.original());
        assertEquals(first.shrunk(), replay.shrunk());
        assertTrue(replay.message().contains("(seed " + first.seed() + ", from -Dqgpu.seed)"), replay.message());
        // a seed fixed in code wins over the system property
        PropertyResult.Falsified<List<Integer>> fixed = falsified(Property.forAll(lists).seed(5).run(l -> sum(l) < 3000));
        assertEquals(5, fixed.seed());
        assertTrue(fixed.message().contains("fixed in code"), fixed.message());
    }

    @Test
    void unsetSeedValuesAreRecognisedAndBadOnesRefused() {
        assertEquals(OptionalLong.empty(), Seeds.parse(null));
        assertEquals(OptionalLong.empty(), Seeds.parse(""));
        assertEquals(OptionalLong.empty(), Seeds.parse("  "));
        assertEquals(OptionalLong.empty(), Seeds.parse("${qgpu.seed}"));
        assertEquals(OptionalLong.empty(), Seeds.parse("random"));
        assertEquals(OptionalLong.of(1234), Seeds.parse("1234"));
        assertEquals(OptionalLong.of(-5), Seeds.parse(" -5 "));
        assertEquals(OptionalLong.of(0x4d2), Seeds.parse("0x4d2"));
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> Seeds.parse("12ab"));
        assertEquals("qgpu.seed", e.field());
        System.setProperty(Seeds.PROPERTY, "${qgpu.seed}");
        PropertyResult<Integer> r = Property.forAll(Gens.ints(0, 9)).run(x -> true);
        assertInstanceOf(PropertyResult.Passed.class, r);
        assertEquals(PropertyResult.SeedSource.RANDOM, ((PropertyResult.Passed<Integer>) r).source());
    }

    @Test
    void aPassingPropertyRunsEveryCase() {
        AtomicInteger calls = new AtomicInteger();
        PropertyResult<Integer> r = Property.forAll(Gens.ints(0, 9)).tries(250).run(x -> {
            calls.incrementAndGet();
            return x >= 0 && x <= 9;
        });
        assertEquals(250, calls.get());
        assertInstanceOf(PropertyResult.Passed.class, r).orThrow();
    }

    @Test
    void anExceptionIsAFailureAndShrinksToo() {
        PropertyResult.Falsified<Integer> f = falsified(Property.forAll(Gens.ints(0, 1000)).seed(3).runVerify(x -> {
            if (x >= 42) {
                throw new IllegalStateException("too big: " + x);
            }
        }));
        assertEquals(42, f.shrunk());
        assertEquals("too big: 42", f.failure().getMessage());
        AssertionError e = assertThrows(AssertionError.class, f::orThrow);
        assertTrue(e.getMessage().contains("java.lang.IllegalStateException: too big: 42"), e.getMessage());
        assertEquals(f.failure(), e.getCause());
    }

    @Test
    void shrinkingStopsAtTheBudget() {
        PropertyResult.Falsified<Integer> f = falsified(Property.forAll(Gens.ints(0, 1_000_000)).seed(1).maxShrinks(0)
                .run(x -> x < 100));
        assertEquals(f.original(), f.shrunk());
        assertEquals(0, f.shrinkSteps());
    }

    @Test
    void badConfigurationIsRefused() {
        assertThrows(InvalidValueException.class, () -> Property.forAll(null));
        assertThrows(InvalidValueException.class, () -> Property.forAll(Gens.ints(0, 1)).tries(0));
        assertThrows(InvalidValueException.class, () -> Gens.ints(5, 1));
        assertThrows(InvalidValueException.class, () -> Gens.ints(0, 10, 11));
        assertThrows(InvalidValueException.class, () -> Gens.lists(Gens.ints(0, 1), 3, 2));
        assertThrows(InvalidValueException.class, () -> Gens.elements(List.of()));
        InvalidValueException nullChoice = assertThrows(InvalidValueException.class,
                () -> Gens.frequency(Gens.weight(1, Gens.ints(0, 1)), null));
        assertEquals("gens.frequency[1]", nullChoice.field());
        IllegalStateException filter = assertThrows(IllegalStateException.class,
                () -> Gens.ints(0, 10).filter(x -> x > 10).generate(new java.util.SplittableRandom(1)));
        assertTrue(filter.getMessage().contains("1000"));
    }
}
