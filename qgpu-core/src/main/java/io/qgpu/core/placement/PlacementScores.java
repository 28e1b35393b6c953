package io.qgpu.core.placement;

import io.qgpu.api.GpuLink;
import io.qgpu.api.GpuState;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.NodeState;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Topology;
import io.qgpu.api.TopologyLevel;

/**
 * The built-in score formulas of the {@link PlacementEngine}, public so that custom scorers and
 * reports compute them the same way. Every value is between 0 and 1.
 *
 * <h2>Load of a GPU</h2>
 * What is really bound to it, idle tenants included (a tenant counts from reservation to release,
 * whether or not it is running work):
 * <pre>
 *   load(g) = 1                                                  if a tenant holds g exclusively, or
 *                                                                 if max(mem, compute, slots) = 1 (full)
 *   load(g) = 0.9 * max(mem, compute, slots) + 0.1 * mean(mem, compute, slots)   otherwise, where
 *     mem     = memUsed / memory
 *     compute = max(onlineGuaranteed, offlineGuaranteed) / 100   (each class is admitted up to 100%)
 *     slots   = tenants / maxTenants(g)
 * </pre>
 * So a GPU whose guaranteed compute of either class is fully booked by shares counts as full (1),
 * whatever memory the shares hold, in every load score (the GPU term of binpack and spread, the node
 * load, the index keys and explain all read this one function); likewise a GPU whose memory or
 * tenant slots are all taken. Binpack and spread rank the other GPUs by their most booked resource
 * (the mean orders GPUs whose most booked resource is equal).
 *
 * <h2>Load of a node</h2>
 * {@code nodeLoad(n)} = mean of {@code load(g)} over the node's healthy GPUs (1 when none is healthy).
 *
 * <h2>Policy term</h2>
 * {@code BINPACK: load} (the fullest candidate that still fits scores highest);
 * {@code SPREAD: 1 - load} (the emptiest scores highest);
 * {@code FRAGMENTATION: load}, with the fragmentation term of {@link FragmentationScorer} added to each set.
 *
 * <h2>Link score of a GPU pair</h2>
 * Ordered as {@link GpuLink#quality()}: NVLink lanes first, then the PCIe common-ancestor level.
 * <pre>
 *   linkScore(NVLink with l lanes) = 0.5 + 0.5 * l / maxLanes(node)         in (0.5, 1]
 *   linkScore(PCIe at level L)     = 0.5 * quality(L) / 60                  in (0, 0.5]
 *                                     (PSB 0.5, PIX 0.42, PXB 0.33, PHB 0.25, NODE 0.17, SYS 0.08)
 * </pre>
 * where {@code maxLanes(node)} is the most lanes of any pair of the node (so the best NVLink pair of
 * any node scores 1, and on an NVSwitch node every pair scores 1). Every NVLink pair scores above
 * every PCIe pair.
 *
 * <h2>PCIe closeness of a pair</h2>
 * {@code pcieCloseness(L) = (60 - nvml(L)) / 60} of the pair's PCIe common ancestor, NVLink or not:
 * same board 1, one switch 0.83, several switches 0.67, one host bridge 0.5, one NUMA node 0.33,
 * across sockets 0.17; the tie-break between pairs of equal NVLink bandwidth.
 *
 * <pre>{@code
 * double l = PlacementScores.gpuLoad(gpuState, GranularityRules.ofDefaults());
 * double s = PlacementScores.policyTerm(PlacementPolicy.SPREAD, l);   // 1 - l
 * double q = PlacementScores.linkScore(new GpuLink.NvLink(1), 2);      // 0.75
 * }</pre>
 *
 * <p>Thread safety: stateless.
 */
public final class PlacementScores {

    private PlacementScores() {
    }

    /**
     * Scale of the NUMA and PCIe terms when a node's GPU sets are ranked against each other: they are
     * added as {@code TIE_BREAK * (numaWeight * numa(S) + pcieWeight * pcie(S) / pairs)}, at most
     * {@code TIE_BREAK * (numaWeight + pcieWeight)} (1.5e-7 points at the defaults), so within a node
     * they only break ties between sets whose other terms (NVLink clique and bandwidth, the
     * look-ahead, load, registered scorers) differ by less than that. The smallest bandwidth
     * difference two sets of one node can have is {@code linkWeight / (lcm(2 * maxLanes, 12) * pairs)}
     * (an NVLink pair scores a multiple of {@code 1 / (2 * maxLanes)}, a PCIe pair a multiple of
     * {@code 1 / 12}): 6.5e-7 points at the default {@code linkWeight} of 0.5 even for 64-lane links
     * and sets of 64 GPUs (2,016 pairs), so within a node NVLink bandwidth is never outweighed by
     * them. One more pair on one NUMA node gains {@code numaWeight / pairs}, more than any PCIe
     * difference ({@code < 5/6 * pcieWeight / pairs}) when {@code numaWeight > 5/6 * pcieWeight}
     * (the defaults): one NUMA node first, then PCIe closeness. The chosen set carries both terms at
     * their full weights, and no tie-break, into its node's total, so across nodes they weigh as
     * weights and the tie-breaks never decide between nodes.
     */
    public static final double TIE_BREAK = 1e-6;

    /**
     * Scale of a single GPU's connectivity tie-break: {@code CONNECTIVITY_TIE_BREAK * leftoverWeight *
     * left(healthy \ {g})}, at most 5e-10 points at the defaults, below every NUMA or PCIe difference
     * (a single GPU scores 1 on both anyway): at equal load and look-ahead, the GPU whose loss leaves
     * the node's other healthy GPUs (busy or not) best connected goes first, that is the
     * worst-connected GPU. Within a node only: it is not part of the node's total.
     */
    public static final double CONNECTIVITY_TIE_BREAK = 1e-9;

    /** {@code load(g)} as defined above. */
    public static double gpuLoad(GpuState g, GranularityRules rules) {
        return gpuLoad(g, rules.maxTenants(g.device()));
    }

    /** {@link #gpuLoad(GpuState, GranularityRules)} with the device's tenant cap under the rules given. */
    static double gpuLoad(GpuState g, int maxTenants) {
        if (g.heldExclusively()) {
            return 1.0;
        }
        double mem = Math.min(1.0, (double) g.memoryUsed() / g.device().memoryBytes());
        double compute = Math.min(1.0, Math.max(g.guaranteed(PriorityClass.ONLINE), g.guaranteed(PriorityClass.OFFLINE)) / 100.0);
        double slots = Math.min(1.0, (double) g.tenants() / maxTenants);
        if (Math.max(mem, Math.max(compute, slots)) >= 1.0) {
            return 1.0;   // full: nothing more of its most booked resource can be reserved
        }
        return load(mem, compute, slots);
    }

    /**
     * {@code 0.9 * max(mem, compute, slots) + 0.1 * mean(mem, compute, slots)}: the most booked of the
     * three resources, with the mean as a tenth to order GPUs whose most booked resource is equal.
     */
    public static double load(double mem, double compute, double slots) {
        double max = Math.max(mem, Math.max(compute, slots));
        return 0.9 * max + 0.1 * (mem + compute + slots) / 3.0;
    }

    /**
     * How close the pair's PCIe common ancestor is, {@code (60 - nvmlLevel) / 60}: same board 1, one
     * switch 0.83, several switches 0.67, one host bridge 0.5, one NUMA node 0.33, across sockets 0.17.
     */
    public static double pcieCloseness(TopologyLevel level) {
        return (60 - level.nvmlValue()) / 60.0;
    }

    /** {@code nodeLoad(n)}: mean GPU load over healthy GPUs, 1 when none is healthy. */
    public static double nodeLoad(NodeState n, GranularityRules rules) {
        double sum = 0;
        int healthy = 0;
        for (GpuState g : n.gpus()) {
            if (g.device().healthy()) {
                sum += gpuLoad(g, rules);
                healthy++;
            }
        }
        return healthy == 0 ? 1.0 : sum / healthy;
    }

    /** The policy term: {@code load} for binpack (and fragmentation, whose own term is added apart), {@code 1 - load} for spread. */
    public static double policyTerm(PlacementPolicy policy, double load) {
        return policy == PlacementPolicy.SPREAD ? 1.0 - load : load;
    }

    /** {@code linkScore(link)} for a node whose best NVLink pair has {@code maxLanes} lanes (1 if none). */
    public static double linkScore(GpuLink link, int maxLanes) {
        if (link instanceof GpuLink.NvLink nv) {
            return 0.5 + 0.5 * Math.min(nv.lanes(), maxLanes) / Math.max(1, maxLanes);
        }
        return 0.5 * link.quality() / 60.0;
    }

    /** The most NVLink lanes of any pair of the topology, or 1 when no pair has NVLink. */
    public static int maxLanes(Topology t) {
        int max = 1;
        for (int a = 0; a < t.size(); a++) {
            for (int b = a + 1; b < t.size(); b++) {
                if (t.link(a, b) instanceof GpuLink.NvLink nv) {
                    max = Math.max(max, nv.lanes());
                }
            }
        }
        return max;
    }
}
