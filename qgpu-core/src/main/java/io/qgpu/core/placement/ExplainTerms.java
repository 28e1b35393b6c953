package io.qgpu.core.placement;

import io.qgpu.api.ClusterView;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GpuState;
import io.qgpu.api.placement.GpuSet;
import io.qgpu.api.placement.GpuSetScorer;
import io.qgpu.api.placement.NodeScorer;
import io.qgpu.api.placement.Score;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Builds {@link PlacementExplanation.Candidate}s: one {@link PlacementExplanation.Term} per score term,
 * each with its value, weight and the reason in words. The values are the ones {@link SetSearch}
 * adds up, so a candidate's total is the score the engine ranked it by.
 *
 * <p>Thread safety: immutable; the engine makes one per explanation.
 */
final class ExplainTerms {
    private static final PlacementExplanation.Level NODE = PlacementExplanation.Level.NODE;
    private static final PlacementExplanation.Level SET = PlacementExplanation.Level.GPU_SET;

    private final PlacementConfig config;
    private final NodeScorer[] nodeScorers;
    private final double[] nodeWeights;
    private final GpuSetScorer[] setScorers;
    private final double[] setWeights;
    private final ClusterView view;

    ExplainTerms(PlacementConfig config, NodeScorer[] nodeScorers, double[] nodeWeights, GpuSetScorer[] setScorers,
                 double[] setWeights, ClusterView view) {
        this.config = config;
        this.nodeScorers = nodeScorers;
        this.nodeWeights = nodeWeights;
        this.setScorers = setScorers;
        this.setWeights = setWeights;
        this.view = view;
    }

    /** The candidate {@code positions} on {@code s}; {@code maxLeft} is the most any set of the node leaves behind. */
    PlacementExplanation.Candidate candidate(NodeSummary s, ClaimShape c, int[] positions, double maxLeft,
                                             boolean shortlisted) {
        List<PlacementExplanation.Term> terms = new ArrayList<>();
        int healthy = 0;
        for (GpuState g : s.state.gpus()) {
            healthy += g.device().healthy() ? 1 : 0;
        }
        String over = healthy == 0 ? "no healthy GPU: counts as full" : "mean over " + healthy + " healthy GPU(s)";
        terms.add(new PlacementExplanation.Term(NODE, "node-" + c.nodePolicy.wireName(),
                PlacementScores.policyTerm(c.nodePolicy, s.nodeLoad), config.nodeWeight(),
                String.format(Locale.ROOT, "node load %.3f (%s); %s", s.nodeLoad, over,
                        c.nodeBinpack ? "binpack prefers the fullest node: score = load" : "spread prefers the emptiest node: score = 1 - load")));
        for (int i = 0; i < nodeScorers.length; i++) {
            Score sc = nodeScorers[i].explain(c.claim, s.state, view);
            terms.add(new PlacementExplanation.Term(NODE, nodeScorers[i].name(), sc.value(), nodeWeights[i], sc.explanation()));
        }
        if (c.cpuMillis > 0 || c.hostMemory > 0) {
            terms.add(HostTerms.term(s.state, c.claim));
        }
        if (positions.length > 0) {
            gpuTerms(s, c, positions, maxLeft, terms);
        } else {
            hostOnlyFragmentation(s, c, terms);
        }
        double total = 0;
        for (PlacementExplanation.Term term : terms) {
            total += term.weighted();
        }
        return new PlacementExplanation.Candidate(s.state.name(),
                positions.length == 0 ? GpuSet.empty() : GpuSet.of(positions), uuids(s, positions), total,
                shortlisted, terms);
    }

    /** The fragmentation term of a host-only claim (the CPU it takes), when its node policy is fragmentation. */
    private void hostOnlyFragmentation(NodeSummary s, ClaimShape c, List<PlacementExplanation.Term> terms) {
        for (int i = 0; i < setScorers.length; i++) {
            if (setScorers[i] instanceof FragmentationScorer f && c.nodePolicy == io.qgpu.api.PlacementPolicy.FRAGMENTATION) {
                double v = f.hostOnlyScore(c.claim, s.state);
                terms.add(new PlacementExplanation.Term(SET, f.name(), v, setWeights[i], String.format(Locale.ROOT,
                        "host-only claim: the CPU it takes changes the expected fragmentation by %+.1f%% of a GPU",
                        (0.5 - v) * 200 * FragmentationScorer.SCALE_GPUS)));
            }
        }
    }

    /** The set terms of a claim with GPUs. */
    private void gpuTerms(NodeSummary s, ClaimShape c, int[] positions, double maxLeft,
                          List<PlacementExplanation.Term> terms) {
        pairTerms(s, positions, terms);
        terms.add(leftover(s, positions, maxLeft));
        double loadSum = 0;
        List<String> loads = new ArrayList<>();
        for (int p : positions) {
            loadSum += s.load[p];
            loads.add(String.format(Locale.ROOT, "%d:%.3f", p, s.load[p]));
        }
        double mean = loadSum / positions.length;
        terms.add(new PlacementExplanation.Term(SET, "gpu-" + c.gpuPolicy.wireName(), PlacementScores.policyTerm(c.gpuPolicy, mean),
                config.loadWeight(), String.format(Locale.ROOT, "mean GPU load %.3f (%s; load = 0.9 x the most booked of "
                                + "memory, compute, tenant slots + 0.1 x their mean, 1 when one of them is full); %s", mean, String.join(" ", loads),
                        c.gpuBinpack ? "binpack: score = load" : "spread: score = 1 - load")));
        if (setScorers.length > 0) {
            GpuSet g = GpuSet.of(positions);
            for (int i = 0; i < setScorers.length; i++) {
                if (setScorers[i] instanceof FragmentationScorer && c.nodePolicy != io.qgpu.api.PlacementPolicy.FRAGMENTATION) {
                    continue;   // the engine's own fragmentation term scores 0 for this claim: no line for it
                }
                Score sc = setScorers[i].explain(c.claim, s.state, g, view);
                terms.add(new PlacementExplanation.Term(SET, setScorers[i].name(), sc.value(), setWeights[i], sc.explanation()));
            }
        }
    }

    /** The terms over the set's pairs: NVLink clique, NVLink bandwidth, PCIe tie-break, NUMA. */
    private void pairTerms(NodeSummary s, int[] positions, List<PlacementExplanation.Term> terms) {
        int k = positions.length;
        if (k == 1) {
            terms.add(new PlacementExplanation.Term(SET, "nvlink-clique", 1.0, config.cliqueWeight(), "single GPU"));
            terms.add(new PlacementExplanation.Term(SET, "link-quality", 1.0, config.linkWeight(), "single GPU"));
            terms.add(new PlacementExplanation.Term(SET, "pcie-locality", 1.0, config.pcieWeight(), "single GPU"));
            terms.add(new PlacementExplanation.Term(SET, "numa", 1.0, config.numaWeight(), "single GPU"));
            if (config.leftoverWeight() > 0) {
                terms.add(new PlacementExplanation.Term(SET, "connectivity", s.connectivityAfter(positions, 1),
                        PlacementScores.CONNECTIVITY_TIE_BREAK * config.leftoverWeight(),
                        "tie-break at equal load: how well the node's other healthy GPUs (busy or not) stay connected "
                                + "without this one (the look-ahead's left over them); the worst-connected GPU goes first"));
            }
            return;
        }
        NodeTopo t = s.topo;
        boolean all = true;
        double linkSum = 0;
        double pcieSum = 0;
        int sameNuma = 0;
        List<String> links = new ArrayList<>();
        List<String> pcie = new ArrayList<>();
        List<String> notNv = new ArrayList<>();
        List<String> numa = new ArrayList<>();
        for (int a = 0; a < k; a++) {
            int pa = positions[a];
            numa.add(pa + ":" + (s.numa[pa] < 0 ? "?" : Integer.toString(s.numa[pa])));
            for (int b = a + 1; b < k; b++) {
                int pb = positions[b];
                GpuLink l = t.topology.link(pa, pb);
                int slot = pa * t.size + pb;
                linkSum += t.link[slot];
                pcieSum += t.pcie[slot];
                all &= t.nv[slot];
                sameNuma += s.numa[pa] == s.numa[pb] ? 1 : 0;
                String pair = pa + "-" + pb;
                links.add(String.format(Locale.ROOT, "%s %s%s %.2f", pair, l.label(), l.viaNvSwitch() ? " (NVSwitch)" : "",
                        t.link[slot]));
                pcie.add(String.format(Locale.ROOT, "%s %s %.2f", pair, l.pcieLevel().label(), t.pcie[slot]));
                if (!(l instanceof GpuLink.NvLink)) {
                    notNv.add(pair + " " + l.label());
                }
            }
        }
        int pairs = k * (k - 1) / 2;
        terms.add(new PlacementExplanation.Term(SET, "nvlink-clique", all ? 1.0 : 0.0, config.cliqueWeight(),
                all ? "every pair of the set is NVLink" : "pairs without NVLink: " + String.join(", ", notNv)));
        terms.add(new PlacementExplanation.Term(SET, "link-quality", linkSum / pairs, config.linkWeight(),
                "NVLink bandwidth, mean pair link score (max lanes " + t.maxLanes + "): " + String.join(", ", links)));
        terms.add(new PlacementExplanation.Term(SET, "pcie-locality", pcieSum / pairs, config.pcieWeight(),
                "PCIe tie-break (within the node only between sets the other terms rank equal; its weight counts across nodes), mean closeness of each pair's common ancestor (1 same board, .83 one switch, "
                        + ".67 several switches, .50 host bridge, .33 one NUMA node, .17 across sockets): "
                        + String.join(", ", pcie)));
        terms.add(new PlacementExplanation.Term(SET, "numa", (double) sameNuma / pairs, config.numaWeight(),
                String.format(Locale.ROOT, "%d of %d pair(s) on one CPU NUMA node (GPU:NUMA %s); a tie-break within the "
                        + "node (after bandwidth, before PCIe); its weight counts across nodes", sameNuma, pairs,
                        String.join(" ", numa))));
    }

    /** The look-ahead: what the set leaves behind, against the best any set of this node leaves. */
    private PlacementExplanation.Term leftover(NodeSummary s, int[] positions, double maxLeft) {
        if (config.leftoverWeight() == 0) {
            return new PlacementExplanation.Term(SET, "leaves-behind", 1.0, 0.0, "look-ahead off (weight 0)");
        }
        double left = s.leftAfter(positions, positions.length);
        double value = 1.0 - (maxLeft - left);
        if (s.size > 64) {
            return new PlacementExplanation.Term(SET, "leaves-behind", value, config.leftoverWeight(),
                    "look-ahead skipped on nodes of more than 64 GPUs");
        }
        long mask = s.freeMask;
        for (int p : positions) {
            mask &= ~(1L << p);
        }
        List<String> left1 = new ArrayList<>();
        for (long m = mask; m != 0; m &= m - 1) {
            left1.add(Integer.toString(Long.numberOfTrailingZeros(m)));
        }
        int count = Long.bitCount(mask);
        double partner = count < 2 ? 0.0 : s.topo.partnerLeft(mask, count);
        double clique = count < 2 ? 0.0 : s.topo.cliqueLeft(mask);
        return new PlacementExplanation.Term(SET, "leaves-behind", value, config.leftoverWeight(),
                String.format(Locale.ROOT, "what the set leaves for the next multi-GPU claims: idle GPUs left [%s], "
                                + "left %.3f = half their mean link to their best idle partner (%.3f) + half their largest "
                                + "NVLink clique over the node's (%.3f); the best set taking as many idle GPUs leaves %.3f; "
                                + "score = 1 - (%.3f - %.3f)",
                        String.join(", ", left1), left, partner, clique, maxLeft, maxLeft, left));
    }

    private static List<String> uuids(NodeSummary s, int[] positions) {
        List<String> out = new ArrayList<>(positions.length);
        for (int p : positions) {
            out.add(s.state.gpu(p).uuid());
        }
        return out;
    }
}
