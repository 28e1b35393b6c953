package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Health;
import io.qgpu.api.Locality;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.PriorityClass;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementConfig;
import io.qgpu.core.placement.PlacementEngine;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * The memo answers exactly what the engine answers from the same ledger state: seeded sequences of
 * placements, releases, health changes and structural changes, with a check through the memo and
 * one through the engine after each step. A memo that forgets to look at the node's state
 * ({@link StaleMemo}, below) is caught by the same property.
 */
class FitCacheTest {

    private static final int NODES = 12;

    static Node h100(String name) {
        Node.Builder b = Node.builder(name).label("gpu", "h100").defaultLink(new GpuLink.NvLink(18));
        for (int g = 0; g < 8; g++) {
            b.gpu(GpuDevice.builder(name + "-g" + g).index(g).model("NVIDIA H100 80GB HBM3").memoryGiB(80).build());
        }
        return b.build();
    }

    static Ledger ledger(int nodes) {
        List<Node> list = new ArrayList<>();
        for (int i = 0; i < nodes; i++) {
            list.add(h100("n" + i));
        }
        return Ledger.create(GranularityRules.ofDefaults(), list);
    }

    /** A few shapes, one with an affinity label and one under the fragmentation policy (both not memoised). */
    static Claim claim(SplittableRandom rnd, String tenant) {
        Claim.Builder b = Claim.builder(tenant).priority(rnd.nextBoolean() ? PriorityClass.ONLINE : PriorityClass.OFFLINE);
        switch (rnd.nextInt(7)) {
            case 0 -> b.gpus(1).memoryGiB(8).compute(10, 100);
            case 1 -> b.gpus(1).memoryGiB(40).compute(0, 100);
            case 2 -> b.gpus(2).memoryGiB(20).compute(20, 100);
            case 3 -> b.gpus(1).exclusive();
            case 4 -> b.gpus(4).exclusive();
            case 5 -> b.gpus(1).memoryGiB(16).compute(10, 100).locality(Locality.of("team-x", null, null));
            default -> b.gpus(1).memoryGiB(16).compute(10, 100).gpuPolicy(PlacementPolicy.FRAGMENTATION);
        }
        return b.build();
    }

    /** Node names to ask about: a random subset, in random order, sometimes with a name the ledger does not know. */
    static List<String> names(SplittableRandom rnd, Ledger ledger) {
        List<String> out = new ArrayList<>();
        ledger.nodes().forEach(n -> {
            if (rnd.nextInt(4) > 0) {
                out.add(n.name());
            }
        });
        java.util.Collections.shuffle(out, new java.util.Random(rnd.nextLong()));
        if (rnd.nextInt(5) == 0) {
            out.add(rnd.nextInt(out.size() + 1), "no-such-node");
        }
        return out;
    }

    static void assertSame(NodeChecks.Checked expected, NodeChecks.Checked actual, String where) {
        assertEquals(expected.names(), actual.names(), where);
        assertArrayEquals(expected.totals(), actual.totals(), 0.0, where + " " + expected.names());
        assertArrayEquals(expected.reasons(), actual.reasons(), where + " " + expected.names());
    }

    /**
     * Runs the seeded sequence against {@code memo}; the first step where it answered otherwise than
     * the engine, or empty.
     */
    static Optional<String> firstMismatch(long seed, Ledger ledger, PlacementEngine engine, NodeChecks memo) {
        SplittableRandom rnd = new SplittableRandom(seed);
        NodeChecks truth = NodeChecks.of(engine);
        List<String> tenants = new ArrayList<>();
        int added = 0;
        for (int step = 0; step < 300; step++) {
            int op = rnd.nextInt(20);
            if (op < 9) {
                String tenant = "t" + step;
                String node = ledger.nodes().get(rnd.nextInt(ledger.nodes().size())).name();
                if (engine.placeOn(claim(rnd, tenant), node) instanceof PlacementResult.Placed) {
                    tenants.add(tenant);
                }
            } else if (op < 14 && !tenants.isEmpty()) {
                engine.release(tenants.remove(rnd.nextInt(tenants.size())));
            } else if (op == 14) {
                var n = ledger.nodes().get(rnd.nextInt(ledger.nodes().size()));
                var g = n.gpus().get(rnd.nextInt(n.gpus().size()));
                ledger.setHealth(g.uuid(), g.device().healthy() ? Health.UNHEALTHY : Health.HEALTHY);
            } else if (op == 15) {
                ledger.addNode(h100("x" + added++));   // a structural change: positions move
            } else if (op == 16 && ledger.nodes().size() > 4) {
                List<Placement> displaced = ledger.removeNode(ledger.nodes().get(rnd.nextInt(ledger.nodes().size())).name());
                displaced.forEach(p -> tenants.remove(p.tenantId()));
            }
            // ask twice (as filter and then prioritize do), for two tenants of the same shape
            long shapeSeed = rnd.nextLong();
            List<String> names = names(rnd, ledger);
            for (String tenant : List.of("ask-a", "ask-b")) {
                Claim c = claim(new SplittableRandom(shapeSeed), tenant);
                NodeChecks.Checked want = truth.check(c, names);
                NodeChecks.Checked got = memo.check(c, names);
                for (int j = 0; j < want.size(); j++) {
                    boolean same = Double.compare(want.total(j), got.total(j)) == 0
                            && java.util.Objects.equals(want.reason(j), got.reason(j));
                    if (!same) {
                        return Optional.of("seed " + seed + " step " + step + " node " + want.name(j) + ": engine "
                                + (want.fits(j) ? want.total(j) : want.reason(j)) + ", memo "
                                + (got.fits(j) ? got.total(j) : got.reason(j)));
                    }
                }
            }
        }
        return Optional.empty();
    }

    @Test
    void theMemoAnswersWhatTheEngineAnswersThroughEveryKindOfChange() {
        for (long seed = 1; seed <= 12; seed++) {
            Ledger ledger = ledger(NODES);
            PlacementEngine engine = PlacementEngine.builder(ledger).config(PlacementConfig.defaults()).build();
            FitCache memo = new FitCache(ledger, PlacementConfig.defaults(), NodeChecks.of(engine), FitCache.DEFAULT_MAX_ENTRIES);
            assertEquals(Optional.empty(), firstMismatch(seed, ledger, engine, memo));
            long[] counts = memo.counts();
            assertTrue(counts[0] > counts[1], "most answers came from the memo: " + counts[0] + " / " + counts[1]);
        }
    }

    @Test
    void aMemoThatIgnoresTheNodesStateIsCaught() {
        int caught = 0;
        for (long seed = 1; seed <= 12; seed++) {
            Ledger ledger = ledger(NODES);
            PlacementEngine engine = PlacementEngine.builder(ledger).config(PlacementConfig.defaults()).build();
            if (firstMismatch(seed, ledger, engine, new StaleMemo(NodeChecks.of(engine))).isPresent()) {
                caught++;
            }
        }
        assertEquals(12, caught, "the property catches the stale memo with every seed");
    }

    /** A deliberately broken memo: keyed by shape and node name only, so it answers from a state that is gone. */
    static final class StaleMemo implements NodeChecks {
        private final NodeChecks engine;
        private final Map<String, Object[]> answers = new HashMap<>();

        StaleMemo(NodeChecks engine) {
            this.engine = engine;
        }

        @Override
        public synchronized Checked check(Claim claim, List<String> nodeNames) {
            Claim shape = claim.toBuilder().tenantId("-").build();
            double[] totals = new double[nodeNames.size()];
            io.qgpu.api.Reason[] reasons = new io.qgpu.api.Reason[nodeNames.size()];
            for (int j = 0; j < nodeNames.size(); j++) {
                String key = shape + "@" + nodeNames.get(j);
                Object[] a = answers.get(key);
                if (a == null) {
                    Checked fresh = engine.check(claim, List.of(nodeNames.get(j)));
                    a = new Object[] {fresh.total(0), fresh.reason(0)};
                    answers.put(key, a);
                }
                totals[j] = (Double) a[0];
                reasons[j] = (io.qgpu.api.Reason) a[1];
            }
            return new Checked(nodeNames, totals, reasons);
        }
    }

    /**
     * A bind lands on a node while the memo's engine call is checking it (the engine sees the new
     * state, or the old one): the answer is never given again once the node has changed. Controlled:
     * the engine stand-in places the claim itself, before or after it checks. Shown to catch the
     * seeded bug of reading the node's version after the engine's check instead of before (the memo
     * then files the old state's answer under the new state: fails deterministically).
     */
    @Test
    void aChangeDuringTheEnginesCheckIsNeverServedStale() {
        for (boolean placeFirst : new boolean[] {true, false}) {
            Ledger ledger = ledger(2);
            PlacementEngine engine = PlacementEngine.builder(ledger).config(PlacementConfig.defaults()).build();
            NodeChecks truth = NodeChecks.of(engine);
            AtomicBoolean once = new AtomicBoolean(true);
            Claim big = Claim.builder("big").gpus(8).exclusive().build();
            NodeChecks racing = (claim, names) -> {
                if (!once.getAndSet(false)) {
                    return truth.check(claim, names);
                }
                if (placeFirst) {
                    assertTrue(engine.placeOn(big, "n0") instanceof PlacementResult.Placed);
                    return truth.check(claim, names);
                }
                NodeChecks.Checked before = truth.check(claim, names);
                assertTrue(engine.placeOn(big, "n0") instanceof PlacementResult.Placed);
                return before;
            };
            FitCache memo = new FitCache(ledger, PlacementConfig.defaults(), racing, FitCache.DEFAULT_MAX_ENTRIES);
            Claim one = Claim.builder("p").gpus(1).memoryGiB(8).compute(10, 100).build();
            memo.check(one, List.of("n0", "n1"));
            NodeChecks.Checked now = memo.check(one.toBuilder().tenantId("q").build(), List.of("n0", "n1"));
            assertSame(truth.check(one, List.of("n0", "n1")), now, "place " + (placeFirst ? "before" : "after") + " the check");
            assertTrue(!now.fits(0) && now.fits(1), "n0 is full now: " + java.util.Arrays.toString(now.reasons()));
        }
    }

    @Test
    void aRefusedNodesMessageIsWrittenOnceAndGivenAgainWithItsAnswer() {
        Ledger ledger = ledger(2);
        PlacementEngine engine = PlacementEngine.builder(ledger).config(PlacementConfig.defaults()).build();
        FitCache memo = new FitCache(ledger, PlacementConfig.defaults(), NodeChecks.of(engine), FitCache.DEFAULT_MAX_ENTRIES);
        List<String> both = List.of("n0", "n1");
        Claim big = Claim.builder("big").gpus(9).exclusive().build();   // more GPUs than a node has: refused on both
        NodeChecks.Checked first = memo.check(big, both);
        NodeChecks.Checked again = memo.check(big, both);
        assertArrayEquals(new long[] {2, 2}, memo.counts(), "the second check came from the memo");
        for (int j = 0; j < 2; j++) {
            assertEquals(first.reason(j).message(), first.message(j));
            org.junit.jupiter.api.Assertions.assertSame(first.message(j), again.message(j), "the memo's own string, not written again");
        }
    }

    @Test
    void atMostTheBoundOfShapesIsKeptTheLeastRecentlyAskedDroppedFirst() {
        Ledger ledger = ledger(4);
        PlacementEngine engine = PlacementEngine.builder(ledger).config(PlacementConfig.defaults()).build();
        FitCache memo = new FitCache(ledger, PlacementConfig.defaults(), NodeChecks.of(engine), 2 * 4);   // two shapes
        List<String> all = List.of("n0", "n1", "n2", "n3");
        Claim a = Claim.builder("a").gpus(1).memoryGiB(8).compute(10, 100).build();
        Claim b = Claim.builder("b").gpus(1).memoryGiB(16).compute(10, 100).build();
        Claim c = Claim.builder("c").gpus(1).memoryGiB(24).compute(10, 100).build();
        memo.check(a, all);
        memo.check(b, all);
        memo.check(a, all);                      // a is the most recent now
        assertArrayEquals(new long[] {4, 8}, memo.counts());
        memo.check(c, all);                      // drops b
        memo.check(a, all);
        assertArrayEquals(new long[] {8, 12}, memo.counts());
        memo.check(b, all);                      // b was dropped: the engine again
        assertArrayEquals(new long[] {8, 16}, memo.counts());
    }

    /**
     * Threads place, release and check through the memo at once; once they stop, every shape's memo
     * answers what the engine answers for every node. The same run catches the stale memo
     * ({@link #underContentionTheStaleMemoIsCaught}).
     */
    @Test
    void underContentionNoStaleAnswerSurvives() throws Exception {
        Ledger ledger = ledger(NODES);
        PlacementEngine engine = PlacementEngine.builder(ledger).config(PlacementConfig.defaults()).build();
        FitCache memo = new FitCache(ledger, PlacementConfig.defaults(), NodeChecks.of(engine), FitCache.DEFAULT_MAX_ENTRIES);
        assertEquals(List.of(), contend(ledger, engine, memo));
    }

    @Test
    void underContentionTheStaleMemoIsCaught() throws Exception {
        Ledger ledger = ledger(NODES);
        PlacementEngine engine = PlacementEngine.builder(ledger).config(PlacementConfig.defaults()).build();
        assertTrue(!contend(ledger, engine, new StaleMemo(NodeChecks.of(engine))).isEmpty());
    }

    /** Runs four threads over the memo, then compares every shape on every node; the mismatches. */
    static List<String> contend(Ledger ledger, PlacementEngine engine, NodeChecks memo) throws Exception {
        int threads = 4;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<?>> done = new ArrayList<>();
        List<String> all = ledger.nodes().stream().map(n -> n.name()).toList();
        for (int t = 0; t < threads; t++) {
            int id = t;
            done.add(pool.submit(() -> {
                SplittableRandom rnd = new SplittableRandom(40 + id);
                go.await();
                for (int k = 0; k < 150; k++) {
                    String tenant = "c" + id + "-" + k;
                    if (rnd.nextInt(3) == 0) {
                        engine.placeOn(claim(rnd, tenant), all.get(rnd.nextInt(all.size())));
                    } else if (rnd.nextInt(3) == 0) {
                        engine.release("c" + id + "-" + rnd.nextInt(k + 1));
                    } else {
                        memo.check(claim(rnd, tenant), all);
                    }
                }
                return null;
            }));
        }
        go.countDown();
        for (Future<?> f : done) {
            f.get(60, TimeUnit.SECONDS);
        }
        pool.shutdown();
        List<String> mismatches = new ArrayList<>();
        NodeChecks truth = NodeChecks.of(engine);
        SplittableRandom shapes = new SplittableRandom(99);
        for (int s = 0; s < 40; s++) {
            Claim c = claim(shapes, "final-" + s);
            NodeChecks.Checked want = truth.check(c, all);
            NodeChecks.Checked got = memo.check(c, all);
            for (int j = 0; j < all.size(); j++) {
                if (Double.compare(want.total(j), got.total(j)) != 0 || !java.util.Objects.equals(want.reason(j), got.reason(j))) {
                    mismatches.add(c + " on " + all.get(j));
                }
            }
        }
        return mismatches;
    }
}
