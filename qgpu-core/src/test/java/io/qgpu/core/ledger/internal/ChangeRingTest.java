package io.qgpu.core.ledger.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The change ring's bookkeeping, one thread: what a drain delivers and when it asks for a full re-read. */
class ChangeRingTest {

    private static List<Integer> drained(ChangeRing ring, long from, long[] next) {
        List<Integer> out = new ArrayList<>();
        next[0] = ring.drain(from, out::add);
        return out;
    }

    @Test
    void aDrainDeliversThePositionsChangedSinceItsStartInOrder() {
        ChangeRing ring = new ChangeRing(10);
        long[] next = new long[1];
        assertEquals(0, ring.sequence());
        assertEquals(List.of(), drained(ring, 0, next));
        assertEquals(0, next[0]);

        ring.changed(5);
        ring.changed(7);
        ring.changed(5);
        assertEquals(3, ring.sequence());
        assertEquals(List.of(5, 7, 5), drained(ring, 0, next));
        assertEquals(3, next[0]);
        assertEquals(List.of(7, 5), drained(ring, 1, next));
        assertEquals(3, next[0]);
        assertEquals(List.of(), drained(ring, 3, next));
        assertEquals(3, next[0]);
    }

    @Test
    void aSequenceThatIsNotTheRingsAsksForAFullReread() {
        ChangeRing ring = new ChangeRing(10);
        ring.changed(1);
        long[] next = new long[1];
        assertEquals(List.of(), drained(ring, -1, next));
        assertEquals(-1, next[0]);
        assertEquals(List.of(), drained(ring, 2, next));
        assertEquals(-1, next[0]);
    }

    @Test
    void aReaderExactlyOneRingBehindGetsEverythingAndOneFurtherBehindMustReread() {
        ChangeRing ring = new ChangeRing(ChangeRing.CAPACITY + 1);
        for (int i = 0; i <= ChangeRing.CAPACITY; i++) {
            ring.changed(i);
        }
        long[] next = new long[1];
        assertEquals(List.of(), drained(ring, 0, next));
        assertEquals(-1, next[0], "the first stamp was overwritten");
        List<Integer> all = drained(ring, 1, next);
        assertEquals(ChangeRing.CAPACITY, all.size());
        assertEquals(1, all.get(0));
        assertEquals(ChangeRing.CAPACITY, all.get(all.size() - 1));
        assertEquals(ChangeRing.CAPACITY + 1, next[0]);
    }

    @Test
    void positionsBeyondTwentyFourBitsCannotBeStampedSoEveryDrainAsksForAFullReread() {
        ChangeRing largest = new ChangeRing((1 << 24) - 1);
        largest.changed((1 << 24) - 2);
        long[] next = new long[1];
        assertEquals(List.of((1 << 24) - 2), drained(largest, 0, next));
        assertEquals(1, next[0]);

        ChangeRing tooMany = new ChangeRing(1 << 24);
        assertEquals(List.of(), drained(tooMany, 0, next));
        assertEquals(-1, next[0]);
        tooMany.changed(3);
        assertEquals(1, tooMany.sequence(), "changes are still numbered");
        assertEquals(List.of(), drained(tooMany, 0, next));
        assertEquals(-1, next[0]);
    }

    @Test
    void aDrainThatIsLappedWhileItRunsAsksForAFullReread() {
        ChangeRing ring = new ChangeRing(10);
        ring.changed(1);
        ring.changed(2);
        List<Integer> seen = new ArrayList<>();
        long next = ring.drain(0, pos -> {
            seen.add(pos);
            if (seen.size() == 1) {
                for (int i = 0; i < ChangeRing.CAPACITY; i++) {
                    ring.changed(3); // overwrites the stamp the drain reads next
                }
            }
        });
        assertEquals(List.of(1), seen);
        assertEquals(-1, next);
    }

    /**
     * A writer held between taking its number and writing its stamp does not hold back the stamps
     * written after it: the drain delivers them and answers the held change's number, so the next drain
     * delivers the held one (and the later ones again). The ring before this change stopped at the
     * held stamp and delivered nothing after it, so a change whose call had returned could go unseen
     * for as long as another writer was held: this test fails on it (it delivered {@code [1]}).
     */
    @Test
    void aWriterHeldBetweenItsTwoStepsHoldsBackNoStampWrittenAfterIt() {
        ChangeRing ring = new ChangeRing(10);
        long[] next = new long[1];
        ring.changed(1);
        long held = ring.number();   // a writer stopped here
        ring.changed(3);              // another writer's change, its call returned
        ring.changed(4);
        assertEquals(List.of(1, 3, 4), drained(ring, 0, next));
        assertEquals(held, next[0], "the next drain resumes at the held change");
        assertEquals(List.of(3, 4), drained(ring, held, next));
        assertEquals(held, next[0]);
        ring.write(held, 7);          // the held writer goes on
        assertEquals(List.of(7, 3, 4), drained(ring, held, next));
        assertEquals(4, next[0]);
    }
}
