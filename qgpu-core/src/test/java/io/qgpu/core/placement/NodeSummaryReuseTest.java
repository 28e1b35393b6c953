package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.PlacementResult;
import io.qgpu.core.ledger.Ledger;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * Seeded property: a node summary made from the node's previous summary ({@link NodeSummary#of}, which
 * reads again only the GPUs whose state objects changed) equals, field for field and bit for bit (the
 * refusal tiers and levels included), the summary made from the node state alone, after every
 * placement and release of a random claim stream on random clusters (labels, selectors, reservations,
 * unhealthy GPUs and exclusive claims from {@link Gen}); also when the previous summary was made
 * under other granularity rules. A summary that takes a GPU's values from the previous summary
 * whenever the GPU is the same device (its UUID), changed or not, is in this file and the property
 * rejects it on every seed.
 */
class NodeSummaryReuseTest {

    private static final long SEED = Long.getLong("qgpu.seed", 5_000_040L);
    private static final GranularityRules RULES = GranularityRules.ofDefaults();
    /** Other rules: fewer tenants per GPU, so the tenant slots (and loads) differ from RULES'. */
    private static final GranularityRules FEWER_TENANTS = RULES.toBuilder().name("fewer").maxTenantsPerGpu(3).build();
    private static final int SEEDS = 60;
    private static final int STEPS = 200;

    /** The deliberately wrong reuse: the same GPU (by UUID) is taken as unchanged. */
    private static final NodeSummary.GpuReuse SAME_DEVICE = (before, now) -> before.uuid().equals(now.uuid());

    @Test
    void aSummaryMadeFromThePreviousOneEqualsOneMadeFromTheStateAlone() {
        int compared = 0;
        for (int i = 0; i < SEEDS; i++) {
            long seed = SEED + i;
            Mismatch m = firstMismatch(seed, NodeSummary.SAME_STATE);
            assertEquals(null, m == null ? null : m.toString(), "seed " + seed);
            compared += summariesCompared;
        }
        assertTrue(compared > SEEDS * 50, "too few summaries compared: " + compared);
    }

    @Test
    void thePropertyRejectsASummaryThatReusesAChangedGpu() {
        int caught = 0;
        for (int i = 0; i < SEEDS; i++) {
            if (firstMismatch(SEED + i, SAME_DEVICE) != null) {
                caught++;
            }
        }
        assertEquals(SEEDS, caught, "the reuse by device must be caught on every seed");
    }

    private record Mismatch(int step, String node, String field) {
    }

    private static int summariesCompared;

    /**
     * Runs the seeded stream; after each step, every node whose state changed gets a summary made from
     * its previous one with {@code reuse} (under {@link #FEWER_TENANTS} every fifth step, from a previous
     * summary made under {@link #RULES}), compared with the summary made from the state alone under the
     * same rules. The first difference, or null.
     */
    private static @Nullable Mismatch firstMismatch(long seed, NodeSummary.GpuReuse reuse) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<Node> nodes = Gen.cluster(rnd, 12);
        Ledger ledger = Ledger.create(RULES, nodes);
        PlacementEngine engine = PlacementEngine.create(ledger);
        Map<String, NodeSummary> chain = new HashMap<>();
        for (Node n : nodes) {
            chain.put(n.name(), NodeSummary.of(ledger.node(n.name()).orElseThrow(), null, RULES));
        }
        List<String> live = new ArrayList<>();
        summariesCompared = 0;
        for (int step = 0; step < STEPS; step++) {
            if (!live.isEmpty() && rnd.nextInt(4) == 0) {
                engine.release(live.remove(rnd.nextInt(live.size())));
            } else {
                Claim claim = Gen.claim(rnd, "t" + step, nodes);
                if (engine.place(claim) instanceof PlacementResult.Placed) {
                    live.add(claim.tenantId());
                }
            }
            boolean other = step % 5 == 4;
            GranularityRules rules = other ? FEWER_TENANTS : RULES;
            for (Node n : nodes) {
                NodeState now = ledger.node(n.name()).orElseThrow();
                NodeSummary previous = chain.get(n.name());
                if (previous.state == now && !other) {
                    continue;
                }
                NodeSummary made = NodeSummary.of(now, previous, rules, reuse);
                String field = difference(made, NodeSummary.of(now, null, rules));
                summariesCompared++;
                if (field != null) {
                    return new Mismatch(step, n.name(), field);
                }
                // the chain goes on under RULES: a summary under other rules is compared, then dropped
                chain.put(n.name(), other ? NodeSummary.of(now, previous, RULES, reuse) : made);
            }
        }
        return null;
    }

    /** The first field (by name, nested with dots) where the two differ, or null when every field is equal. */
    private static @Nullable String difference(Object a, Object b) {
        for (Field f : a.getClass().getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) || f.getName().equals("serial")) {
                continue;   // a summary's serial tells it from every other summary, by design
            }
            f.setAccessible(true);
            Object x;
            Object y;
            try {
                x = f.get(a);
                y = f.get(b);
            } catch (IllegalAccessException e) {
                throw new AssertionError(e);
            }
            String d = differs(x, y);
            if (d != null) {
                return f.getName() + (d.isEmpty() ? "" : "." + d);
            }
        }
        return null;
    }

    /** Null when equal; "" when these values differ; a nested field's name when a part of them does. */
    @SuppressWarnings("ReferenceEquality") // the node state and the rules are the same objects by design
    private static @Nullable String differs(@Nullable Object x, @Nullable Object y) {
        if (x instanceof RefusalTiers rx && y instanceof RefusalTiers ry) {
            return difference(rx, ry);
        }
        if (x instanceof NodeTopo tx && y instanceof NodeTopo ty) {
            // tables of the same topology: shared per equal topology while few are kept, else made anew
            return tx.topology.equals(ty.topology) ? null : "topology";
        }
        boolean same = x instanceof long[] lx ? Arrays.equals(lx, (long[]) y)
                : x instanceof int[] ix ? Arrays.equals(ix, (int[]) y)
                : x instanceof double[] dx ? Arrays.equals(dx, (double[]) y)   // bit for bit (doubleToLongBits)
                : x instanceof Object[] ox ? Arrays.equals(ox, (Object[]) y)
                : x instanceof Double dx ? Double.doubleToRawLongBits(dx) == Double.doubleToRawLongBits((Double) y)
                : x instanceof Number || x instanceof Boolean || x instanceof String ? x.equals(y)
                : x == y;
        return same ? null : "";
    }
}
