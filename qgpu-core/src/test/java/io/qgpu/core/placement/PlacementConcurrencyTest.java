package io.qgpu.core.placement;

import static io.qgpu.core.placement.Nodes.claim;
import static io.qgpu.core.placement.PlacementEngineTest.placed;
import static io.qgpu.core.placement.PlacementEngineTest.unschedulable;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.placement.NodeFilter;
import io.qgpu.core.ledger.Ledger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class PlacementConcurrencyTest {

    /**
     * A node filter that, the first time it runs, reserves capacity behind the engine's back: the
     * engine decides on a state that is already stale when it commits, as with a concurrent thread,
     * but deterministically.
     */
    static NodeFilter stealOnce(Ledger l, Placement steal) {
        AtomicBoolean done = new AtomicBoolean();
        return (claim, node, view) -> {
            if (done.compareAndSet(false, true)) {
                assertTrue(l.reserve(steal).reserved());
            }
            return List.of();
        };
    }

    @Test
    void aLostRaceIsRetriedOnAFreshView() {
        Node a = Nodes.t4("a", 1);
        Node b = Nodes.t4("b", 1);
        Ledger l = Ledger.create(List.of(a, b));
        PlacementEngine e = PlacementEngine.builder(l).nodeFilter(stealOnce(l, Nodes.on(Nodes.exclusive("thief", 1), a, 0))).build();
        Placement p = placed(e.place(Nodes.exclusive("x", 1)));
        assertEquals("b", p.nodeName(), "a was taken between decision and commit; the retry found b");
    }

    @Test
    void whenAttemptsRunOutTheResultIsConflictWithTheLastRefusal() {
        Node a = Nodes.t4("a", 1);
        Ledger l = Ledger.create(List.of(a));
        PlacementEngine e = PlacementEngine.builder(l).config(PlacementConfig.builder().maxCommitAttempts(1).build())
                .nodeFilter(stealOnce(l, Nodes.on(Nodes.exclusive("thief", 1), a, 0))).build();
        PlacementResult.Unschedulable u = unschedulable(e.place(Nodes.exclusive("x", 1)));
        assertEquals(ReasonCode.CONFLICT, u.general().get(0).code());
        assertTrue(u.nodes().get("a").gpuReasons().get("a-g0").stream().anyMatch(r -> r.code() == ReasonCode.EXCLUSIVE));
        assertEquals(1, l.size(), "only the thief holds a reservation");
    }

    @Test
    void manyThreadsNeverOvercommitAndEveryGpuIsUsedOnce() throws Exception {
        List<Node> nodes = List.of(Nodes.t4("a", 4), Nodes.t4("b", 4), Nodes.dgx1("c"));
        Ledger l = Ledger.create(nodes);
        // enough attempts that every thread wins eventually: each lost race is another thread's win
        PlacementEngine e = PlacementEngine.builder(l).config(PlacementConfig.builder().maxCommitAttempts(64).build()).build();
        int threads = 16;
        int perThread = 4;
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<List<PlacementResult>>> futures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int tt = t;
            futures.add(pool.submit(() -> {
                start.await();
                List<PlacementResult> out = new ArrayList<>();
                for (int i = 0; i < perThread; i++) {
                    out.add(e.place(Nodes.exclusive("t" + tt + "-" + i, 1)));
                }
                return out;
            }));
        }
        start.countDown();
        List<PlacementResult> all = new ArrayList<>();
        for (Future<List<PlacementResult>> f : futures) {
            all.addAll(f.get(60, TimeUnit.SECONDS));
        }
        pool.shutdown();
        long placed = all.stream().filter(r -> r instanceof PlacementResult.Placed).count();
        assertEquals(16, placed, "16 GPUs, one exclusive tenant each");
        for (PlacementResult r : all) {
            if (r instanceof PlacementResult.Unschedulable u) {
                assertTrue(u.general().isEmpty(), "no CONFLICT with enough attempts: " + u.summary());
            }
        }
        Map<String, Placement> live = new LinkedHashMap<>();
        l.placements().forEach(p -> live.put(p.tenantId(), p));
        List<String> v = new ArrayList<>();
        PlacementPropertyTest.check(nodes, live, v, "");
        assertTrue(v.isEmpty(), v.toString());
    }

    @Test
    void mixedPlaceAndReleaseFromManyThreadsKeepsTheLedgerConsistent() throws Exception {
        List<Node> nodes = List.of(Nodes.t4("a", 4), Nodes.dgx1("b"), Nodes.nvswitch("c", 8));
        Ledger l = Ledger.create(nodes);
        PlacementEngine e = PlacementEngine.builder(l).config(PlacementConfig.builder().maxCommitAttempts(3).build()).build();
        int threads = 12;
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        Map<String, Placement> held = new ConcurrentHashMap<>();
        List<Future<Integer>> futures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int tt = t;
            futures.add(pool.submit(() -> {
                start.await();
                SplittableRandom rnd = new SplittableRandom(1000 + tt);
                List<String> mine = new ArrayList<>();
                int conflicts = 0;
                for (int i = 0; i < 300; i++) {
                    if (!mine.isEmpty() && rnd.nextInt(3) == 0) {
                        String id = mine.remove(rnd.nextInt(mine.size()));
                        assertTrue(e.release(id).isPresent());
                        held.remove(id);
                        continue;
                    }
                    Claim c = Gen.claim(rnd, "t" + tt + "-" + i, nodes);
                    PlacementResult r = e.place(c);
                    if (r instanceof PlacementResult.Placed p) {
                        mine.add(c.tenantId());
                        held.put(c.tenantId(), p.placement());
                    } else if (((PlacementResult.Unschedulable) r).general().stream().anyMatch(x -> x.code() == ReasonCode.CONFLICT)) {
                        conflicts++;
                    }
                }
                return conflicts;
            }));
        }
        start.countDown();
        for (Future<Integer> f : futures) {
            f.get(60, TimeUnit.SECONDS);
        }
        pool.shutdown();
        assertEquals(held.keySet(), new java.util.HashSet<>(l.placements().stream().map(Placement::tenantId).toList()));
        Map<String, Placement> live = new LinkedHashMap<>();
        l.placements().forEach(p -> live.put(p.tenantId(), p));
        List<String> v = new ArrayList<>();
        PlacementPropertyTest.check(nodes, live, v, "");
        assertTrue(v.isEmpty(), v.toString());
        // the ledger's own consistency check: a snapshot restores into a fresh ledger
        Ledger.of(l.snapshot());
        assertTrue(l.size() > 0);
    }
}
