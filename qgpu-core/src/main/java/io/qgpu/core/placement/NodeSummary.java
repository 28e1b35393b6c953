package io.qgpu.core.placement;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GpuState;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Holding;
import io.qgpu.api.NodeState;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Selectors;
import io.qgpu.api.Topology;

/**
 * One node state flattened for the engine's hot loop. Computed once per {@link NodeState} instance
 * (node states are immutable and replaced on every change) and cached by the engine.
 *
 * <p>Layout, chosen so that scanning ten thousand nodes touches few cache lines: the per-class
 * aggregates of the node precheck are plain fields of this object, next to the state reference the
 * cache compares; each GPU's admission data is packed into two longs of one array:
 * <pre>
 *   packed[2i]     free memory, bytes
 *   packed[2i + 1] bits  0..7   online guaranteed compute free + 1 (clamped to 0..101)
 *                  bits  8..15  offline guaranteed compute free + 1
 *                  bits 16..35  tenants        (saturating at 2^20 - 1)
 *                  bits 36..55  maxTenants     (saturating at 2^20 - 1; 1 for a MIG instance kept whole)
 *                  bits 56..63  flags: open, empty, reserved online, reserved offline,
 *                               holds an anti-affinity label, holds an exclusion label,
 *                               holds an online / offline tenant with compute request 0
 * </pre>
 * (A request is 0..100, so clamping a free value below 0 to -1 keeps every comparison exact.)
 *
 * <p>{@link #admits} is exactly {@code Admission.checkGpu(...).isEmpty()} without building reasons;
 * a test checks the two agree on random states and claims.
 *
 * <p>Thread safety: immutable (all fields final, arrays never written after construction), so
 * instances are safely shared between threads.
 */
final class NodeSummary {
    static final byte RES_ONLINE = 1;
    static final byte RES_OFFLINE = 2;

    private static final long F_OPEN = 1L << 56;
    private static final long F_EMPTY = 2L << 56;
    private static final long F_RES_ONLINE = 4L << 56;
    private static final long F_RES_OFFLINE = 8L << 56;
    private static final long F_ANTI = 16L << 56;
    private static final long F_EXCLUSION = 32L << 56;
    /** A tenant with compute request 0 of the online / offline class holds the GPU. */
    private static final long F_ZERO_ONLINE = 64L << 56;
    private static final long F_ZERO_OFFLINE = 128L << 56;
    private static final long COUNT_MASK = (1L << 20) - 1;

    final NodeState state;
    final Topo topo;
    final int size;
    final boolean anyAffinity;
    final double nodeLoad;
    // aggregates over open GPUs not kept for the other class
    final int openOnline;
    final int emptyOnline;
    final long maxMemOnline;
    final int maxComputeOnline;
    final int openOffline;
    final int emptyOffline;
    final long maxMemOffline;
    final int maxComputeOffline;
    private final long[] packed;
    /** Exclusion label of each GPU's holders (null when none or empty); read only when a label is involved. */
    private final String[] exclusion;
    /** {@link PlacementScores#gpuLoad} of each GPU; read by the set search and explain. */
    final double[] load;
    /** CPU NUMA node of each GPU ({@code -1} unknown). */
    final int[] numa;
    /**
     * Bit {@code i} set when GPU {@code i} is healthy and empty: what a multi-GPU claim of whole GPUs
     * could still use. Only for nodes of at most 64 GPUs; larger nodes skip the look-ahead.
     */
    final long freeMask;
    /** Free CPU (millicores) and host memory (bytes) of the node; {@code Long.MAX_VALUE} when not tracked. */
    final long cpuFree;
    final long hostMemFree;
    /** {@link NodeIndex} keys of this state for each class. */
    private final long keyOnline;
    private final long keyOffline;

    private NodeSummary(NodeState state, Topo topo, GranularityRules rules) {
        this.state = state;
        this.topo = topo;
        int n = state.gpus().size();
        this.size = n;
        packed = new long[2 * n];
        exclusion = new String[n];
        load = new double[n];
        numa = new int[n];
        long free = 0;
        boolean affinity = false;
        double loadSum = 0;
        int healthy = 0;
        int oOn = 0;
        int eOn = 0;
        int cOn = -1;
        int oOff = 0;
        int eOff = 0;
        int cOff = -1;
        long mOn = Long.MIN_VALUE;
        long mOff = Long.MIN_VALUE;
        for (int i = 0; i < n; i++) {
            GpuState g = state.gpu(i);
            GpuDevice d = g.device();
            long memFree = g.memoryFree();
            int freeOn = clampCompute(g.computeFree(PriorityClass.ONLINE));
            int freeOff = clampCompute(g.computeFree(PriorityClass.OFFLINE));
            boolean open = d.healthy() && !g.heldExclusively();
            boolean empty = g.isEmpty();
            long flags = (open ? F_OPEN : 0) | (empty ? F_EMPTY : 0);
            if (d.reservedFor().isPresent()) {
                flags |= d.reservedFor().get() == PriorityClass.ONLINE ? F_RES_ONLINE : F_RES_OFFLINE;
            }
            for (Holding h : g.holdings()) {
                if (h.locality().antiAffinity().isPresent()) {
                    flags |= F_ANTI;
                }
                if (h.computeRequest() == 0) {
                    flags |= h.priority() == PriorityClass.ONLINE ? F_ZERO_ONLINE : F_ZERO_OFFLINE;
                }
                affinity |= h.locality().affinity().isPresent();
            }
            exclusion[i] = g.exclusionLabel().orElse(null);
            if (exclusion[i] != null) {
                flags |= F_EXCLUSION;
            }
            long tenants = Math.min(g.tenants(), COUNT_MASK);
            long max = Math.min(rules.maxTenants(d), COUNT_MASK);
            packed[2 * i] = memFree;
            packed[2 * i + 1] = (freeOn + 1) | ((long) (freeOff + 1) << 8) | (tenants << 16) | (max << 36) | flags;
            load[i] = PlacementScores.gpuLoad(g, rules);
            numa[i] = d.numaNode();
            if (d.healthy() && empty && i < 64) {
                free |= 1L << i;
            }
            if (d.healthy()) {
                loadSum += load[i];
                healthy++;
            }
            if (open) {
                if ((flags & F_RES_OFFLINE) == 0) {
                    oOn++;
                    eOn += empty ? 1 : 0;
                    mOn = Math.max(mOn, memFree);
                    cOn = Math.max(cOn, freeOn);
                }
                if ((flags & F_RES_ONLINE) == 0) {
                    oOff++;
                    eOff += empty ? 1 : 0;
                    mOff = Math.max(mOff, memFree);
                    cOff = Math.max(cOff, freeOff);
                }
            }
        }
        this.cpuFree = state.cpuMillisFree().orElse(Long.MAX_VALUE);
        this.hostMemFree = state.hostMemoryFree().orElse(Long.MAX_VALUE);
        this.freeMask = n <= 64 ? free : 0;
        this.anyAffinity = affinity;
        this.nodeLoad = healthy == 0 ? 1.0 : loadSum / healthy;
        this.openOnline = oOn;
        this.emptyOnline = eOn;
        this.maxMemOnline = mOn;
        this.maxComputeOnline = cOn;
        this.openOffline = oOff;
        this.emptyOffline = eOff;
        this.maxMemOffline = mOff;
        this.maxComputeOffline = cOff;
        this.keyOnline = NodeIndex.key(nodeLoad, oOn, eOn, cOn, mOn);
        this.keyOffline = NodeIndex.key(nodeLoad, oOff, eOff, cOff, mOff);
    }

    /** Whether every GPU of {@code set[0..len)} reports the same known NUMA node. */
    boolean sameKnownNuma(int[] set, int len) {
        int first = numa[set[0]];
        if (first < 0) {
            return false;
        }
        for (int i = 1; i < len; i++) {
            if (numa[set[i]] != first) {
                return false;
            }
        }
        return true;
    }

    /**
     * {@code left(free \ S)}: what the set leaves behind for the next multi-GPU claims, the mean over
     * the free GPUs left of the link score to their best free partner (0 when fewer than two are
     * left; 1 on nodes of more than 64 GPUs, which skip the look-ahead). See {@link PlacementScores}.
     */
    double leftAfter(int[] set, int len) {
        if (size > 64) {
            return 1.0;
        }
        long mask = freeMask;
        for (int i = 0; i < len; i++) {
            mask &= ~(1L << set[i]);
        }
        return topo.left(mask);
    }

    /** The {@link NodeIndex} key of this state for the class. */
    long key(boolean online) {
        return online ? keyOnline : keyOffline;
    }

    private static int clampCompute(int free) {
        return Math.max(-1, Math.min(100, free));
    }

    /** The summary of {@code state}, reusing the topology tables of {@code previous} when the topology is the same. */
    static NodeSummary of(NodeState state, NodeSummary previous, GranularityRules rules) {
        Topology t = state.node().topology();
        Topo topo = previous != null && previous.topo.topology == t ? previous.topo : new Topo(t);
        return new NodeSummary(state, topo, rules);
    }

    /**
     * Whether the node can possibly hold the claim: its free CPU and host memory cover the claim's
     * (exactly the ledger's host rule), enough open GPUs of the claim's class (empty ones for an
     * exclusive claim), and the largest free memory and free compute each suffice. Never false for a
     * node that has {@code k} admissible GPUs and room for the host resources.
     */
    boolean precheck(ClaimShape c) {
        if (c.cpuMillis > cpuFree || c.hostMemory > hostMemFree) {
            return false;   // exactly HostAdmission.check(state, claim).isEmpty()
        }
        if (c.hostOnly) {
            return true;
        }
        if (c.online) {
            return c.exclusive ? emptyOnline >= c.k
                    : openOnline >= c.k && maxMemOnline >= c.memory && maxComputeOnline >= c.minComputeFree;
        }
        return c.exclusive ? emptyOffline >= c.k
                : openOffline >= c.k && maxMemOffline >= c.memory && maxComputeOffline >= c.minComputeFree;
    }

    /** Exactly {@code Admission.checkGpu(state.gpu(i), claim, memory, rules).isEmpty()}. */
    boolean admits(int i, ClaimShape c) {
        long bits = packed[2 * i + 1];
        if ((bits & F_OPEN) == 0) {
            return false;
        }
        if ((bits & (c.online ? F_RES_OFFLINE : F_RES_ONLINE)) != 0) {
            return false;
        }
        if (c.gpuSelectors) {
            GpuDevice d = state.gpu(i).device();
            Selectors s = c.claim.selectors();
            if (!s.allowsModel(d) || !s.allowsUuid(d)) {
                return false;
            }
        }
        boolean empty = (bits & F_EMPTY) != 0;
        if (c.exclusive) {
            // an exclusive slice takes the whole device: only an empty GPU has all its memory and compute free
            return empty;
        }
        if (packed[2 * i] < c.memory) {
            return false;
        }
        int free = (int) ((c.online ? bits : bits >>> 8) & 0xFF) - 1;
        if (free < c.minComputeFree) {
            // minComputeFree is the request, or 1 for a zero request the rules refuse on a booked GPU
            return false;
        }
        if (c.refuseZeroStarving && c.compute > 0 && free == c.compute
                && (bits & (c.online ? F_ZERO_ONLINE : F_ZERO_OFFLINE)) != 0) {
            return false;   // booking the last percent would starve a zero-request tenant of the class
        }
        long tenants = (bits >>> 16) & COUNT_MASK;
        long max = (bits >>> 36) & COUNT_MASK;
        if (tenants + 1 > max) {
            return false;
        }
        if (c.anti != null && (bits & F_ANTI) != 0 && state.gpu(i).hasAntiAffinity(c.anti)) {
            return false;
        }
        if (empty) {
            return true;
        }
        // a GPU with holders takes only tenants with the same exclusion label, or none when it has none
        boolean hasLabel = (bits & F_EXCLUSION) != 0;
        if (c.exclusion == null) {
            return !hasLabel;
        }
        return hasLabel && c.exclusion.equals(exclusion[i]);
    }

    /** Link tables of one topology, shared by every summary of nodes with that topology instance. */
    static final class Topo {
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

        Topo(Topology t) {
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
                java.util.Arrays.sort(others, (x, y) -> {
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
            java.util.List<Long> out = new java.util.ArrayList<>();
            long all = size == 64 ? -1L : (1L << size) - 1;
            boolean complete = cliques(adj, 0L, all, 0L, out);
            return complete ? out.stream().mapToLong(Long::longValue).toArray() : new long[0];
        }

        private static boolean cliques(long[] adj, long r, long p, long x, java.util.List<Long> out) {
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
            return 0.5 * partnerLeft(mask, count) + 0.5 * cliqueLeft(mask);
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
}
