package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * {@link RequestSample} under contention: 4 threads each record their own shape 20,000 times into a
 * sample large enough to hold everything; afterwards the sample must hold all 80,000 and each shape
 * must have probability exactly 1/4. The same check run on a copy of the sample's algorithm without
 * its lock (below) fails (lost ring slots, lost counter updates, or a concurrent-modification error):
 * measured on the shared 2-vCPU machine, it was caught in 6 of its 10 rounds, and the test requires
 * at least one catch in 10.
 */
class RequestSampleContentionTest {
    static final int THREADS = 4;
    static final int EACH = 20_000;

    /** Runs the recorders in parallel; returns false if the result breaks the invariant. */
    static boolean consistent(Consumer<RequestShape> record, Supplier<RequestMix> mix, Supplier<Integer> size) throws Exception {
        CountDownLatch start = new CountDownLatch(1);
        Thread[] ts = new Thread[THREADS];
        Throwable[] failure = new Throwable[1];
        for (int t = 0; t < THREADS; t++) {
            RequestShape mine = new RequestShape(1, 10 * (t + 1), 0, Set.of());
            ts[t] = new Thread(() -> {
                try {
                    start.await();
                    for (int i = 0; i < EACH; i++) {
                        record.accept(mine);
                    }
                } catch (Throwable e) {
                    failure[0] = e;   // a broken structure may throw; that is a catch too
                }
            });
            ts[t].start();
        }
        start.countDown();
        for (Thread t : ts) {
            t.join();
        }
        if (failure[0] != null || size.get() != THREADS * EACH) {
            return false;
        }
        RequestMix m = mix.get();
        if (m.size() != THREADS) {
            return false;
        }
        for (int i = 0; i < m.size(); i++) {
            if (Math.abs(m.probability(i) - 1.0 / THREADS) > 1e-12) {
                return false;
            }
        }
        return true;
    }

    @Test
    void concurrentRecordsLoseNothing() throws Exception {
        for (int round = 0; round < 3; round++) {
            RequestSample s = new RequestSample(THREADS * EACH);
            assertTrue(consistent(s::record, s::mix, s::size), "round " + round);
        }
    }

    @Test
    void theCheckCatchesASampleWithoutItsLock() throws Exception {
        int caught = 0;
        for (int round = 0; round < 10; round++) {
            Unlocked u = new Unlocked(THREADS * EACH);
            if (!consistent(u::record, u::mix, () -> u.size)) {
                caught++;
            }
        }
        assertTrue(caught >= 1, "the unlocked sample was never caught in 10 rounds");
    }

    @Test
    void aSingleThreadRecordsExactly() {
        RequestSample s = new RequestSample(8);
        for (int i = 0; i < 20; i++) {
            s.record(new RequestShape(1, 10 + (i % 2) * 10, 0, Set.of()));
        }
        assertEquals(8, s.size());
        assertEquals(0.5, s.mix().probability(0), 1e-12);
    }

    /** The sample's algorithm without the lock: the deliberately broken variant. */
    static final class Unlocked {
        final RequestShape[] ring;
        final Map<RequestShape, Integer> counts = new HashMap<>();
        int next;
        int size;
        volatile RequestMix mix = RequestMix.empty();

        Unlocked(int capacity) {
            ring = new RequestShape[capacity];
        }

        void record(RequestShape shape) {
            RequestShape old = ring[next];
            if (old != null) {
                counts.computeIfPresent(old, (k, v) -> v == 1 ? null : v - 1);
            } else {
                size++;
            }
            ring[next] = shape;
            next = (next + 1) % ring.length;
            counts.merge(shape, 1, Integer::sum);
            Map<RequestShape, Double> w = new HashMap<>();
            counts.forEach((k, v) -> w.put(k, (double) v));
            mix = RequestMix.of(w);
        }

        RequestMix mix() {
            return mix;
        }
    }
}
