package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.NumaPolicy;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.core.ledger.Ledger;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * Seeded property: an engine with the memo of best sets ({@link SetMemo}) answers every claim of a
 * random claim/release stream exactly as the same engine without a memo (the node, the GPUs, or the
 * refusal's words), on random clusters, under every engine-level policy pair (per-claim policy
 * overrides, {@code numa: required}, selectors and labels come from the stream). A memo keyed by the
 * node's name instead of its summary (so without the node's version: it answers for a node state
 * that has since changed) is in this file and the property rejects it.
 */
class SetMemoTest {

    private static final long SEED = Long.getLong("qgpu.seed", 4_000_005L);
    private static final GranularityRules RULES = GranularityRules.ofDefaults();
    private static final PlacementPolicy[][] POLICIES = {
        {PlacementPolicy.BINPACK, PlacementPolicy.SPREAD},
        {PlacementPolicy.BINPACK, PlacementPolicy.BINPACK},
        {PlacementPolicy.SPREAD, PlacementPolicy.SPREAD},
        {PlacementPolicy.SPREAD, PlacementPolicy.BINPACK},
        {PlacementPolicy.FRAGMENTATION, PlacementPolicy.SPREAD},
    };
    private static final int SEEDS = 40;
    private static final int STEPS = 200;

    /** The deliberately broken memo: keyed by the node's name, so a changed node gets its old answer. */
    static final class KeyedByName extends SetMemo {
        @Override
        long nodeKey(NodeSummary s) {
            return s.state.name().hashCode();   // the names of a test cluster (n0, n1, ...) hash apart
        }
    }

    @Test
    void theMemoAnswersEveryClaimAsNoMemoDoes() {
        for (int i = 0; i < SEEDS; i++) {
            long seed = SEED + i;
            for (PlacementPolicy[] p : POLICIES) {
                List<String> without = answers(() -> null, seed, p[0], p[1]);
                List<String> with = answers(SetMemo::new, seed, p[0], p[1]);
                String where = "seed " + seed + ", policies " + p[0] + "/" + p[1];
                assertEquals(firstDifference(without, with), -1, () -> where + ": first difference at answer "
                        + firstDifference(without, with) + ": " + at(without, firstDifference(without, with)) + " without the memo, "
                        + at(with, firstDifference(without, with)) + " with it");
            }
        }
    }

    @Test
    void thePropertyRejectsAMemoKeyedWithoutTheNodesVersion() {
        for (PlacementPolicy[] p : POLICIES) {
            int caught = 0;
            for (int i = 0; i < SEEDS; i++) {
                long seed = SEED + i;
                if (firstDifference(answers(() -> null, seed, p[0], p[1]), answers(KeyedByName::new, seed, p[0], p[1])) >= 0) {
                    caught++;
                }
            }
            assertTrue(caught > 0, "policies " + p[0] + "/" + p[1] + ": the memo keyed by node name must give some answer no memo gives");
        }
    }

    /**
     * Every answer, in order, of an engine (memo from {@code memo}, null for none) over the seeded
     * cluster and claim/release stream: placements as node and GPU UUIDs, refusals by their summary,
     * releases by tenant.
     */
    static List<String> answers(Supplier<@Nullable SetMemo> memo, long seed, PlacementPolicy node, PlacementPolicy gpu) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<Node> nodes = Gen.cluster(rnd, 12);
        PlacementEngine.Builder b = PlacementEngine.builder(Ledger.create(RULES, nodes)).policies(node, gpu);
        b.setMemo = memo;
        PlacementEngine engine = b.build();
        List<String> live = new ArrayList<>();
        List<String> out = new ArrayList<>();
        for (int step = 0; step < STEPS; step++) {
            if (!live.isEmpty() && rnd.nextInt(4) == 0) {
                String id = live.remove(rnd.nextInt(live.size()));
                engine.release(id);
                out.add("release " + id);
                continue;
            }
            Claim claim = Gen.claim(rnd, "t" + step, nodes);
            if (claim.gpuCount() > 1 && rnd.nextInt(6) == 0) {
                claim = claim.toBuilder().numa(NumaPolicy.REQUIRED).build();
            }
            PlacementResult r = engine.place(claim);
            if (r instanceof PlacementResult.Placed placed) {
                live.add(claim.tenantId());
                out.add(placed.placement().nodeName() + " " + placed.placement().gpuUuids());
            } else if (r instanceof PlacementResult.Unschedulable u) {
                out.add("refused: " + u.summary());
            } else {
                out.add(r.toString());
            }
        }
        return out;
    }

    private static int firstDifference(List<String> a, List<String> b) {
        for (int i = 0; i < Math.min(a.size(), b.size()); i++) {
            if (!a.get(i).equals(b.get(i))) {
                return i;
            }
        }
        return a.size() == b.size() ? -1 : Math.min(a.size(), b.size());
    }

    private static String at(List<String> a, int i) {
        return i >= 0 && i < a.size() ? a.get(i) : "(none)";
    }
}
