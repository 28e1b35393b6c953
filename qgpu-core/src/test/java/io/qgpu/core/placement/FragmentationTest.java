package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.TopologyLevel;
import io.qgpu.core.ledger.Ledger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The fragmentation formula of {@link Fragmentation}: worked examples, and the incremental delta against a from-scratch oracle. */
class FragmentationTest {

    static Node node(String name, String... models) {
        Node.Builder b = Node.builder(name).defaultLink(new GpuLink.Pcie(TopologyLevel.HOSTBRIDGE));
        for (int i = 0; i < models.length; i++) {
            b.gpu(GpuDevice.builder(name + "-g" + i).index(i).model(models[i]).memoryGiB(16).build());
        }
        return b.build();
    }

    /** A node whose GPUs have {@code booked[g]} percent of guaranteed compute booked (100 = held whole). */
    static NodeState booked(Node n, int... booked) {
        Ledger l = Ledger.create(List.of(n));
        for (int g = 0; g < booked.length; g++) {
            if (booked[g] == 100) {
                assertTrue(l.reserve(Nodes.on(Nodes.exclusive("x" + g, 1), n, g)).reserved());
            } else if (booked[g] > 0) {
                assertTrue(l.reserve(Nodes.on(Nodes.claim("s" + g, 1, booked[g], 100), n, g)).reserved());
            }
        }
        return l.nodes().get(0);
    }

    static RequestMix mix(Object... shapeWeight) {
        Map<RequestShape, Double> m = new LinkedHashMap<>();
        for (int i = 0; i < shapeWeight.length; i += 2) {
            m.put((RequestShape) shapeWeight[i], ((Number) shapeWeight[i + 1]).doubleValue());
        }
        return RequestMix.of(m);
    }

    static RequestShape share(int percent) {
        return new RequestShape(1, percent, 0, Set.of());
    }

    @Test
    void aShareTooBigForWhatAGpuHasLeftMakesThatRemainderFragmentation() {
        NodeState n = booked(node("n", "T4", "T4"), 50, 0);   // free 50 and 100
        RequestMix sixty = mix(share(60), 1);
        assertEquals(50.0, Fragmentation.of(n, Long.MAX_VALUE, sixty), 1e-9);
        Fragmentation.Profile p = Fragmentation.profile(n, Long.MAX_VALUE, sixty, true);
        // 40% on GPU 0 leaves 10 (still unusable: 50 -> 10, fragmentation -40); on GPU 1 leaves 60 (usable: +0)
        assertEquals(-40.0, p.delta(new int[] {0}, 40, 0), 1e-9);
        assertEquals(0.0, p.delta(new int[] {1}, 40, 0), 1e-9);
        // 50% on GPU 1 leaves 50 there: unusable for 60, +50
        assertEquals(50.0, p.delta(new int[] {1}, 50, 0), 1e-9);
    }

    @Test
    void aShapeThatCannotRunOnTheNodeMakesAllItsFreeCapacityFragmentation() {
        NodeState n = booked(node("n", "T4", "T4"), 30, 0);   // free 70 + 100
        RequestMix twoWhole = mix(new RequestShape(2, 100, 0, Set.of()), 1);
        assertEquals(170.0, Fragmentation.of(n, Long.MAX_VALUE, twoWhole), 1e-9);
        RequestMix cpuHungry = mix(new RequestShape(1, 10, 8000, Set.of()), 1);
        // the per-shape measure alone (the paper's): the CPU balance term is pinned in its own test below
        assertEquals(170.0, paper(n, 4000, cpuHungry), 1e-9, "CPU short: everything is fragmentation");
        assertEquals(0.0, paper(n, 8000, cpuHungry), 1e-9);
        assertEquals(170.0, paper(n, 10000, cpuHungry) + Fragmentation.profile(n, 10000, cpuHungry, false)
                .delta(new int[0], 0, 4000), 1e-9, "taking CPU below the shape's need makes the node unusable for it");
        RequestMix v100Only = mix(new RequestShape(1, 10, 0, Set.of("V100")), 1);
        assertEquals(170.0, Fragmentation.of(n, Long.MAX_VALUE, v100Only), 1e-9, "no GPU of an allowed model");
    }

    static double paper(NodeState n, long cpuFree, RequestMix mix) {
        return Fragmentation.profile(n, cpuFree, mix, false).fragmentation();
    }

    /**
     * The CPU balance term: the free GPU compute that the node's free CPU cannot feed at the CPU the mix asks
     * per percent of GPU. One whole GPU with 12 cores is 120 millicores per percent.
     */
    @Test
    void freeGpusTheFreeCpuCannotFeedAtTheMixsRatioAreStranded() {
        NodeState n = booked(node("n", "T4", "T4", "T4", "T4"), 0, 0, 0, 0);   // 400 free
        RequestMix whole12 = mix(new RequestShape(1, 100, 12_000, Set.of()), 1);
        assertEquals(120.0, whole12.cpuPerGpuPercent(), 1e-12);
        assertEquals(0.0, Fragmentation.of(n, 48_000, whole12), 1e-9, "48 cores feed all four GPUs");
        assertEquals(0.0, Fragmentation.of(n, 60_000, whole12), 1e-9, "spare CPU is not negative stranding");
        // 30 cores feed 250 percent: 150 stranded, though the next request (12 cores) still fits
        Fragmentation.Profile p = Fragmentation.profile(n, 30_000, whole12, true);
        assertEquals(150.0, p.cpuStranded(), 1e-9);
        assertEquals(150.0, p.fragmentation(), 1e-9);
        assertEquals(0.0, paper(n, 30_000, whole12), 1e-9, "the paper's measure sees only the next request");
        // taking 6 cores strands 50 more; taking a GPU with its 12 cores strands nothing more (250 -> 150 free, 18 cores feed 150)
        assertEquals(50.0, p.delta(new int[0], 0, 6_000), 1e-9);
        assertEquals(0.0, p.delta(new int[] {0}, 100, 12_000), 1e-9);
        // host-only shapes count in the CPU asked, not in the GPU asked: 3 in 4 whole GPUs with 12 cores,
        // 1 in 4 host-only 32 cores: (9000 + 8000) / 75
        RequestMix withHost = mix(new RequestShape(1, 100, 12_000, Set.of()), 3, RequestShape.hostOnly(32_000), 1);
        assertEquals(17_000.0 / 75, withHost.cpuPerGpuPercent(), 1e-9);
        assertEquals(0.0, RequestMix.of(Map.of(RequestShape.hostOnly(4000), 1.0)).cpuPerGpuPercent(), 0.0, "no GPU asked: no ratio");
        assertEquals(0.0, Fragmentation.profile(n, 1000, mix(RequestShape.hostOnly(4000), 1), true).cpuStranded(), 0.0);
        assertEquals(0.0, Fragmentation.profile(n, Long.MAX_VALUE, whole12, true).cpuStranded(), 0.0, "CPU not modelled");
        assertEquals(0.0, Fragmentation.profile(n, 30_000, whole12, false).cpuStranded(), 0.0, "made without the term");
    }

    @Test
    void probabilitiesWeighTheShapesAndAMixedModelNodeCountsOtherModelsAsUnusable() {
        NodeState n = booked(node("n", "A", "B"), 0, 0);
        RequestMix m = mix(new RequestShape(1, 50, 0, Set.of("A")), 3, share(100), 1);
        // A-only shape: GPU 1 (model B) unusable -> 100, weight 0.75; whole GPU: fits, nothing unusable
        assertEquals(75.0, Fragmentation.of(n, Long.MAX_VALUE, m), 1e-9);
        assertEquals(0.75, m.probability(0), 1e-12);
    }

    @Test
    void theMixKeepsShapesInDecreasingWeightAndTopKeepsTheCommonOnes() {
        RequestMix m = mix(share(10), 1, share(20), 6, share(30), 3);
        assertEquals(share(20), m.shape(0));
        assertEquals(share(30), m.shape(1));
        RequestMix top = m.top(0.9);
        assertEquals(2, top.size());
        assertEquals(6.0 / 9.0, top.probability(0), 1e-12);
        assertThrows(InvalidValueException.class, () -> mix(share(10), 0));
        assertThrows(InvalidValueException.class, () -> m.top(0));
        assertThrows(InvalidValueException.class, () -> new RequestShape(1, 0, 0, Set.of()));
    }

    @Test
    void theSampleSlidesAndForgetsTheOldest() {
        RequestSample s = new RequestSample(3);
        assertEquals(0, s.mix().size());
        s.record(share(10));
        s.record(share(10));
        s.record(share(20));
        assertEquals(2.0 / 3.0, s.mix().probability(0), 1e-12);
        s.record(share(30));   // drops the first 10
        s.record(share(30));   // drops the second 10
        assertEquals(2, s.mix().size());
        assertEquals(share(30), s.mix().shape(0));
        assertEquals(3, s.size());
        assertThrows(InvalidValueException.class, () -> new RequestSample(0));
    }

    @Test
    void aClaimsShapeIsItsShareOrAWholeGpu() {
        Claim c = Claim.builder("c").gpus(2).memoryGiB(4).compute(35, 60).build();
        assertEquals(new RequestShape(2, 35, 0, Set.of()), RequestShape.of(c));
        assertEquals(new RequestShape(1, 100, 0, Set.of()), RequestShape.of(Nodes.exclusive("x", 1)));
    }

    // ------------------------------------------------------------------ delta against an oracle

    /** What is checked: {@code delta(positions, share, cpu)} of a node profile. */
    interface DeltaImpl {
        double delta(NodeState n, long cpuFree, RequestMix mix, int[] positions, int share, long cpu);
    }

    static final DeltaImpl REAL = (n, cpuFree, mix, pos, share, cpu) -> Fragmentation.profile(n, cpuFree, mix, true).delta(pos, share, cpu);

    /** From scratch: F(after) - F(before), with the free compute of each GPU recomputed. */
    static double oracle(NodeState n, long cpuFree, RequestMix mix, int[] pos, int share, long cpu) {
        int[] free = new int[n.gpus().size()];
        for (int g = 0; g < free.length; g++) {
            free[g] = Fragmentation.freeCompute(n.gpu(g));
        }
        int[] after = free.clone();
        for (int p : pos) {
            after[p] = Math.max(0, after[p] - share);
        }
        return f(n, free, cpuFree, mix) - f(n, after, cpuFree - cpu, mix);
    }

    private static double f(NodeState n, int[] free, long cpu, RequestMix mix) {
        double sum = 0;
        long total = 0;
        for (int v : free) {
            total += Math.max(0, v);
        }
        for (int m = 0; m < mix.size(); m++) {
            RequestShape s = mix.shape(m);
            int fit = 0;
            long un = 0;
            for (int g = 0; g < free.length; g++) {
                boolean ok = free[g] >= 0 && (s.models().isEmpty() || s.models().contains(n.gpu(g).device().model()));
                if (ok && free[g] >= s.computePercent()) {
                    fit++;
                } else {
                    un += Math.max(0, free[g]);
                }
            }
            sum += mix.probability(m) * (cpu < s.cpuMillis() || fit < s.gpus() ? total : un);
        }
        // the CPU balance term, from its definition: CPU asked (host-only shapes too) over GPU percent asked
        double cpuAsked = 0;
        double gpuAsked = 0;
        for (int m = 0; m < mix.size(); m++) {
            RequestShape s = mix.shape(m);
            cpuAsked += mix.probability(m) * s.cpuMillis();
            gpuAsked += mix.probability(m) * s.gpus() * s.computePercent();
        }
        if (gpuAsked > 0 && cpuAsked > 0) {   // no GPU or no CPU asked: no ratio, no term
            sum += Math.max(0, total - cpu / (cpuAsked / gpuAsked));
        }
        return sum;
    }

    /** The first random case (seeded) where {@code impl} disagrees with the oracle, if any. */
    static Optional<String> firstMismatch(DeltaImpl impl, long seed, int cases) {
        Random r = new Random(seed);
        for (int i = 0; i < cases; i++) {
            int gpus = 1 + r.nextInt(6);
            String[] models = new String[gpus];
            int[] booked = new int[gpus];
            for (int g = 0; g < gpus; g++) {
                models[g] = r.nextBoolean() ? "A" : "B";
                int k = r.nextInt(4);
                booked[g] = k == 0 ? 0 : k == 1 ? 100 : 5 * (1 + r.nextInt(19));
            }
            NodeState n = booked(node("n" + i, models), booked);
            Map<RequestShape, Double> w = new LinkedHashMap<>();
            for (int m = 0, shapes = 1 + r.nextInt(4); m < shapes; m++) {
                w.merge(new RequestShape(1 + r.nextInt(2), 10 * (1 + r.nextInt(10)), 4000L * r.nextInt(3),
                        r.nextInt(3) == 0 ? Set.of("A") : Set.of()), 1.0 + r.nextInt(5), Double::sum);
            }
            RequestMix mix = RequestMix.of(w);
            long cpuFree = new long[] {2000, 8000, 16000, 1L << 40}[r.nextInt(4)];
            int k = 1 + r.nextInt(gpus);
            List<Integer> all = new ArrayList<>();
            for (int g = 0; g < gpus; g++) {
                all.add(g);
            }
            java.util.Collections.shuffle(all, r);
            int[] pos = all.subList(0, k).stream().mapToInt(Integer::intValue).sorted().toArray();
            int share = r.nextInt(4) == 0 ? 100 : 5 * (1 + r.nextInt(20));
            long cpu = 4000L * r.nextInt(3);
            double want = -oracle(n, cpuFree, mix, pos, share, cpu);
            double got = impl.delta(n, cpuFree, mix, pos, share, cpu);
            if (Math.abs(want - got) > 1e-6) {
                return Optional.of("case " + i + ": booked " + java.util.Arrays.toString(booked) + " models "
                        + java.util.Arrays.toString(models) + " " + mix + " cpuFree " + cpuFree + " set "
                        + java.util.Arrays.toString(pos) + " share " + share + " cpu " + cpu + ": want " + want + ", got " + got);
            }
        }
        return Optional.empty();
    }

    @Test
    void theIncrementalDeltaEqualsTheFromScratchDifference() {
        Optional<String> m = firstMismatch(REAL, 19, 1500);
        assertTrue(m.isEmpty(), m.orElse(""));
    }

    /**
     * The oracle check has teeth: two deliberately broken deltas (one ignores the CPU a claim takes,
     * one counts a GPU with exactly the shape's share free as too full) are caught within the same
     * 1500 seeded cases the real one passes.
     */
    @Test
    void brokenDeltasAreCaught() {
        DeltaImpl ignoresCpu = (n, cpuFree, mix, pos, share, cpu) -> REAL.delta(n, cpuFree, mix, pos, share, 0);
        assertTrue(firstMismatch(ignoresCpu, 19, 1500).isPresent(), "ignoring the claim's CPU must be caught");
        DeltaImpl strictFit = (n, cpuFree, mix, pos, share, cpu) -> {
            // the oracle's formula with '>' for '>=': a GPU with exactly c free would not fit a c-share
            Map<RequestShape, Double> shifted = new LinkedHashMap<>();
            for (int i = 0; i < mix.size(); i++) {
                RequestShape s = mix.shape(i);
                shifted.merge(new RequestShape(s.gpus(), Math.min(100, s.computePercent() + 1), s.cpuMillis(), s.models()),
                        mix.probability(i), Double::sum);
            }
            return REAL.delta(n, cpuFree, RequestMix.of(shifted), pos, share, cpu);
        };
        assertTrue(firstMismatch(strictFit, 19, 1500).isPresent(), "an off-by-one fit test must be caught");
        DeltaImpl noBalance = (n, cpuFree, mix, pos, share, cpu) -> Fragmentation.profile(n, cpuFree, mix, false).delta(pos, share, cpu);
        assertTrue(firstMismatch(noBalance, 19, 1500).isPresent(), "leaving out the CPU balance term must be caught");
    }
}
