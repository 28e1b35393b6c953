package io.qgpu.core.placement;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuState;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Holding;
import io.qgpu.api.NodeState;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Selectors;
import io.qgpu.api.Topology;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * One node state flattened for the engine's hot loop. Computed once per {@link NodeState} instance
 * (node states are immutable and replaced on every change) and cached by the engine; made from the
 * node's previous summary, it reads again only the GPUs whose state objects changed ({@link #of}).
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
 * <p>{@link #admits} is exactly {@code AdmissionRules.checkGpu(...).isEmpty()} without building reasons;
 * a test checks the two agree on random states and claims.
 *
 * <p>Thread safety: immutable (all fields final, arrays never written after construction) but for
 * the table of {@link #singleGpuLefts}, made on first use from the final fields and published whole
 * through a volatile field (threads that race make equal tables), so instances are safely shared
 * between threads.
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

    /** Summaries made so far in this process ({@link #serial}). */
    private static final AtomicLong SERIALS = new AtomicLong();

    /**
     * A number no other summary of this process has (the count of summaries made before it): two
     * summaries have the same serial only when they are the same object, so the {@link SetMemo} keys
     * by it without holding the summary (64 bits: at a billion summaries a second it wraps after
     * 292 years).
     */
    final long serial = SERIALS.incrementAndGet();
    final NodeState state;
    final NodeTopo topo;
    final int size;
    final boolean anyAffinity;
    final double nodeLoad;
    // aggregates over open GPUs not kept for the other class; the largest free memory and compute
    // only over those that also have a free tenant slot (a GPU without one admits no shared claim)
    final int openOnline;
    final int emptyOnline;
    final long maxMemOnline;
    final int maxComputeOnline;
    final int openOffline;
    final int emptyOffline;
    final long maxMemOffline;
    final int maxComputeOffline;
    /** Open GPUs usable by the class with a free tenant slot. */
    final int slotsOnline;
    final int slotsOffline;
    /** The refusal tiers and levels of each class ({@link RefusalTiers}). */
    private final RefusalTiers tiersOnline;
    private final RefusalTiers tiersOffline;
    /** The rules the summary was made under (for the words of a refusal). */
    private final GranularityRules rules;
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
    /**
     * Bit {@code i} set when GPU {@code i} is healthy, busy or not: the GPUs a single-GPU claim's
     * connectivity tie-break ({@link #connectivityAfter}) counts. Only for nodes of at most 64 GPUs.
     */
    final long healthyMask;
    /** Free CPU (millicores) and host memory (bytes) of the node; {@code Long.MAX_VALUE} when not tracked. */
    final long cpuFree;
    final long hostMemFree;
    /**
     * {@link #singleGpuLefts}, made on first use (null until then): the one field written after
     * construction, once per racing caller, always with the same values.
     */
    private volatile double @Nullable [] singleGpuLefts;
    /** {@link NodeIndex} keys of this state for each class. */
    private final long keyOnline;
    private final long keyOffline;

    @SuppressWarnings("ReferenceEquality") // identity meant: the same rules object, so the same per-GPU values
    private NodeSummary(NodeState state, NodeTopo topo, GranularityRules rules, @Nullable NodeSummary previous,
                        GpuReuse reuse) {
        this.state = state;
        this.topo = topo;
        this.rules = rules;
        int n = state.gpus().size();
        this.size = n;
        packed = new long[2 * n];
        exclusion = new String[n];
        load = new double[n];
        numa = new int[n];
        NodeSummary before = previous != null && previous.rules == rules ? previous : null;
        long free = 0;
        long healthyBits = 0;
        boolean affinity = false;
        double loadSum = 0;
        int healthy = 0;
        int oOn = 0;
        int eOn = 0;
        int cOn = -1;
        int oOff = 0;
        int eOff = 0;
        int cOff = -1;
        int sOn = 0;
        int sOff = 0;
        long mOn = Long.MIN_VALUE;
        long mOff = Long.MIN_VALUE;
        long[] memsOn = new long[n];
        long[] memsOff = new long[n];
        int[] cptsOn = new int[n];
        int[] cptsOff = new int[n];
        for (int i = 0; i < n; i++) {
            GpuState g = state.gpu(i);
            GpuDevice d = g.device();
            if (before != null && i < before.size && reuse.same(before.state.gpu(i), g)) {
                // the GPU's state object is the one the previous summary read: its values are these
                packed[2 * i] = before.packed[2 * i];
                packed[2 * i + 1] = before.packed[2 * i + 1];
                exclusion[i] = before.exclusion[i];
                load[i] = before.load[i];
                numa[i] = before.numa[i];
                affinity |= before.anyAffinity && holdsAffinity(g);
            } else {
                // a booked GPU keeps its device object: its tenant cap under the same rules is known
                int known = before != null && i < before.size && before.state.gpu(i).device() == d
                        ? before.maxTenants(i) : -1;
                affinity |= read(i, g, rules, known);
            }
            long memFree = packed[2 * i];
            long bits = packed[2 * i + 1];
            int freeOn = (int) (bits & 0xFF) - 1;
            int freeOff = (int) ((bits >>> 8) & 0xFF) - 1;
            boolean open = (bits & F_OPEN) != 0;
            boolean empty = (bits & F_EMPTY) != 0;
            long tenants = (bits >>> 16) & COUNT_MASK;
            long max = (bits >>> 36) & COUNT_MASK;
            if (d.healthy() && empty && i < 64) {
                free |= 1L << i;
            }
            if (d.healthy() && i < 64) {
                healthyBits |= 1L << i;
            }
            if (d.healthy()) {
                loadSum += load[i];
                healthy++;
            }
            if (open) {
                boolean slot = tenants < max;
                if ((bits & F_RES_OFFLINE) == 0) {
                    sOn += slot ? 1 : 0;
                    oOn++;
                    eOn += empty ? 1 : 0;
                    if (slot) {
                        mOn = Math.max(mOn, memFree);
                        cOn = Math.max(cOn, freeOn);
                        memsOn[sOn - 1] = memFree;
                        cptsOn[sOn - 1] = freeOn;
                    }
                }
                if ((bits & F_RES_ONLINE) == 0) {
                    sOff += slot ? 1 : 0;
                    oOff++;
                    eOff += empty ? 1 : 0;
                    if (slot) {
                        mOff = Math.max(mOff, memFree);
                        cOff = Math.max(cOff, freeOff);
                        memsOff[sOff - 1] = memFree;
                        cptsOff[sOff - 1] = freeOff;
                    }
                }
            }
        }
        this.cpuFree = state.cpuMillisFree().orElse(Long.MAX_VALUE);
        this.hostMemFree = state.hostMemoryFree().orElse(Long.MAX_VALUE);
        this.freeMask = n <= 64 ? free : 0;
        this.healthyMask = n <= 64 ? healthyBits : 0;
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
        this.slotsOnline = sOn;
        this.slotsOffline = sOff;
        this.keyOnline = NodeIndex.key(nodeLoad, oOn, sOn, eOn, cOn, mOn);
        this.keyOffline = NodeIndex.key(nodeLoad, oOff, sOff, eOff, cOff, mOff);
        this.tiersOnline = new RefusalTiers(memsOn, cptsOn, sOn);
        this.tiersOffline = new RefusalTiers(memsOff, cptsOff, sOff);
    }

    /**
     * Reads GPU {@code i}'s admission data, free memory and compute, tenants, flags, exclusion label,
     * load and NUMA node from its state into this summary's arrays; true when one of its holdings
     * carries an affinity label. {@code knownMaxTenants}: the device's tenant cap under {@code rules}
     * when known, else -1.
     */
    private boolean read(int i, GpuState g, GranularityRules rules, int knownMaxTenants) {
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
        boolean affinity = false;
        if (!empty) {
            java.util.List<Holding> holdings = g.holdings();
            for (int j = 0; j < holdings.size(); j++) {   // by index: no iterator per GPU read
                Holding h = holdings.get(j);
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
        }
        long tenants = Math.min(g.tenants(), COUNT_MASK);
        int maxTenants = knownMaxTenants >= 0 ? knownMaxTenants : rules.maxTenants(d);
        long max = Math.min(maxTenants, COUNT_MASK);
        packed[2 * i] = memFree;
        packed[2 * i + 1] = (freeOn + 1) | ((long) (freeOff + 1) << 8) | (tenants << 16) | (max << 36) | flags;
        load[i] = PlacementScores.gpuLoad(g, maxTenants);
        numa[i] = d.numaNode();
        return affinity;
    }

    /** GPU {@code i}'s tenant cap as read ({@code rules.maxTenants}), or -1 when it saturated its field. */
    private int maxTenants(int i) {
        long max = (packed[2 * i + 1] >>> 36) & COUNT_MASK;
        return max == COUNT_MASK ? -1 : (int) max;
    }

    /** Whether one of the GPU's holdings carries an affinity label. */
    private static boolean holdsAffinity(GpuState g) {
        java.util.List<Holding> holdings = g.holdings();
        for (int j = 0; j < holdings.size(); j++) {
            if (holdings.get(j).locality().affinity().isPresent()) {
                return true;
            }
        }
        return false;
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

    /**
     * {@code left(healthy \ S)}: how well the node's healthy GPUs other than the set stay connected,
     * busy or not (the look-ahead's {@code left} over every healthy GPU rather than the idle ones);
     * the last tie-break of a single-GPU claim, so that at equal load the worst-connected GPU goes
     * first. 1 on nodes of more than 64 GPUs (no tie-break there).
     */
    double connectivityAfter(int[] set, int len) {
        if (size > 64) {
            return 1.0;
        }
        long mask = healthyMask;
        for (int i = 0; i < len; i++) {
            mask &= ~(1L << set[i]);
        }
        return topo.left(mask);
    }

    /**
     * For each GPU {@code g}: at {@code 2g} {@link #leftAfter} of the set {@code {g}}, at {@code 2g + 1}
     * {@link #connectivityAfter} of it, computed by those methods. Neither depends on a claim, so a
     * single-GPU set search reads them here instead of asking {@link NodeTopo#left} for every GPU of
     * every search. Made on the first call and kept; the caller must not write the array.
     */
    double[] singleGpuLefts() {
        double[] v = singleGpuLefts;
        if (v == null) {
            v = new double[2 * size];
            int[] one = new int[1];
            for (int g = 0; g < size; g++) {
                one[0] = g;
                v[2 * g] = leftAfter(one, 1);
                v[2 * g + 1] = connectivityAfter(one, 1);
            }
            singleGpuLefts = v;   // a volatile write after the array's: a reader sees it whole or not at all
        }
        return v;
    }

    /** The {@link NodeIndex} key of this state for the class. */
    long key(boolean online) {
        return online ? keyOnline : keyOffline;
    }

    private static int clampCompute(int free) {
        return Math.max(-1, Math.min(100, free));
    }

    /**
     * The summary of {@code state}, reusing the topology tables of {@code previous} when its node has
     * the same topology object, else the tables shared by every equal topology ({@link NodeTopo#of}),
     * and the values of each GPU whose state object is the one {@code previous} was made from
     * ({@link #SAME_STATE}): after a commit only the GPUs it booked are read again. Equal, field for
     * field, to the summary made without {@code previous} ({@code NodeSummaryReuseTest}).
     */
    static NodeSummary of(NodeState state, @Nullable NodeSummary previous, GranularityRules rules) {
        return of(state, previous, rules, SAME_STATE);
    }

    /**
     * {@link #of(NodeState, NodeSummary, GranularityRules)} with the test of when a GPU's values may be
     * taken from {@code previous} rather than read again; the engine's is {@link #SAME_STATE}. (Another
     * test is passed only by the deliberately wrong summaries of the tests.)
     */
    @SuppressWarnings("ReferenceEquality") // identity meant: the same immutable topology object shares its tables
    static NodeSummary of(NodeState state, @Nullable NodeSummary previous, GranularityRules rules, GpuReuse reuse) {
        Topology t = state.node().topology();
        NodeTopo topo = previous != null && previous.state.node().topology() == t ? previous.topo : NodeTopo.of(t);
        return new NodeSummary(state, topo, rules, previous, reuse);
    }

    /**
     * When a GPU's values in a previous summary stand for its state now.
     *
     * <p>Thread safety: implementations are pure functions of their arguments (summaries are made on
     * any thread that refreshes the index).
     */
    interface GpuReuse {
        /** Whether the values read from {@code before} are exactly those of {@code now}. */
        boolean same(GpuState before, GpuState now);
    }

    /**
     * The same {@link GpuState} object: a GPU state is immutable and every value of a GPU in the summary
     * is read from it and the granularity rules alone (a summary reuses values only under the same rules
     * object), so the values are those a full read would give, bit for bit. A commit replaces the states
     * of the GPUs it books and keeps the others' objects, so after it only those GPUs are read again.
     */
    @SuppressWarnings("ReferenceEquality") // identity meant: an immutable GPU state
    static final GpuReuse SAME_STATE = (before, now) -> before == now;

    /**
     * Null when the node can possibly hold the claim, else the first of these per-node summaries that
     * refuses it, in this order (the order {@link NodeIndex#cause} follows on a key): free whole GPUs
     * of the claim's class for an exclusive claim ({@code EXCLUSIVE}); open GPUs of the class
     * ({@code NOT_ENOUGH_GPUS}); open GPUs with a free tenant slot ({@code TOO_MANY_TENANTS}); the
     * largest free memory on one of those ({@code INSUFFICIENT_MEMORY}); the largest free guaranteed
     * compute of the class on one of those ({@code INSUFFICIENT_COMPUTE}); for a shared claim, the
     * refusal tiers and levels ({@link #tierCause}, {@link RefusalTiers}). Never refuses a node that
     * has {@code k} admissible GPUs. Then the node's free CPU ({@code INSUFFICIENT_CPU}) and free host
     * memory ({@code INSUFFICIENT_HOST_MEMORY}), exactly the ledger's host rule; they come after the GPU
     * aggregates so that a node the key refuses ({@link NodeIndex#cause}, GPUs only) has the same cause
     * here. A host-only claim is decided by the host resources alone.
     */
    @Nullable ReasonCode precheckCause(ClaimShape c) {
        ReasonCode gpus = c.hostOnly ? null : gpuCause(c);
        if (gpus != null) {
            return gpus;
        }
        if (c.cpuMillis > cpuFree) {
            return ReasonCode.INSUFFICIENT_CPU;
        }
        if (c.hostMemory > hostMemFree) {
            return ReasonCode.INSUFFICIENT_HOST_MEMORY;
        }
        return null;
    }

    /** The first GPU aggregate that refuses the claim, in {@link #precheckCause}'s order, or null. */
    private @Nullable ReasonCode gpuCause(ClaimShape c) {
        boolean on = c.online;
        if (c.exclusive) {
            return (on ? emptyOnline : emptyOffline) < c.k ? ReasonCode.EXCLUSIVE : null;
        }
        if ((on ? openOnline : openOffline) < c.k) {
            return ReasonCode.NOT_ENOUGH_GPUS;
        }
        if ((on ? slotsOnline : slotsOffline) < c.k) {
            return ReasonCode.TOO_MANY_TENANTS;
        }
        if ((on ? maxMemOnline : maxMemOffline) < c.memory) {
            return ReasonCode.INSUFFICIENT_MEMORY;
        }
        if ((on ? maxComputeOnline : maxComputeOffline) < c.minComputeFree) {
            return ReasonCode.INSUFFICIENT_COMPUTE;
        }
        return tierCause(c);
    }

    /**
     * The refusal tiers of a shared claim ({@link RefusalTiers}): for 2 to 14 GPUs the tiers (the
     * {@code t}-th largest free memory, tiers 4 and 8, then the {@code t}-th largest free compute of
     * the class, tiers 2, 4, 8, exact), then for every shared claim with GPUs its level: the
     * {@code min(k, 8)}-th largest free memory among the GPUs with the level's compute, decided on the
     * level key itself ({@link RefusalTiers#levelCause}); null when none refuses.
     */
    private @Nullable ReasonCode tierCause(ClaimShape c) {
        RefusalTiers r = tiers(c.online);
        int t = RefusalTiers.tier(c.k);
        if (c.tiered) {
            if (t >= 4 && (t == 8 ? r.mem8 : r.mem4) < c.memory) {
                return ReasonCode.INSUFFICIENT_MEMORY;
            }
            if ((t == 8 ? r.cpt8 : t == 4 ? r.cpt4 : r.cpt2) < c.minComputeFree) {
                return ReasonCode.INSUFFICIENT_COMPUTE;
            }
        }
        return c.levelled ? RefusalTiers.levelCause(r.level(c.level), c) : null;
    }

    /** The refusal tiers of the class. */
    RefusalTiers tiers(boolean online) {
        return online ? tiersOnline : tiersOffline;
    }

    /** Whether the node can possibly hold the claim ({@link #precheckCause} finds nothing). */
    boolean precheck(ClaimShape c) {
        return precheckCause(c) == null;
    }

    /**
     * Null when GPU {@code i} admits the claim ({@link #admits}), else the code of the first rule that
     * refuses it, in {@link #admits}'s order (the first reason {@code AdmissionRules.checkGpu} would give,
     * except that a held-exclusively GPU is {@code EXCLUSIVE} after the health and selector checks).
     */
    @Nullable ReasonCode failure(int i, ClaimShape c) {
        if (admits(i, c)) {
            return null;
        }
        long bits = packed[2 * i + 1];
        GpuDevice d = state.gpu(i).device();
        if (!d.healthy()) {
            return ReasonCode.UNHEALTHY;
        }
        if ((bits & (c.online ? F_RES_OFFLINE : F_RES_ONLINE)) != 0) {
            return ReasonCode.RESERVED_FOR_OTHER_CLASS;
        }
        Selectors sel = c.claim.selectors();
        if (!sel.allowsModel(d)) {
            return ReasonCode.MODEL_NOT_SELECTED;
        }
        if (!sel.allowsUuid(d)) {
            return ReasonCode.UUID_NOT_SELECTED;
        }
        if ((bits & F_OPEN) == 0 || c.exclusive) {
            return ReasonCode.EXCLUSIVE;
        }
        if (packed[2 * i] < c.memory) {
            return ReasonCode.INSUFFICIENT_MEMORY;
        }
        int free = (int) ((c.online ? bits : bits >>> 8) & 0xFF) - 1;
        if (free < c.minComputeFree || (c.refuseZeroStarving && c.compute > 0 && free == c.compute
                && (bits & (c.online ? F_ZERO_ONLINE : F_ZERO_OFFLINE)) != 0)) {
            return ReasonCode.INSUFFICIENT_COMPUTE;
        }
        if (((bits >>> 16) & COUNT_MASK) + 1 > ((bits >>> 36) & COUNT_MASK)) {
            return rules.keepsWhole(d) ? ReasonCode.MIG_INSTANCE_IN_USE : ReasonCode.TOO_MANY_TENANTS;
        }
        if (c.anti != null && state.gpu(i).hasAntiAffinity(c.anti)) {
            return ReasonCode.ANTI_AFFINITY;
        }
        return ReasonCode.EXCLUSION;
    }

    /** Exactly {@code AdmissionRules.checkGpu(state.gpu(i), claim, memory, rules).isEmpty()}. */
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
}
