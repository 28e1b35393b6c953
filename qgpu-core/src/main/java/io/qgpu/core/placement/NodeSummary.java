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
import java.util.Objects;

/**
 * One node state flattened into primitive arrays, with per-class aggregates for a cheap node-level
 * precheck. Computed once per {@link NodeState} instance (node states are immutable and replaced on
 * every change) and cached by the engine.
 *
 * <p>{@link #admits} is exactly {@code Admission.checkGpu(...).isEmpty()} without building reasons;
 * a test checks the two agree on random states and claims.
 *
 * <p>Thread safety: immutable (all fields final), so instances are safely shared between threads.
 */
final class NodeSummary {
    static final byte RES_NONE = 0;
    static final byte RES_ONLINE = 1;
    static final byte RES_OFFLINE = 2;

    final NodeState state;
    final Topo topo;
    final int size;
    final long[] memFree;
    final int[] freeOnline;
    final int[] freeOffline;
    final int[] tenants;
    final int[] maxTenants;
    /** Healthy and not held exclusively. */
    final boolean[] open;
    final boolean[] empty;
    final byte[] reservedFor;
    /** Exclusion label of the holders, null when none or empty. */
    final String[] exclusion;
    final boolean[] anyAnti;
    final boolean anyAffinity;
    final double[] load;
    final double nodeLoad;
    /** Per class (0 online, 1 offline), over open GPUs not kept for the other class. */
    final int[] openFor = new int[2];
    final int[] emptyFor = new int[2];
    final long[] maxMemFreeFor = new long[2];
    final int[] maxComputeFreeFor = new int[2];

    private NodeSummary(NodeState state, Topo topo, GranularityRules rules) {
        this.state = state;
        this.topo = topo;
        int n = state.gpus().size();
        this.size = n;
        memFree = new long[n];
        freeOnline = new int[n];
        freeOffline = new int[n];
        tenants = new int[n];
        maxTenants = new int[n];
        open = new boolean[n];
        empty = new boolean[n];
        reservedFor = new byte[n];
        exclusion = new String[n];
        anyAnti = new boolean[n];
        load = new double[n];
        boolean affinity = false;
        double loadSum = 0;
        int healthy = 0;
        for (int i = 0; i < n; i++) {
            GpuState g = state.gpu(i);
            GpuDevice d = g.device();
            memFree[i] = g.memoryFree();
            freeOnline[i] = g.computeFree(PriorityClass.ONLINE);
            freeOffline[i] = g.computeFree(PriorityClass.OFFLINE);
            tenants[i] = g.tenants();
            maxTenants[i] = rules.maxTenants(d);
            open[i] = d.healthy() && !g.heldExclusively();
            empty[i] = g.isEmpty();
            reservedFor[i] = d.reservedFor().isEmpty() ? RES_NONE
                    : d.reservedFor().get() == PriorityClass.ONLINE ? RES_ONLINE : RES_OFFLINE;
            exclusion[i] = g.exclusionLabel().orElse(null);
            for (Holding h : g.holdings()) {
                anyAnti[i] |= h.locality().antiAffinity().isPresent();
                affinity |= h.locality().affinity().isPresent();
            }
            load[i] = PlacementScores.gpuLoad(g, rules);
            if (d.healthy()) {
                loadSum += load[i];
                healthy++;
            }
            if (open[i]) {
                for (int c = 0; c < 2; c++) {
                    byte other = c == 0 ? RES_OFFLINE : RES_ONLINE;
                    if (reservedFor[i] == other) {
                        continue;
                    }
                    openFor[c]++;
                    if (empty[i]) {
                        emptyFor[c]++;
                    }
                    maxMemFreeFor[c] = Math.max(maxMemFreeFor[c], memFree[i]);
                    maxComputeFreeFor[c] = Math.max(maxComputeFreeFor[c], c == 0 ? freeOnline[i] : freeOffline[i]);
                }
            }
        }
        this.anyAffinity = affinity;
        this.nodeLoad = healthy == 0 ? 1.0 : loadSum / healthy;
    }

    /** The summary of {@code state}, reusing the topology tables of {@code previous} when the topology is the same. */
    static NodeSummary of(NodeState state, NodeSummary previous, GranularityRules rules) {
        Topology t = state.node().topology();
        Topo topo = previous != null && previous.topo.topology == t ? previous.topo : new Topo(t);
        return new NodeSummary(state, topo, rules);
    }

    /** Whether the node can possibly hold the claim: enough open GPUs, and the largest free memory and compute suffice. */
    boolean precheck(ClaimShape c) {
        int cls = c.cls;
        if (c.exclusive) {
            return emptyFor[cls] >= c.k;
        }
        return openFor[cls] >= c.k && maxMemFreeFor[cls] >= c.memory && maxComputeFreeFor[cls] >= c.compute;
    }

    /** Exactly {@code Admission.checkGpu(state.gpu(i), claim, memory, rules).isEmpty()}. */
    boolean admits(int i, ClaimShape c) {
        if (!open[i]) {
            return false;
        }
        byte r = reservedFor[i];
        if (r != RES_NONE && r != c.classCode) {
            return false;
        }
        if (c.gpuSelectors) {
            GpuDevice d = state.gpu(i).device();
            Selectors s = c.claim.selectors();
            if (!s.allowsModel(d) || !s.allowsUuid(d)) {
                return false;
            }
        }
        if (c.exclusive) {
            // an exclusive slice takes the whole device: only an empty GPU has all its memory and compute free
            return empty[i];
        }
        if (memFree[i] < c.memory) {
            return false;
        }
        if ((c.online ? freeOnline[i] : freeOffline[i]) < c.compute) {
            return false;
        }
        if (tenants[i] + 1 > maxTenants[i]) {
            return false;
        }
        if (c.anti != null && anyAnti[i] && state.gpu(i).hasAntiAffinity(c.anti)) {
            return false;
        }
        return empty[i] || Objects.equals(exclusion[i], c.exclusion);
    }

    /** Link tables of one topology, shared by every summary of nodes with that topology instance. */
    static final class Topo {
        final Topology topology;
        final int size;
        final int maxLanes;
        /** linkScore of pair (a, b) at {@code a * size + b}. */
        final double[] link;
        final boolean[] nv;

        Topo(Topology t) {
            this.topology = t;
            this.size = t.size();
            this.maxLanes = PlacementScores.maxLanes(t);
            this.link = new double[size * size];
            this.nv = new boolean[size * size];
            for (int a = 0; a < size; a++) {
                for (int b = a + 1; b < size; b++) {
                    GpuLink l = t.link(a, b);
                    double s = PlacementScores.linkScore(l, maxLanes);
                    boolean isNv = l instanceof GpuLink.NvLink;
                    link[a * size + b] = s;
                    link[b * size + a] = s;
                    nv[a * size + b] = isNv;
                    nv[b * size + a] = isNv;
                }
            }
        }
    }
}
