package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The {@link RequestSample}'s mix, shapes in order and their probabilities, is the one the sample made
 * when it counted with boxed integers ({@code computeIfPresent} when a shape left, {@code merge} when
 * one came; kept here as {@link Boxed}), after every record of seeded random streams: samples of 1 to
 * 300 shapes, up to 400 distinct shapes (so the map grows, shrinks and holds equal counts, whose order
 * in the mix is the map's). Equal weights keep the map's order in the mix, so a sample whose map
 * inserts otherwise ({@code put}, at the tail of a bucket, growing after) gives another order; that
 * variant is also kept here, and the comparison rejects it.
 */
class RequestSampleOrderTest {

    /** The sample as it counted before: boxed counts, updated with computeIfPresent and merge. */
    static class Boxed {
        final RequestShape[] ring;
        final Map<RequestShape, Integer> counts = new HashMap<>();
        int next;

        Boxed(int capacity) {
            ring = new RequestShape[capacity];
        }

        void record(RequestShape shape) {
            RequestShape old = ring[next];
            if (old != null) {
                counts.computeIfPresent(old, (k, v) -> v == 1 ? null : v - 1);
            }
            ring[next] = shape;
            next = next + 1 == ring.length ? 0 : next + 1;
            add(shape);
        }

        void add(RequestShape shape) {
            counts.merge(shape, 1, Integer::sum);
        }

        RequestMix mix() {
            Map<RequestShape, Double> w = new HashMap<>(counts.size() * 2);
            counts.forEach((k, v) -> w.put(k, (double) v));
            return RequestMix.of(w);
        }
    }

    /** The deliberately different sample: a shape's first copy is put (at the tail of its bucket). */
    static final class Put extends Boxed {
        Put(int capacity) {
            super(capacity);
        }

        @Override
        void add(RequestShape shape) {
            Integer v = counts.get(shape);
            counts.put(shape, v == null ? 1 : v + 1);
        }
    }

    @Test
    void theMixIsTheOneTheBoxedCountsMade() {
        int compared = 0;
        for (long seed = 1; seed <= 40; seed++) {
            assertEquals(-1, firstDifference(seed, false), "seed " + seed);
            compared++;
        }
        assertEquals(40, compared);
    }

    @Test
    void theComparisonRejectsASampleThatInsertsOtherwise() {
        int caught = 0;
        for (long seed = 1; seed <= 40; seed++) {
            if (firstDifference(seed, true) >= 0) {
                caught++;
            }
        }
        assertTrue(caught > 0, "a sample that puts rather than merges must give another order on some stream");
    }

    /**
     * The first record after which the mixes of {@link RequestSample} and of {@link Boxed} (or of
     * {@link Put}) differ, or -1.
     */
    private static int firstDifference(long seed, boolean put) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int capacity = 1 + rnd.nextInt(300);
        int distinct = 1 + rnd.nextInt(400);
        List<RequestShape> shapes = new ArrayList<>();
        for (int i = 0; i < distinct; i++) {
            shapes.add(new RequestShape(1 + i % 8, 1 + (i / 8) % 100, 1000L * (i / 800), i % 3 == 0 ? Set.of("Tesla T4") : Set.of()));
        }
        RequestSample sample = new RequestSample(capacity);
        Boxed reference = put ? new Put(capacity) : new Boxed(capacity);
        for (int step = 0; step < 3 * capacity + 200; step++) {
            // a few shapes often, many rarely: equal counts are common
            RequestShape s = shapes.get(rnd.nextInt(4) == 0 ? rnd.nextInt(distinct) : rnd.nextInt(Math.min(distinct, 6)));
            sample.record(s);
            reference.record(s);
            if (!sameMix(sample.mix(), reference.mix())) {
                return step;
            }
        }
        return -1;
    }

    private static boolean sameMix(RequestMix a, RequestMix b) {
        if (a.size() != b.size()) {
            return false;
        }
        for (int i = 0; i < a.size(); i++) {
            if (!a.shape(i).equals(b.shape(i))
                    || Double.doubleToRawLongBits(a.probability(i)) != Double.doubleToRawLongBits(b.probability(i))) {
                return false;
            }
        }
        return true;
    }
}
