package io.qgpu.core.placement;

import io.qgpu.api.GpuLink;
import io.qgpu.api.Topology;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;
import org.jspecify.annotations.Nullable;

/**
 * Link tables of one topology, shared by every {@link NodeSummary} of nodes with that topology
 * instance: pair link scores, NVLink and PCIe closeness, each GPU's partners from best to worst link,
 * and the maximal NVLink cliques, for the GPU-set score and the look-ahead ({@link #left}).
 *
 * <p>Sharing: {@link #of} hands out one instance per distinct topology (by {@link Topology#equals}:
 * every table here is a function of the topology's size and links), so the nodes of one machine type
 * share their tables and the memo of {@link #left}, instead of each node building its own and filling
 * its own memo (cache misses in a pass over thousands of nodes).
 *
 * <p>Thread safety: shared between threads; immutable but for the memo of {@link #left}, whose
 * entries are written at most once per value (racing writers write the same bits; a reader sees 0 or them).
 */
final class NodeTopo {
    final Topology topology;
    final int size;
    final int maxLanes;
    /** linkScore of pair (a, b) at {@code a * size + b}. */
    final double[] link;
    final boolean[] nv;
    /** {@link PlacementScores#pcieCloseness} of pair (a, b) at {@code a * size + b}. */
    final double[] pcie;
    /** For each GPU, the others from its best link to its worst (ties: closer PCIe, then lower position). */
    final int[][] partners;
    /**
     * The maximal NVLink cliques (every pair NVLink) of two or more GPUs, as bit masks; empty on
     * nodes of more than 64 GPUs or when there are more than {@value #MAX_CLIQUES}.
     */
    final long[] cliques;
    /** The size of the largest NVLink clique (1 when none is listed). */
    final int maxClique;
    /**
     * {@link #left} of each mask already asked for, on nodes of at most {@value #MEMO_GPUS} GPUs (null
     * on larger ones): the set search asks for the same few masks over and over while a node fills.
     */
    private final @Nullable AtomicLongArray leftMemo;
    static final int MEMO_GPUS = 8;

    /** How many distinct topologies {@link #of} keeps; past that it builds a new instance per call (as before sharing). */
    static final int SHARED_TOPOLOGIES = 256;
    private static final java.util.concurrent.ConcurrentHashMap<Topology, NodeTopo> SHARED = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * The tables of {@code t}: the instance made for an equal topology when one is kept, else a new one
     * (kept while fewer than {@value #SHARED_TOPOLOGIES} are). Thread-safe.
     */
    static NodeTopo of(Topology t) {
        NodeTopo shared = SHARED.get(t);
        if (shared != null) {
            return shared;
        }
        NodeTopo made = new NodeTopo(t);
        if (SHARED.size() >= SHARED_TOPOLOGIES) {
            return made;
        }
        NodeTopo raced = SHARED.putIfAbsent(t, made);
        return raced != null ? raced : made;
    }

    NodeTopo(Topology t) {
        this.topology = t;
        this.size = t.size();
        this.maxLanes = PlacementScores.maxLanes(t);
        this.link = new double[size * size];
        this.nv = new boolean[size * size];
        this.pcie = new double[size * size];
        for (int a = 0; a < size; a++) {
            for (int b = a + 1; b < size; b++) {
                GpuLink l = t.link(a, b);
                double s = PlacementScores.linkScore(l, maxLanes);
                boolean isNv = l instanceof GpuLink.NvLink;
                double p = PlacementScores.pcieCloseness(l.pcieLevel());
                link[a * size + b] = s;
                link[b * size + a] = s;
                nv[a * size + b] = isNv;
                nv[b * size + a] = isNv;
                pcie[a * size + b] = p;
                pcie[b * size + a] = p;
            }
        }
        this.partners = new int[size <= 64 ? size : 0][];
        for (int a = 0; a < partners.length; a++) {
            Integer[] others = new Integer[size - 1];
            int j = 0;
            for (int b = 0; b < size; b++) {
                if (b != a) {
                    others[j++] = b;
                }
            }
            final int row = a * size;
            Arrays.sort(others, (x, y) -> {
                int cmp = Double.compare(link[row + y], link[row + x]);
                if (cmp == 0) {
                    cmp = Double.compare(pcie[row + y], pcie[row + x]);
                }
                return cmp != 0 ? cmp : Integer.compare(x, y);
            });
            partners[a] = new int[size - 1];
            for (int i = 0; i < size - 1; i++) {
                partners[a][i] = others[i];
            }
        }
        this.cliques = size <= 64 ? maximalCliques(size, nv) : new long[0];
        int max = 1;
        for (long c : cliques) {
            max = Math.max(max, Long.bitCount(c));
        }
        this.maxClique = max;
        this.leftMemo = size <= MEMO_GPUS ? new AtomicLongArray(1 << size) : null;
    }

    static final int MAX_CLIQUES = 256;

    /** Bron-Kerbosch with pivoting over the NVLink graph; gives up (empty) past {@value #MAX_CLIQUES}. */
    private static long[] maximalCliques(int size, boolean[] nv) {
        long[] adj = new long[size];
        for (int a = 0; a < size; a++) {
            for (int b = 0; b < size; b++) {
                if (a != b && nv[a * size + b]) {
                    adj[a] |= 1L << b;
                }
            }
        }
        List<Long> out = new ArrayList<>();
        long all = size == 64 ? -1L : (1L << size) - 1;
        boolean complete = cliques(adj, 0L, all, 0L, out);
        return complete ? out.stream().mapToLong(Long::longValue).toArray() : new long[0];
    }

    private static boolean cliques(long[] adj, long r, long p, long x, List<Long> out) {
        if (p == 0 && x == 0) {
            if (Long.bitCount(r) >= 2) {
                out.add(r);
            }
            return out.size() <= MAX_CLIQUES;
        }
        int u = Long.numberOfTrailingZeros(p | x);
        long cand = p & ~adj[u];
        while (cand != 0) {
            int v = Long.numberOfTrailingZeros(cand);
            cand &= cand - 1;
            if (!cliques(adj, r | 1L << v, p & adj[v], x & adj[v], out)) {
                return false;
            }
            p &= ~(1L << v);
            x |= 1L << v;
        }
        return true;
    }

    /** The most GPUs of {@code mask} in one NVLink clique, over {@link #maxClique} (0 when none). */
    double cliqueLeft(long mask) {
        int best = 0;
        for (long c : cliques) {
            best = Math.max(best, Long.bitCount(c & mask));
        }
        return best < 2 ? 0.0 : (double) best / maxClique;
    }

    /**
     * {@code left(mask)}: half the mean over the GPUs of {@code mask} of the link score to their best
     * partner in {@code mask}, half the largest NVLink clique within {@code mask} (over the node's
     * largest); 0 below two GPUs.
     */
    double left(long mask) {
        int count = Long.bitCount(mask);
        if (count < 2) {
            return 0.0;
        }
        if (leftMemo == null) {
            return 0.5 * partnerLeft(mask, count) + 0.5 * cliqueLeft(mask);
        }
        // the same value, computed once per mask: its bits plus one (0: not computed yet)
        int m = (int) mask;
        long bits = leftMemo.getOpaque(m);
        if (bits == 0) {
            bits = Double.doubleToRawLongBits(0.5 * partnerLeft(mask, count) + 0.5 * cliqueLeft(mask)) + 1;
            leftMemo.setOpaque(m, bits);
        }
        return Double.longBitsToDouble(bits - 1);
    }

    /** Mean over the GPUs of {@code mask} of the link score to their best partner in it. */
    double partnerLeft(long mask, int count) {
        double sum = 0;
        long m = mask;
        while (m != 0) {
            int r = Long.numberOfTrailingZeros(m);
            m &= m - 1;
            for (int p : partners[r]) {
                if ((mask >>> p & 1L) != 0) {
                    sum += link[r * size + p];
                    break;
                }
            }
        }
        return sum / count;
    }
}
