package io.qgpu.kubernetes.node.reconcile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Ticker;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The loop's passes, order, back-off and timer, with in-memory resources and a manual ticker. */
class NodeReconcilerTest {
    static final NodeReconciler.Settings SETTINGS = new NodeReconciler.Settings(Duration.ofSeconds(10), Duration.ofSeconds(1),
            Duration.ofSeconds(8));

    /** A set of keys on the "node"; steps can be made to fail. */
    static final class Fake implements NodeResource<String> {
        final String kind;
        final List<String> log;
        final Set<String> desired = new LinkedHashSet<>();
        final Set<String> present = new LinkedHashSet<>();
        final Set<String> failEnsure = new HashSet<>();
        final Set<String> failRemove = new HashSet<>();
        boolean failPresent;

        Fake(String kind, List<String> log) {
            this.kind = kind;
            this.log = log;
        }

        @Override
        public String kind() {
            return kind;
        }

        @Override
        public Set<String> desired() {
            return Set.copyOf(desired);
        }

        @Override
        public Set<String> present() throws IOException {
            if (failPresent) {
                throw new IOException("cannot list");
            }
            return Set.copyOf(present);
        }

        @Override
        public void ensure(String key) throws IOException {
            log.add("ensure " + kind + " " + key);
            if (failEnsure.contains(key)) {
                throw new IOException("ensure " + key + " refused");
            }
            present.add(key);
        }

        @Override
        public void remove(String key) throws IOException {
            log.add("remove " + kind + " " + key);
            if (failRemove.contains(key)) {
                throw new IOException("remove " + key + " refused");
            }
            present.remove(key);
        }
    }

    final AtomicLong now = new AtomicLong(5_000_000_000L);
    final Ticker ticker = now::get;
    final List<String> log = new ArrayList<>();
    final Fake dirs = new Fake("dir", log);
    final Fake specs = new Fake("spec", log);
    final NodeReconciler r = new NodeReconciler("test", List.of(dirs, specs), SETTINGS, ticker);

    void advance(Duration d) {
        now.addAndGet(d.toNanos());
    }

    @Test
    void aPassRemovesInReverseOrderThenEnsuresInOrder() {
        dirs.desired.add("a");
        specs.desired.add("a");
        dirs.present.add("old");
        specs.present.add("old");
        NodeReconciler.Report rep = r.reconcile();
        assertEquals(List.of("remove spec old", "remove dir old", "ensure dir a", "ensure spec a"), log);
        assertTrue(rep.converged());
        assertEquals(2, rep.ensured());
        assertEquals(2, rep.removed());
        assertEquals(Set.of("a"), dirs.present);
        assertEquals(Set.of("a"), specs.present);
    }

    @Test
    void aFailedStepIsRetriedWithDoublingBackoffUntilItHolds() {
        specs.desired.add("a");
        specs.failEnsure.add("a");
        List<Long> attemptsAt = new ArrayList<>();
        long start = now.get();
        for (int ms = 0; ms <= 20_000; ms += 100) {
            int before = log.size();
            r.reconcile();
            if (log.size() > before) {
                attemptsAt.add((now.get() - start) / 1_000_000);
            }
            advance(Duration.ofMillis(100));
        }
        // 0, +1 s, +2 s, +4 s, +8 s (the maximum), +8 s
        assertEquals(List.of(0L, 1_000L, 3_000L, 7_000L, 15_000L), attemptsAt);
        NodeReconciler.Failure f = r.failures().get(0);
        assertEquals("spec", f.kind());
        assertEquals("a", f.key());
        assertEquals("ensure", f.step());
        assertEquals(5, f.attempts());
        assertTrue(f.error().contains("refused"), f.error());
        specs.failEnsure.clear();
        advance(Duration.ofSeconds(8));
        assertTrue(r.reconcile().converged());
        assertTrue(specs.present.contains("a"));
        assertTrue(r.failures().isEmpty());
    }

    @Test
    void reconcileNowRetriesDespiteTheBackoff() {
        specs.desired.add("a");
        specs.failEnsure.add("a");
        r.reconcile();
        specs.failEnsure.clear();
        assertFalse(r.reconcile().converged(), "still backing off");
        assertTrue(r.reconcileNow().converged());
    }

    @Test
    void anUnreadableNodeDelaysRemovalsButNotEnsures() {
        dirs.present.add("stale");
        dirs.desired.add("a");
        dirs.failPresent = true;
        NodeReconciler.Report rep = r.reconcile();
        assertEquals(List.of("ensure dir a"), log);
        assertEquals("present", rep.failures().get(0).step());
        dirs.failPresent = false;
        advance(Duration.ofSeconds(1));
        assertTrue(r.reconcile().converged());
        assertEquals(Set.of("a"), dirs.present);
    }

    @Test
    void aFailingKeyThatIsNoLongerWantedStopsFailing() {
        specs.desired.add("a");
        specs.failEnsure.add("a");
        r.reconcile();
        specs.desired.clear();
        specs.present.clear();
        advance(Duration.ofSeconds(1));
        assertTrue(r.reconcile().converged());
    }

    @Test
    void aRemovalThatFailsIsRetried() {
        specs.present.add("old");
        specs.failRemove.add("old");
        assertFalse(r.reconcile().converged());
        specs.failRemove.clear();
        advance(Duration.ofSeconds(1));
        assertTrue(r.reconcile().converged());
        assertTrue(specs.present.isEmpty());
    }

    @Test
    void ensureNowThrowsTheFailureAndLeavesTheKeyToLaterPasses() {
        specs.desired.add("a");
        specs.failEnsure.add("a");
        IOException e = assertThrows(IOException.class, () -> r.ensureNow(specs, List.of("a")));
        assertTrue(e.getMessage().contains("refused"));
        assertEquals(1, r.failures().size());
        specs.failEnsure.clear();
        advance(Duration.ofSeconds(1));
        assertTrue(r.reconcile().converged());
    }

    @Test
    void removeNowTriesEveryKey() {
        specs.present.addAll(List.of("a", "b"));
        specs.failRemove.add("a");
        assertFalse(r.removeNow(specs, List.of("a", "b")));
        assertEquals(Set.of("a"), specs.present);
    }

    @Test
    void theTimerRunsAPassAtStartAndOnTrigger() throws Exception {
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
        NodeReconciler.Settings longPeriod = new NodeReconciler.Settings(Duration.ofHours(1), Duration.ofHours(1), Duration.ofHours(1));
        CountDownLatch first = new CountDownLatch(1);
        CountDownLatch second = new CountDownLatch(2);
        NodeResource<String> counting = NodeResource.of("count", () -> {
            first.countDown();
            second.countDown();
            return Set.of();
        }, Set::of, k -> { }, k -> { });
        NodeReconciler timed = new NodeReconciler("timed", List.of(counting), longPeriod, Ticker.system());
        try {
            timed.start(timer);
            assertTrue(first.await(10, TimeUnit.SECONDS), "no pass at start");
            timed.trigger();
            assertTrue(second.await(10, TimeUnit.SECONDS), "no pass after trigger");
        } finally {
            timed.close();
            timer.shutdownNow();
        }
    }

    @Test
    void settingsAreChecked() {
        assertThrows(IllegalArgumentException.class, () -> new NodeReconciler.Settings(Duration.ZERO, Duration.ofSeconds(1),
                Duration.ofSeconds(1)));
        assertThrows(IllegalArgumentException.class, () -> new NodeReconciler.Settings(Duration.ofSeconds(1), Duration.ofSeconds(2),
                Duration.ofSeconds(1)));
    }
}
