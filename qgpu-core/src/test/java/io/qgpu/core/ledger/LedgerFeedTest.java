package io.qgpu.core.ledger;

import io.qgpu.core.internal.NodeFeed;
import io.qgpu.core.internal.LedgerFeeds;
import static io.qgpu.core.ledger.Fixtures.claim;
import static io.qgpu.core.ledger.Fixtures.on;
import static io.qgpu.core.ledger.Fixtures.t4Node;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Health;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The ledger's change feed: what incremental readers such as the placement engine's index rely on. */
class LedgerFeedTest {

    private final Node a = t4Node("a", 2);
    private final Node b = t4Node("b", 2);
    private final Ledger ledger = Ledger.create(List.of(a, b));

    private static List<Integer> drain(NodeFeed feed, long from, long[] next) {
        List<Integer> out = new ArrayList<>();
        next[0] = feed.drainChanges(from, out::add);
        return out;
    }

    @Test
    void stampsEveryNodeChangeInSequenceOrder() {
        NodeFeed feed = LedgerFeeds.of(ledger);
        assertEquals(0, feed.changeSequence());
        assertEquals(2, feed.size());
        assertTrue(ledger.reserve(on(claim("t1", 4, 10, 50), b, 0)).reserved());
        assertTrue(ledger.reserve(on(claim("t2", 4, 10, 50), a, 1)).reserved());
        // refused and no-op calls change no node and stamp nothing
        assertFalse(ledger.reserve(on(claim("t1", 4, 10, 50), a, 0)).reserved());
        assertTrue(ledger.release("unknown").isEmpty());
        ledger.release("t1");
        ledger.setHealth("a-g0", Health.UNHEALTHY);
        assertEquals(4, feed.changeSequence());
        long[] next = new long[1];
        assertEquals(List.of(1, 0, 1, 0), drain(feed, 0, next));
        assertEquals(4, next[0]);
        assertEquals(List.of(1, 0), drain(feed, 2, next));
        assertEquals(List.of(), drain(feed, 4, next));
        assertEquals(4, next[0]);
        // positions name the nodes in nodes() order, and nodeAt is their current state
        assertSame(ledger.node("a").orElseThrow(), feed.nodeAt(0));
        assertSame(ledger.node("b").orElseThrow(), feed.nodeAt(1));
        assertEquals(ledger.nodes(), List.of(feed.nodeAt(0), feed.nodeAt(1)));
    }

    @Test
    void affinityReservationsAndReleasesAreStampedToo() {
        var c = io.qgpu.api.Claim.builder("g1").memoryGiB(2).compute(5, 50)
                .locality(io.qgpu.api.Locality.none().withAffinity("team")).build();
        NodeFeed feed = LedgerFeeds.of(ledger);
        assertTrue(ledger.reserve(on(c, b, 1)).reserved());
        ledger.release("g1");
        long[] next = new long[1];
        assertEquals(List.of(1, 1), drain(feed, 0, next));
    }

    @Test
    void aReaderTooFarBehindIsToldToRescan() {
        NodeFeed feed = LedgerFeeds.of(ledger);
        long start = feed.changeSequence();
        Placement p = on(claim("t", 1, 5, 50), a, 0);
        for (int i = 0; i < NodeFeed.CAPACITY / 2 + 1; i++) {
            assertTrue(ledger.reserve(p).reserved());
            ledger.release("t");
        }
        long head = feed.changeSequence();
        assertEquals(NodeFeed.CAPACITY + 2, head - start);
        assertEquals(-1, feed.drainChanges(start, i -> { }));
        // exactly CAPACITY behind is still complete
        List<Integer> got = new ArrayList<>();
        assertEquals(head, feed.drainChanges(head - NodeFeed.CAPACITY, got::add));
        assertEquals(NodeFeed.CAPACITY, got.size());
        assertTrue(got.stream().allMatch(i -> i == 0));
        // a sequence this feed never issued
        assertEquals(-1, feed.drainChanges(head + 1, i -> { }));
        assertEquals(-1, feed.drainChanges(-5, i -> { }));
    }

    @Test
    void structuralChangesReplaceTheFeedWithAHigherEpoch() {
        NodeFeed f0 = LedgerFeeds.of(ledger);
        assertEquals(f0.epoch(), ledger.structureEpoch());
        assertTrue(ledger.reserve(on(claim("t1", 4, 10, 50), b, 0)).reserved());
        assertSame(f0, LedgerFeeds.of(ledger), "a reservation is not a structural change");

        ledger.addNode(t4Node("c", 1));
        NodeFeed f1 = LedgerFeeds.of(ledger);
        assertNotSame(f0, f1);
        assertTrue(f1.epoch() > f0.epoch());
        assertEquals(3, f1.size());
        assertEquals(0, f1.changeSequence());

        ledger.removeNode("a");
        NodeFeed f2 = LedgerFeeds.of(ledger);
        assertTrue(f2.epoch() > f1.epoch());
        assertEquals(List.of("b", "c"), List.of(f2.nodeAt(0).name(), f2.nodeAt(1).name()));
        // reservations made before carry over, and new changes are stamped at the new positions
        assertEquals(1, f2.nodeAt(0).gpu(0).tenants());
        assertTrue(ledger.reserve(on(claim("t2", 4, 10, 50), b, 1)).reserved());
        long[] next = new long[1];
        assertEquals(List.of(0), drain(f2, 0, next));
        assertEquals(0, f1.changeSequence(), "a replaced feed gets no more stamps");

        LedgerSnapshot snap = ledger.snapshot();
        ledger.restore(snap);
        NodeFeed f3 = LedgerFeeds.of(ledger);
        assertTrue(f3.epoch() > f2.epoch());
        ledger.reconcile(snap.placements());
        assertTrue(LedgerFeeds.of(ledger).epoch() > f3.epoch());
        assertEquals(ledger.structureEpoch(), LedgerFeeds.of(ledger).epoch());
    }

    @Test
    void nodeAtRefusesAPositionOutOfRange() {
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> LedgerFeeds.of(ledger).nodeAt(2));
        assertTrue(e.getMessage().contains("position"), e.getMessage());
        assertThrows(InvalidValueException.class, () -> LedgerFeeds.of(ledger).nodeAt(-1));
    }

    /**
     * Writers change nodes from several threads while a reader keeps a copy of every node from
     * drains; when the writers are done, one more drain leaves the copy equal to the ledger, and a
     * drain of the whole run yields every position that changed.
     */
    @Test
    void concurrentReaderNeverMissesAChange() throws Exception {
        int nodes = 16;
        List<Node> all = new ArrayList<>();
        for (int i = 0; i < nodes; i++) {
            all.add(t4Node("n" + i, 2));
        }
        Ledger l = Ledger.create(all);
        NodeFeed feed = LedgerFeeds.of(l);
        int threads = 4;
        int ops = 400;
        int[][] changes = new int[threads][nodes];
        CountDownLatch go = new CountDownLatch(1);
        AtomicBoolean done = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> writers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int id = t;
            writers.add(new Thread(() -> {
                try {
                    go.await();
                    SplittableRandom rnd = new SplittableRandom(id * 31L + 7);
                    for (int i = 0; i < ops; i++) {
                        int n = rnd.nextInt(nodes);
                        String tenant = "w" + id + "-" + i;
                        if (l.reserve(on(claim(tenant, 1, 5, 50), all.get(n), rnd.nextInt(2))).reserved()) {
                            changes[id][n]++;
                            if (rnd.nextInt(4) != 0 && l.release(tenant).isPresent()) {
                                changes[id][n]++;
                            }
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }));
        }
        NodeState[] copy = new NodeState[nodes];
        long start = feed.changeSequence();
        for (int i = 0; i < nodes; i++) {
            copy[i] = feed.nodeAt(i);
        }
        writers.forEach(Thread::start);
        go.countDown();
        long seen = start;
        while (!done.get()) {
            long next = feed.drainChanges(seen, i -> copy[i] = feed.nodeAt(i));
            if (next < 0) {
                next = feed.changeSequence();
                for (int i = 0; i < nodes; i++) {
                    copy[i] = feed.nodeAt(i);
                }
            }
            assertTrue(next >= seen, "the cursor never goes back");
            seen = next;
            done.set(writers.stream().noneMatch(Thread::isAlive));
        }
        for (Thread w : writers) {
            w.join();
        }
        assertEquals(null, failure.get());
        // every writer is done, so every stamp is written, and the run fits the ring: complete
        assertEquals(feed.changeSequence(), feed.drainChanges(seen, i -> copy[i] = feed.nodeAt(i)));
        for (int i = 0; i < nodes; i++) {
            assertSame(feed.nodeAt(i), copy[i], "node " + i + " is stale in the reader's copy");
        }
        // fewer changes than the ring holds: a drain of the whole run is complete and delivers
        // exactly one stamp per successful change, at the node it changed
        long head = feed.changeSequence();
        assertTrue(head - start <= NodeFeed.CAPACITY, "test sized to fit the ring");
        int[] delivered = new int[nodes];
        assertEquals(head, feed.drainChanges(start, i -> delivered[i]++));
        int[] expected = new int[nodes];
        int total = 0;
        for (int[] t : changes) {
            for (int i = 0; i < nodes; i++) {
                expected[i] += t[i];
                total += t[i];
            }
        }
        assertTrue(total > ops / 2, "the writers changed nodes: " + total);
        assertEquals(total, head - start);
        assertArrayEquals(expected, delivered);
    }
}
