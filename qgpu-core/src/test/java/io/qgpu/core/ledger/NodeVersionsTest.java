package io.qgpu.core.ledger;

import static io.qgpu.core.ledger.Fixtures.claim;
import static io.qgpu.core.ledger.Fixtures.on;
import static io.qgpu.core.ledger.Fixtures.t4Node;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Health;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.core.internal.LedgerFeeds;
import io.qgpu.core.internal.NodeFeed;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.Test;

/** Node versions for memos: a change whose call returned is seen by the next refresh, nothing else moves. */
class NodeVersionsTest {

    private final Node a = t4Node("a", 2);
    private final Node b = t4Node("b", 2);
    private final Ledger ledger = Ledger.create(List.of(a, b));

    private static long[] all(NodeVersions v) {
        long[] out = new long[v.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = v.version(i);
        }
        return out;
    }

    @Test
    void everyChangeGivesItsNodeANewVersionAndNoOtherNodeMoves() {
        NodeVersions v = NodeVersions.of(ledger);
        assertEquals(List.of("a", "b"), v.names());
        assertEquals(ledger.structureEpoch(), v.epoch());
        long[] start = all(v);
        assertNotEquals(start[0], start[1]);

        assertTrue(ledger.reserve(on(claim("t1", 4, 10, 50), b, 0)).reserved());
        v.refresh();
        long[] afterReserve = all(v);
        assertEquals(start[0], afterReserve[0]);
        assertTrue(afterReserve[1] > start[1]);

        // refused and no-op calls change no node
        assertFalse(ledger.reserve(on(claim("t1", 4, 10, 50), a, 0)).reserved());
        assertTrue(ledger.release("unknown").isEmpty());
        v.refresh();
        assertEquals(afterReserve[0], v.version(0));
        assertEquals(afterReserve[1], v.version(1));

        ledger.setHealth("a-g1", Health.UNHEALTHY);
        v.refresh();
        assertTrue(v.version(0) > afterReserve[0]);
        assertEquals(afterReserve[1], v.version(1));

        long before = v.version(1);
        ledger.release("t1");
        assertEquals(before, v.version(1), "versions move on refresh only");
        v.refresh();
        assertTrue(v.version(1) > before);
        assertTrue(v.isCurrent());
    }

    @Test
    void aStructuralChangeEndsTheNumbering() {
        NodeVersions v = NodeVersions.of(ledger);
        ledger.addNode(t4Node("c", 1));
        assertFalse(v.isCurrent());
        NodeVersions next = NodeVersions.of(ledger);
        assertTrue(next.isCurrent());
        assertEquals(List.of("a", "b", "c"), next.names());
        assertTrue(next.epoch() > v.epoch());
        ledger.removeNode("a");
        assertFalse(next.isCurrent());
        assertEquals(List.of("b", "c"), NodeVersions.of(ledger).names());
    }

    @Test
    void aReaderTooFarBehindGivesEveryNodeANewVersion() {
        NodeVersions v = NodeVersions.of(ledger);
        long[] start = all(v);
        Placement p = on(claim("t", 1, 5, 50), b, 0);
        for (int i = 0; i < NodeFeed.CAPACITY / 2 + 1; i++) {
            assertTrue(ledger.reserve(p).reserved());
            ledger.release("t");
        }
        v.refresh();
        assertTrue(v.version(0) > start[0], "node a did not change, but the record of changes was lost");
        assertTrue(v.version(1) > start[1]);
        long[] now = all(v);
        v.refresh();
        assertEquals(now[0], v.version(0));
        assertEquals(now[1], v.version(1));
    }

    @Test
    void refusesAPositionOutOfRange() {
        NodeVersions v = NodeVersions.of(ledger);
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> v.version(2));
        assertTrue(e.getMessage().contains("position") && e.getMessage().contains("2"), e.getMessage());
        assertThrows(InvalidValueException.class, () -> v.version(-1));
        assertThrows(UnsupportedOperationException.class, () -> v.names().add("x"));
    }

    /** What the schedule test reads: the class under test, or a broken stand-in. */
    interface Versions {
        void refresh();

        long version(int position);

        /** Makes the next refresh run {@code hook} inside its window (between drain and publish). */
        void pauseIn(Runnable hook);
    }

    static Versions real(Ledger ledger) {
        NodeVersions v = NodeVersions.of(ledger);
        return new Versions() {
            @Override
            public void refresh() {
                v.refresh();
            }

            @Override
            public long version(int position) {
                return v.version(position);
            }

            @Override
            public void pauseIn(Runnable hook) {
                v.beforePublish = () -> {
                    v.beforePublish = null;
                    hook.run();
                };
            }
        };
    }

    /**
     * A broken stand-in: it records that it has drained up to the head before it gives the changed
     * nodes their versions, so a concurrent refresh that finds nothing new to drain returns while the
     * versions are still old.
     */
    static final class PublishesBeforeBumping implements Versions {
        private final NodeFeed feed;
        private final AtomicLongArray versions;
        private final AtomicLong counter = new AtomicLong();
        private final AtomicLong drained;
        private volatile Runnable hook;

        PublishesBeforeBumping(Ledger ledger) {
            this.feed = LedgerFeeds.of(ledger);
            this.drained = new AtomicLong(feed.changeSequence());
            this.versions = new AtomicLongArray(feed.size());
            for (int i = 0; i < feed.size(); i++) {
                versions.set(i, counter.incrementAndGet());
            }
        }

        @Override
        public void refresh() {
            long from = drained.get();
            long head = feed.changeSequence();
            if (head == from || !drained.compareAndSet(from, head)) {
                return;
            }
            Runnable h = hook;
            if (h != null) {
                hook = null;
                h.run();
            }
            feed.drainChanges(from, p -> versions.set(p, counter.incrementAndGet()));
        }

        @Override
        public long version(int position) {
            return versions.get(position);
        }

        @Override
        public void pauseIn(Runnable h) {
            hook = h;
        }
    }

    /**
     * A controlled schedule: a refresh on another thread is held inside its window while this thread's
     * own change returns and this thread refreshes and reads. The class answers the new version (the
     * held refresh has not claimed the change, so this thread's refresh delivers it itself); the
     * broken stand-in {@link PublishesBeforeBumping} answers the old one, deterministically.
     */
    @Test
    void aRefreshHeldInItsWindowDoesNotHideAReturnedChange() throws Exception {
        assertTrue(newVersionSeen(NodeVersionsTest::real), "a change whose call returned was not seen");
        assertFalse(newVersionSeen(PublishesBeforeBumping::new), "the broken stand-in was not caught");
    }

    private boolean newVersionSeen(java.util.function.Function<Ledger, Versions> make) throws Exception {
        Ledger ledger = Ledger.create(List.of(t4Node("a", 2), t4Node("b", 2)));
        Versions v = make.apply(ledger);
        long before = v.version(1);
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        v.pauseIn(() -> {
            held.countDown();
            try {
                release.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        assertTrue(ledger.reserve(on(claim("t1", 4, 10, 50), ledger.node("b").orElseThrow().node(), 0)).reserved());
        ExecutorService other = Executors.newSingleThreadExecutor();
        try {
            Future<?> heldRefresh = other.submit(v::refresh);
            assertTrue(held.await(10, TimeUnit.SECONDS), "the other refresh reached its window");
            v.refresh();
            boolean seen = v.version(1) != before;
            release.countDown();
            heldRefresh.get(10, TimeUnit.SECONDS);
            v.refresh();
            assertNotEquals(before, v.version(1), "after both refreshes the change is seen either way");
            return seen;
        } finally {
            release.countDown();
            other.shutdownNow();
        }
    }
}
