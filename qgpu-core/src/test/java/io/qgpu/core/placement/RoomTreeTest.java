package io.qgpu.core.placement;

import io.qgpu.core.internal.LedgerFeeds;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.placement.GpuFilter;
import io.qgpu.api.placement.GpuSetScorer;
import io.qgpu.api.placement.NodeFilter;
import io.qgpu.api.placement.NodeScorer;
import io.qgpu.core.ledger.Ledger;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;

/**
 * Seeded properties of the index of nodes by free room ({@link RoomTree}): a visit hands out exactly
 * the nodes whose key lets the claim through, none hidden, none extra, in the order of the pass's
 * shortlist rank (ties in cluster order); and the pass that takes its shortlist from the tree chooses
 * the node and GPUs that the scan of every node chooses. Two deliberately broken trees in this file
 * (one that hides nodes, one that ranks subtrees by the wrong load) are rejected by the first
 * property: {@link #propertyRejectsATreeThatHidesNodes}, {@link #propertyRejectsATreeThatMisranks}.
 * Run case by case with the default seed, the hiding tree breaks the property in 384 of the 400
 * cases, the misranking one in 352, the real tree in none.
 */
class RoomTreeTest {

    private static final long SEED = Long.getLong("qgpu.seed", 4_000_013L);
    private static final double[] WEIGHTS = {1.0, 0.0, 0.37, 5.0};

    @Test
    void aVisitHandsOutEveryNodeWhoseKeyFitsInRankOrder() {
        List<String> v = visits(RoomTree::new, SEED, 400);
        assertTrue(v.isEmpty(), () -> v.size() + " violation(s), first: " + v.get(0));
    }

    @Test
    void propertyRejectsATreeThatHidesNodes() {
        List<String> v = visits(HidingTree::new, SEED, 400);
        assertFalse(v.isEmpty(), "the tree that keeps the smaller memory field must be caught");
        assertTrue(v.get(0).contains("visit handed out"), v.get(0));
    }

    @Test
    void propertyRejectsATreeThatMisranks() {
        List<String> v = visits(MisrankingTree::new, SEED, 400);
        assertFalse(v.isEmpty(), "the tree that ranks a subtree by its left half's load must be caught");
        assertTrue(v.get(0).contains("visit handed out"), v.get(0));
    }

    /** Random keys (saturated fields and tied loads included), random claims, every weight and node policy. */
    static List<String> visits(IntFunction<RoomTree> factory, long seed, int cases) {
        List<String> violations = new ArrayList<>();
        List<Node> someNodes = Gen.cluster(new SplittableRandom(seed), 3);
        for (int k = 0; k < cases && violations.isEmpty(); k++) {
            SplittableRandom rnd = new SplittableRandom(seed + k);
            int n = rnd.nextInt(70);
            long[] keys = new long[n];
            RoomTree tree = factory.apply(n);
            for (int i = 0; i < n; i++) {
                keys[i] = randomKey(rnd);
                tree.update(i, keys[i]);
            }
            // a few updates after the first fill, as commits and releases make them
            for (int u = 0; n > 0 && u < rnd.nextInt(10); u++) {
                int i = rnd.nextInt(n);
                keys[i] = randomKey(rnd);
                tree.update(i, keys[i]);
            }
            for (int q = 0; q < 6; q++) {
                Claim claim = Gen.claim(rnd, "t" + q, someNodes);
                ClaimShape c = new ClaimShape(claim, PlacementConfig.defaults(), GranularityRules.ofDefaults());
                double w = WEIGHTS[rnd.nextInt(WEIGHTS.length)];
                List<Integer> expected = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    if (NodeIndex.cause(keys[i], c) == null) {
                        expected.add(i);
                    }
                }
                expected.sort(Comparator.comparingDouble((Integer i) -> -rank(keys[i], c, w)).thenComparingInt(i -> i));
                List<Integer> got = new ArrayList<>();
                boolean done = tree.visit(c, w, Integer.MAX_VALUE, (i, key, rank) -> {
                    got.add(i);
                    return true;
                });
                // a budget that runs out is said so, never a shortened answer taken for the whole
                List<Integer> part = new ArrayList<>();
                int budget = rnd.nextInt(1, 2 * n + 2);
                boolean whole = tree.visit(c, w, budget, (i, key, rank) -> {
                    part.add(i);
                    return true;
                });
                if (!done || whole && !part.equals(got) || !whole && !got.subList(0, part.size()).equals(part)) {
                    violations.add("seed " + (seed + k) + " budget " + budget + ": visit said " + whole + " after " + part
                            + ", the unbounded one gave " + got);
                }
                if (!expected.equals(got)) {
                    violations.add("seed " + (seed + k) + " claim " + claim + " weight " + w + ": visit handed out " + got
                            + ", the nodes whose key fits in rank order are " + expected);
                }
            }
        }
        return violations;
    }

    private static double rank(long key, ClaimShape c, double w) {
        double load = NodeIndex.load(key);
        return w * (c.nodeBinpack ? load : 1.0 - load);
    }

    private static long randomKey(SplittableRandom rnd) {
        double load = rnd.nextInt(4) == 0 ? rnd.nextInt(4) / 3.0 : rnd.nextDouble();   // ties on purpose
        int open = rnd.nextInt(18);
        int slots = rnd.nextInt(open + 1);
        int empty = rnd.nextInt(6) == 0 ? 250 + rnd.nextInt(10) : rnd.nextInt(open + 1);
        int compute = rnd.nextInt(103) - 1;
        long mem = rnd.nextInt(8) == 0 ? Long.MAX_VALUE : rnd.nextLong(16L << 30);
        return NodeIndex.key(load, open, slots, empty, compute, mem);
    }

    /**
     * When the tree says every key refuses a claim ({@link RoomTree#refusesEvery}), every key does,
     * with that very code; random keys and claims as above. A tree that answers with whatever code
     * its largest fields refuse with ({@link AnyCauseTree}) is rejected.
     */
    @Test
    void aRefusalOfEveryKeyIsEveryKeysCode() {
        int[] said = new int[1];
        List<String> v = refusals(RoomTree::new, SEED, 400, said);
        assertTrue(v.isEmpty(), () -> v.size() + " violation(s), first: " + v.get(0));
        assertTrue(said[0] > 100, "too few claims every key refuses: " + said[0]);
    }

    @Test
    void propertyRejectsATreeThatTakesAnyCauseForEveryKeys() {
        List<String> v = refusals(AnyCauseTree::new, SEED, 400, new int[1]);
        assertFalse(v.isEmpty(), "the tree that gives the largest fields' code whatever it is must be caught");
    }

    static List<String> refusals(IntFunction<RoomTree> factory, long seed, int cases, int[] said) {
        List<String> violations = new ArrayList<>();
        List<Node> someNodes = Gen.cluster(new SplittableRandom(seed), 3);
        for (int k = 0; k < cases && violations.isEmpty(); k++) {
            SplittableRandom rnd = new SplittableRandom(seed + k);
            int n = 1 + rnd.nextInt(40);
            long[] keys = new long[n];
            RoomTree tree = factory.apply(n);
            int scarce = rnd.nextInt(4);   // small fields, so that the largest keys refuse some claims
            for (int i = 0; i < n; i++) {
                keys[i] = scarce == 0 ? randomKey(rnd) : scarceKey(rnd);
                tree.update(i, keys[i]);
            }
            for (int q = 0; q < 12; q++) {
                Claim claim = Gen.claim(rnd, "t" + q, someNodes);
                ClaimShape c = new ClaimShape(claim, PlacementConfig.defaults(), GranularityRules.ofDefaults());
                ReasonCode every = tree.refusesEvery(c);
                if (every == null) {
                    continue;
                }
                said[0]++;
                for (int i = 0; i < n; i++) {
                    if (NodeIndex.cause(keys[i], c) != every) {
                        violations.add("seed " + (seed + k) + " claim " + claim + ": the tree says every key refuses it with "
                                + every + ", node " + i + "'s key says " + NodeIndex.cause(keys[i], c));
                        break;
                    }
                }
            }
        }
        return violations;
    }

    /** A key of a nearly full node: few open GPUs and slots, rarely an empty one, little memory. */
    private static long scarceKey(SplittableRandom rnd) {
        int open = rnd.nextInt(4);
        int slots = rnd.nextInt(open + 1);
        int empty = rnd.nextInt(5) == 0 ? rnd.nextInt(slots + 1) : 0;
        return NodeIndex.key(rnd.nextDouble(), open, slots, empty, rnd.nextInt(30) - 1, rnd.nextLong(4L << 30));
    }

    /**
     * On a cluster where a third of the nodes are full (every GPU held, the highest load) and the others
     * have room, a visit for a small claim finds its shortlist within the budget the pass gives it
     * ({@link RoomTree#budget}): a full node ranks nowhere, so no subtree is walked for its load. (Before
     * {@link RoomTree#noRoom}, a subtree with a full node ranked as if it held a node with room at the
     * highest load; nearly every subtree has one, so the visit gave up and the pass scanned every key.
     * Run against that tree, main at 6aa3f77, this test fails: "BINPACK: gave up after []".)
     */
    @Test
    void fullNodesDoNotExhaustTheVisitsBudget() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        int n = 4000;
        RoomTree tree = new RoomTree(n);
        for (int i = 0; i < n; i++) {
            tree.update(i, i % 3 == 0 ? NodeIndex.key(1.0, 0, 0, 0, -1, -1)
                    : NodeIndex.key(rnd.nextDouble() * 0.9, 8, 8, rnd.nextInt(3), 100, 40L << 30));
        }
        Claim claim = Claim.builder("small").memoryGiB(4).compute(20, 60).priority(io.qgpu.api.PriorityClass.OFFLINE).build();
        for (PlacementPolicy policy : PlacementPolicy.values()) {
            PlacementConfig config = PlacementConfig.defaults().toBuilder().nodePolicy(policy).build();
            ClaimShape c = new ClaimShape(claim, config, GranularityRules.ofDefaults());
            List<Integer> got = new ArrayList<>();
            boolean done = tree.visit(c, 1.0, tree.budget(8), (i, key, rank) -> {
                got.add(i);
                return got.size() < 8;
            });
            assertTrue(done && got.size() == 8, policy + ": gave up after " + got);
        }
    }

    @Test
    void thePassFromTheTreeChoosesWhatTheScanOfEveryNodeChooses() {
        int compared = 0;
        for (int k = 0; k < 60; k++) {
            long seed = SEED + 1000 + k;
            SplittableRandom rnd = new SplittableRandom(seed);
            List<Node> nodes = Gen.cluster(rnd, 40);
            GranularityRules rules = GranularityRules.ofDefaults();
            Ledger ledger = Ledger.create(rules, nodes);
            // a small shortlist, so that the order of the candidates decides what is chosen
            PlacementConfig config = PlacementConfig.defaults().toBuilder().shortlist(1 + rnd.nextInt(3)).build();
            PlacementEngine engine = PlacementEngine.builder(ledger).config(config).build();
            NodePass pass = new NodePass(ledger, config, new NodeFilter[0], new GpuFilter[0], new NodeScorer[0], new double[0],
                    new GpuSetScorer[0], new double[0]);
            for (int step = 0; step < 40; step++) {
                Claim claim = Gen.claim(rnd, "t" + step, nodes);
                NodeIndex idx = new NodeIndex(LedgerFeeds.of(ledger));
                ClaimShape c = new ClaimShape(claim, config, rules);
                NodePass.Eval fast = pass.evaluate(c, idx, null, false);
                NodePass.Eval scan = pass.evaluate(c, idx, NodePass.nodesOf(idx.feed), false);
                String where = "seed " + seed + " step " + step + " " + claim;
                assertEquals(scan.chosen == null ? null : scan.chosen.state.name(),
                        fast.chosen == null ? null : fast.chosen.state.name(), where);
                if (scan.chosen != null) {
                    assertEquals(java.util.Arrays.toString(scan.positions), java.util.Arrays.toString(fast.positions), where);
                }
                // the tree's own answer, where it gives one (not given up, a node found, no affinity group)
                NodePass.Eval tree = c.affinity == null ? pass.byRoom(c, idx, Math.min(config.shortlist(), nodes.size()), false) : null;
                if (tree != null) {
                    assertEquals(scan.chosen == null ? null : scan.chosen.state.name(), tree.chosen.state.name(), where);
                    assertEquals(java.util.Arrays.toString(scan.positions), java.util.Arrays.toString(tree.positions), where);
                    compared++;
                }
                engine.place(claim);
            }
        }
        assertTrue(compared > 1000, "too few answers of the tree compared: " + compared);   // 1,437 with these seeds
    }

    /** Broken on purpose: keeps the smaller of the two memory fields, so a subtree can hide its roomiest node. */
    static final class HidingTree extends RoomTree {
        HidingTree(int size) {
            super(size);
        }

        @Override
        long combine(long a, long b) {
            long mem = Math.min(a >>> 40, b >>> 40) << 40;
            return (super.combine(a, b) & ((1L << 40) - 1)) | mem;
        }
    }

    /** Broken on purpose: says every key refuses a claim whenever the largest fields do, with their code. */
    static final class AnyCauseTree extends RoomTree {
        AnyCauseTree(int size) {
            super(size);
        }

        @Override
        @org.jspecify.annotations.Nullable ReasonCode refusesEvery(ClaimShape c) {
            return c.hostOnly ? null : NodeIndex.cause(rootKey(), c);
        }
    }

    /** Broken on purpose: a subtree's load is its left half's, so its rank bound can be too low. */
    static final class MisrankingTree extends RoomTree {
        MisrankingTree(int size) {
            super(size);
        }

        @Override
        long combine(long a, long b) {
            return (super.combine(a, b) & ~(long) LOAD_MASK) | (a & LOAD_MASK);
        }
    }
}
