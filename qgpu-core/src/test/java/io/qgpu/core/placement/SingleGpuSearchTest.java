package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Health;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Reason;
import io.qgpu.api.Selectors;
import io.qgpu.api.Slice;
import io.qgpu.api.TopologyLevel;
import io.qgpu.api.placement.GpuFilter;
import io.qgpu.api.placement.GpuSetScorer;
import io.qgpu.api.placement.NodeFilter;
import io.qgpu.api.placement.NodeScorer;
import io.qgpu.core.ledger.Ledger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * Seeded property: for a claim of one GPU, the set search's single-GPU path ({@link SetSearch#bestOne},
 * reached through {@link NodePass#bestSet} as the engine's check and pass reach it) chooses the same GPU
 * as the general search ({@link SetSearch#enumerated}) with the same score to the last bit
 * ({@code Double.doubleToRawLongBits}), leaves the same {@code maxLeft} behind (every admissible GPU's
 * {@link SetSearch#scoreOf}, explain's view, is the same bits), and the summary's table of single-GPU
 * {@code left} and connectivity is bit for bit what {@link NodeSummary#leftAfter} and
 * {@link NodeSummary#connectivityAfter} give; the engine's check of the node ({@link NodePass#fit})
 * answers with the general verdict's reason or the general search's GPU and total. Over random nodes of mixed topologies (8 x H100 on
 * NVSwitch, DGX-1V hybrid cube mesh, PCIe-only with NUMA nodes, 16 GPUs on NVSwitch and PCIe, the
 * random nodes of {@link Gen}), random loads (some nodes with every GPU at the same load, where only the
 * tie-breaks decide), every granularity preset, engine configurations (the defaults, no look-ahead, a
 * set limit below the node's size, other weights) and every node and GPU policy, fragmentation with its
 * scorer included. Two deliberately broken single-GPU paths are in this file (the first admissible GPU;
 * the ranking without the connectivity tie-break), and the property rejects both.
 */
class SingleGpuSearchTest {

    private static final long SEED = Long.getLong("qgpu.seed", 7_100_001L);
    private static final int SEEDS = 40;
    private static final int CLAIMS_PER_NODE = 6;

    private static final GranularityRules[] RULES = {
        GranularityRules.ofDefaults(), GranularityRules.hami(), GranularityRules.gpuManager(),
    };
    private static final PlacementConfig[] CONFIGS = {
        PlacementConfig.defaults(),
        PlacementConfig.builder().leftoverWeight(0).build(),
        PlacementConfig.builder().exhaustiveSetLimit(3).build(),
        PlacementConfig.builder().loadWeight(0).numaWeight(0).pcieWeight(0.3).build(),
        PlacementConfig.builder().nodePolicy(PlacementPolicy.FRAGMENTATION).gpuPolicy(PlacementPolicy.FRAGMENTATION).build(),
    };
    private static final PlacementPolicy[] POLICIES = PlacementPolicy.values();

    /** A single-GPU best set: what the engine uses, or a variant under test. */
    interface SingleGpu {
        SetSearch.@Nullable Choice choose(NodePass pass, NodeSummary s, ClaimShape c, SetSearch search);
    }

    /** The engine's own path. */
    static final SingleGpu ENGINE = NodePass::bestSet;

    /** Broken on purpose: the first admissible GPU, scored as the only set. */
    static final SingleGpu FIRST_ADMISSIBLE = (pass, s, c, search) -> {
        long mask = pass.verdicts.candidateMask(s, c);
        return mask == 0 ? null : search.single(new int[] {Long.numberOfTrailingZeros(mask)});
    };

    /**
     * Broken on purpose: every GPU ranked by the score it carries into the node's total plus the
     * look-ahead ({@link SetSearch#scoreOf}), so without the tie-breaks, connectivity among them.
     */
    static final SingleGpu WITHOUT_CONNECTIVITY = (pass, s, c, search) -> {
        long mask = pass.verdicts.candidateMask(s, c);
        if (search.bestOne(mask) == null) {   // fills maxLeft as the search does
            return null;
        }
        int best = -1;
        double bestScore = Double.NEGATIVE_INFINITY;
        for (long b = mask; b != 0; b &= b - 1) {
            int g = Long.numberOfTrailingZeros(b);
            double v = search.scoreOf(new int[] {g});
            if (v > bestScore) {
                bestScore = v;
                best = g;
            }
        }
        return new SetSearch.Choice(new int[] {best}, bestScore);
    };

    @Test
    void theSingleGpuPathChoosesAsTheGeneralSearchToTheLastBit() {
        int[] compared = new int[4];
        for (int i = 0; i < SEEDS; i++) {
            long seed = SEED + i;
            String failure = firstDisagreement(seed, ENGINE, compared);
            assertNull(failure, () -> "seed " + seed + " (-Dqgpu.seed=" + seed + "): " + failure);
        }
        // 40 seeds x 3 presets x 5 configurations x 10 nodes x 6 claims; at least a third a choice among 2+ GPUs
        assertEquals(SEEDS * 900, compared[0], "choices compared");
        assertTrue(compared[1] > compared[0] / 3, "too few choices among two or more GPUs: " + compared[1]);
        assertTrue(compared[2] > 1_000, "too few choices on nodes of more than " + NodeTopo.MEMO_GPUS + " GPUs: " + compared[2]);
        assertTrue(compared[3] > 1_000, "too few choices among more GPUs than the set limit: " + compared[3]);
    }

    @Test
    void thePropertyRejectsTheFirstAdmissibleGpu() {
        String d = anyDisagreement(FIRST_ADMISSIBLE);
        assertNotNull(d, "the first admissible GPU must disagree somewhere");
    }

    @Test
    void thePropertyRejectsARankingWithoutTheConnectivityTieBreak() {
        String d = anyDisagreement(WITHOUT_CONNECTIVITY);
        assertNotNull(d, "a ranking without connectivity must disagree somewhere");
    }

    private static @Nullable String anyDisagreement(SingleGpu variant) {
        for (int i = 0; i < SEEDS; i++) {
            String failure = firstDisagreement(SEED + i, variant, new int[4]);
            if (failure != null) {
                return failure;
            }
        }
        return null;
    }

    /**
     * The first (node, claim, configuration) of the seeded run where {@code variant} differs from the
     * general search, in words, or null; {@code compared[0]} counts the choices compared, {@code compared[1]}
     * those among two or more admissible GPUs, {@code compared[2]} those on nodes larger than
     * {@link NodeTopo#left}'s memo, {@code compared[3]} those among more GPUs than the set limit (the
     * general search is then the greedy one).
     */
    private static @Nullable String firstDisagreement(long seed, SingleGpu variant, int[] compared) {
        SplittableRandom rnd = new SplittableRandom(seed);
        for (GranularityRules rules : RULES) {
            List<Node> nodes = new ArrayList<>();
            for (int n = 0; n < 10; n++) {
                nodes.add(node(rnd, "n" + n));
            }
            Ledger ledger = Ledger.create(rules, nodes);
            fill(ledger, nodes, rnd, new int[1]);
            List<Claim> claims = new ArrayList<>();
            for (int j = 0; j < CLAIMS_PER_NODE; j++) {
                claims.add(claim(rnd, "c" + j, nodes));
            }
            for (PlacementConfig config : CONFIGS) {
                NodePass pass = pass(ledger, config, claims);
                for (Node node : nodes) {
                    NodeSummary s = NodeSummary.of(ledger.node(node.name()).orElseThrow(), null, rules);
                    String table = tableDifference(s);
                    if (table != null) {
                        return node.name() + ": " + table;
                    }
                    for (Claim claim : claims) {
                        ClaimShape c = new ClaimShape(claim, config, rules);
                        String d = difference(pass, s, c, variant);
                        compared[0]++;
                        int admissible = Long.bitCount(pass.verdicts.candidateMask(s, c));
                        compared[1] += admissible >= 2 ? 1 : 0;
                        compared[2] += s.size > NodeTopo.MEMO_GPUS && admissible >= 2 ? 1 : 0;
                        compared[3] += admissible > config.exhaustiveSetLimit() ? 1 : 0;
                        if (d != null) {
                            return rules + ", " + config + ", node " + node.name() + " " + node.topology()
                                    + ", claim " + claim + ": " + d;
                        }
                    }
                }
            }
        }
        return null;
    }

    /** Null when {@code variant} agrees with the general search on this node and claim, else how not. */
    private static @Nullable String difference(NodePass pass, NodeSummary s, ClaimShape c, SingleGpu variant) {
        SetSearch fast = pass.search(s, c);
        SetSearch.Choice a = variant.choose(pass, s, c, fast);
        SetSearch general = pass.search(s, c);
        int[] cand = new int[s.size];
        int m = pass.verdicts.candidates(s, c, cand);
        SetSearch.Choice b = general.enumerated(cand, m, new int[0], 0);
        if (a == null || b == null) {
            if (a != b) {
                return "one path found no GPU: " + describe(a) + " against " + describe(b);
            }
            return variant == ENGINE ? fitDifference(pass, s, c, null) : null;
        }
        if (!Arrays.equals(a.positions(), b.positions())
                || Double.doubleToRawLongBits(a.score()) != Double.doubleToRawLongBits(b.score())) {
            return describe(a) + " against the general " + describe(b);
        }
        if (variant == ENGINE) {
            String f = fitDifference(pass, s, c, b);
            if (f != null) {
                return f;
            }
        }
        for (int i = 0; i < m; i++) {
            int[] one = {cand[i]};
            if (Double.doubleToRawLongBits(fast.scoreOf(one)) != Double.doubleToRawLongBits(general.scoreOf(one))) {
                return "GPU " + cand[i] + " scores " + fast.scoreOf(one) + " after the path, "
                        + general.scoreOf(one) + " after the general search";
            }
        }
        return null;
    }

    /**
     * Null when the engine's check of the node ({@link NodePass#fit}, which visits the GPUs once for the
     * verdict and the set) answers as the verdict of {@link NodeVerdicts#reason} and the general search's
     * {@code general} choice: the same reason, or the same GPUs and the same total to the last bit.
     */
    private static @Nullable String fitDifference(NodePass pass, NodeSummary s, ClaimShape c,
                                                  SetSearch.@Nullable Choice general) {
        NodeFit fit = pass.fit(c, s, null);
        Reason why = pass.verdicts.reason(s, c);
        if (why != null) {
            return fit instanceof NodeFit.Refused r && r.reason().equals(why) ? null
                    : "check answers " + fit + ", the verdict is " + why;
        }
        if (general == null) {
            return "the verdict lets the node through, the general search finds no GPU";
        }
        double total = pass.nodeScore(s, c) + general.score();
        return fit instanceof NodeFit.Fits f && Arrays.equals(f.gpus().positions(), general.positions())
                && Double.doubleToRawLongBits(f.total()) == Double.doubleToRawLongBits(total) ? null
                : "check answers " + fit + ", the general search " + describe(general) + " for a total of " + total;
    }

    /** Null when the summary's single-GPU table is what leftAfter and connectivityAfter give, bit for bit. */
    private static @Nullable String tableDifference(NodeSummary s) {
        double[] t = s.singleGpuLefts();
        for (int g = 0; g < s.size; g++) {
            int[] one = {g};
            if (Double.doubleToRawLongBits(t[2 * g]) != Double.doubleToRawLongBits(s.leftAfter(one, 1))
                    || Double.doubleToRawLongBits(t[2 * g + 1]) != Double.doubleToRawLongBits(s.connectivityAfter(one, 1))) {
                return "the single-GPU table differs at GPU " + g;
            }
        }
        return null;
    }

    private static String describe(SetSearch.@Nullable Choice c) {
        return c == null ? "none" : Arrays.toString(c.positions()) + " scoring " + c.score()
                + " (bits " + Long.toHexString(Double.doubleToRawLongBits(c.score())) + ")";
    }

    /** A node pass as the engine builds it: the fragmentation term last, its sample holding the claims' shapes. */
    private static NodePass pass(Ledger ledger, PlacementConfig config, List<Claim> claims) {
        FragmentationScorer fragmentation = FragmentationScorer.sampling(RequestSample.DEFAULT_CAPACITY);
        fragmentation.bind(config);
        for (Claim c : claims) {
            fragmentation.record(c);
        }
        return new NodePass(ledger, config, new NodeFilter[0], new GpuFilter[0], new NodeScorer[0], new double[0],
                new GpuSetScorer[] {fragmentation},
                new double[] {config.fragmentationWeight() * FragmentationScorer.WEIGHT_SCALE}, null);
    }

    // ------------------------------------------------------------------ random nodes, loads, claims

    private static Node node(SplittableRandom rnd, String name) {
        return switch (rnd.nextInt(5)) {
            case 0 -> nvswitch(name, 8);
            case 1 -> Nodes.dgx1(name);   // DGX-1V: the hybrid cube mesh, two NUMA nodes
            case 2 -> pcieOnly(rnd, name);
            case 3 -> sixteen(rnd, name);
            default -> Gen.node(rnd, name);
        };
    }

    private static GpuDevice.Builder gpu(String name, int i, int numa) {
        return GpuDevice.builder(name + "-g" + i).index(i).model("NVIDIA H100 80GB HBM3").memoryGiB(80).numaNode(numa);
    }

    private static Node nvswitch(String name, int gpus) {
        Node.Builder b = Node.builder(name).defaultLink(new GpuLink.NvLink(18));
        for (int i = 0; i < gpus; i++) {
            b.gpu(gpu(name, i, i / 4).build());
        }
        return b.build();
    }


    /** PCIe only: 2..8 GPUs in switch groups of random sizes, two NUMA nodes (or unknown), one GPU unhealthy at times. */
    private static Node pcieOnly(SplittableRandom rnd, String name) {
        int gpus = 2 + rnd.nextInt(7);
        int half = 1 + rnd.nextInt(gpus);
        boolean numa = rnd.nextInt(4) != 0;
        Node.Builder b = Node.builder(name).defaultLink(new GpuLink.Pcie(TopologyLevel.SYSTEM));
        int sick = rnd.nextInt(4) == 0 ? rnd.nextInt(gpus) : -1;
        int[] group = new int[gpus];
        int g = 0;
        for (int i = 0; i < gpus; i++) {
            if (i > 0 && rnd.nextInt(3) == 0) {
                g++;
            }
            group[i] = g;
            GpuDevice.Builder d = gpu(name, i, numa ? (i < half ? 0 : 1) : -1);
            if (i == sick) {
                d.health(Health.UNHEALTHY);
            }
            b.gpu(d.build());
        }
        for (int i = 0; i < gpus; i++) {
            for (int j = i + 1; j < gpus; j++) {
                boolean sameNuma = (i < half) == (j < half);
                TopologyLevel l = group[i] == group[j] ? (rnd.nextBoolean() ? TopologyLevel.SINGLE : TopologyLevel.MULTIPLE)
                        : sameNuma ? (rnd.nextBoolean() ? TopologyLevel.HOSTBRIDGE : TopologyLevel.NODE) : TopologyLevel.SYSTEM;
                b.link(i, j, new GpuLink.Pcie(l));
            }
        }
        return b.build();
    }

    /** Sixteen GPUs (more than NodeTopo memoizes): two NVSwitch islands of eight joined by PCIe, or one of sixteen. */
    private static Node sixteen(SplittableRandom rnd, String name) {
        if (rnd.nextBoolean()) {
            return nvswitch(name, 16);
        }
        Node.Builder b = Node.builder(name).defaultLink(new GpuLink.Pcie(TopologyLevel.SYSTEM));
        for (int i = 0; i < 16; i++) {
            b.gpu(gpu(name, i, i / 8).build());
        }
        for (int i = 0; i < 16; i++) {
            for (int j = i + 1; j < 16; j++) {
                if (i / 8 == j / 8) {
                    b.link(i, j, new GpuLink.NvLink(18));
                }
            }
        }
        return b.build();
    }

    /**
     * Random loads: a third of the nodes have every GPU at one load (empty, or the same tenants on each),
     * where only the tie-breaks decide; the others 0..3 tenants of random sizes per GPU, or a GPU held
     * whole. Reservations the rules refuse are left out.
     */
    private static void fill(Ledger ledger, List<Node> nodes, SplittableRandom rnd, int[] tenants) {
        for (Node n : nodes) {
            boolean uniform = rnd.nextInt(3) == 0;
            int same = rnd.nextInt(3);
            long sameGib = 1 + rnd.nextInt(16);
            int sameReq = 5 * rnd.nextInt(10);
            PriorityClass sameClass = rnd.nextBoolean() ? PriorityClass.ONLINE : PriorityClass.OFFLINE;
            for (GpuDevice g : n.gpus()) {
                if (uniform) {
                    for (int i = 0; i < same; i++) {
                        reserve(ledger, n, g, sameGib, sameReq, sameClass, tenants);
                    }
                    continue;
                }
                int r = rnd.nextInt(10);
                if (r == 0) {
                    Claim c = Claim.builder("fill-" + tenants[0]++).exclusive().build();
                    ledger.reserve(new Placement(c, n.name(), List.of(new Slice(g.uuid(), g.memoryBytes(), 100, 100))));
                    continue;
                }
                int count = r < 4 ? 0 : 1 + rnd.nextInt(3);
                for (int i = 0; i < count; i++) {
                    reserve(ledger, n, g, 1 + rnd.nextInt(16), 5 * rnd.nextInt(10),
                            rnd.nextBoolean() ? PriorityClass.ONLINE : PriorityClass.OFFLINE, tenants);
                }
            }
        }
    }

    private static void reserve(Ledger ledger, Node n, GpuDevice g, long gib, int req, PriorityClass p, int[] tenants) {
        Claim c = Claim.builder("fill-" + tenants[0]++).memoryGiB(gib).compute(req, 100).priority(p).build();
        ledger.reserve(new Placement(c, n.name(), List.of(new Slice(g.uuid(), gib * GpuDevice.GIB, req, 100))));
    }

    /** A claim of one GPU: shared (1..24 GiB, 0..45%) or whole, either class, any policies, a GPU excluded at times. */
    private static Claim claim(SplittableRandom rnd, String id, List<Node> nodes) {
        Claim.Builder b = Claim.builder(id).gpus(1);
        if (rnd.nextInt(8) == 0) {
            b.exclusive();
        } else {
            b.memoryGiB(1 + rnd.nextInt(24)).compute(5 * rnd.nextInt(10), 100);
        }
        b.priority(rnd.nextBoolean() ? PriorityClass.ONLINE : PriorityClass.OFFLINE);
        if (rnd.nextInt(3) != 0) {
            b.nodePolicy(POLICIES[rnd.nextInt(POLICIES.length)]);
        }
        if (rnd.nextInt(3) != 0) {
            b.gpuPolicy(POLICIES[rnd.nextInt(POLICIES.length)]);
        }
        if (rnd.nextInt(6) == 0) {
            Node n = nodes.get(rnd.nextInt(nodes.size()));
            b.selectors(Selectors.builder().excludeUuid(n.gpus().get(rnd.nextInt(n.gpus().size())).uuid()).build());
        }
        return b.build();
    }
}
