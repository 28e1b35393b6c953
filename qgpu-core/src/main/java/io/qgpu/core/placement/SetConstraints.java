package io.qgpu.core.placement;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Selectors;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * The constraints a claim puts on its GPU set as a whole: must-include GPUs
 * ({@link Selectors#mustIncludeUuids()}, {@link Selectors#mustIncludeIndices()}) and
 * {@code numa: required}. Exact: {@link #shortfall} is null exactly when {@link SetSearch} finds a
 * set on the node.
 *
 * <p>Thread safety: stateless.
 */
final class SetConstraints {

    private SetConstraints() {
    }

    /** Positions of the must-include GPUs on the node (ascending), or null when one of them is not on it. */
    static int @Nullable [] mustPositions(NodeSummary s, ClaimShape c) {
        Selectors sel = c.claim.selectors();
        int found = 0;
        int[] out = new int[s.size];
        int uuids = 0;
        int indices = 0;
        for (int g = 0; g < s.size; g++) {
            GpuDevice d = s.state.gpu(g).device();
            boolean byUuid = sel.mustIncludeUuids().contains(d.uuid());
            boolean byIndex = sel.mustIncludeIndices().contains(d.index());
            uuids += byUuid ? 1 : 0;
            indices += byIndex ? 1 : 0;
            if (byUuid || byIndex) {
                out[found++] = g;
            }
        }
        if (uuids < sel.mustIncludeUuids().size() || indices < sel.mustIncludeIndices().size()) {
            return null;
        }
        return java.util.Arrays.copyOf(out, found);
    }

    /**
     * Null when a set of {@code c.k} among the admissible {@code cand[0..m)} contains every
     * must-include GPU and, with {@code numa: required}, lies on one known NUMA node; otherwise the
     * reasons it cannot, with quantities.
     */
    static @Nullable List<Reason> shortfall(NodeSummary s, ClaimShape c, int[] cand, int m) {
        String node = s.state.name();
        List<Reason> out = new ArrayList<>();
        int[] fixed = new int[0];
        if (c.mustInclude) {
            fixed = mustPositions(s, c);
            if (fixed == null) {
                Selectors sel = c.claim.selectors();
                out.add(Reason.of(ReasonCode.MUST_INCLUDE, node, "the claim must include GPU(s) " + missing(s, sel)
                        + ", which this node does not have"));
                return out;
            }
            for (int p : fixed) {
                if (!contains(cand, m, p)) {
                    out.add(Reason.of(ReasonCode.MUST_INCLUDE, s.state.gpu(p).uuid(),
                            "the claim must include this GPU, and it cannot take the claim"));
                }
            }
            if (!out.isEmpty()) {
                return out;
            }
        }
        if (!c.numaRequired) {
            return null;
        }
        Map<Integer, Integer> perNuma = new TreeMap<>();
        for (int i = 0; i < m; i++) {
            int n = s.numa[cand[i]];
            if (n >= 0) {
                perNuma.merge(n, 1, Integer::sum);
            }
        }
        int bestNuma = -1;
        int bestCount = 0;
        for (Map.Entry<Integer, Integer> e : perNuma.entrySet()) {
            boolean holdsFixed = true;
            for (int p : fixed) {
                holdsFixed &= s.numa[p] == e.getKey();
            }
            if (holdsFixed && e.getValue() > bestCount) {
                bestNuma = e.getKey();
                bestCount = e.getValue();
            }
        }
        if (bestCount >= c.k) {
            return null;
        }
        out.add(new Reason(ReasonCode.NUMA, node, c.k, bestCount, "numa: required, usable GPUs on one NUMA node"
                + (bestNuma >= 0 ? " (most on NUMA node " + bestNuma + ")" : " (no usable GPU with a known NUMA node"
                + (fixed.length > 0 ? " that holds every must-include GPU" : "") + ")")));
        return out;
    }

    private static String missing(NodeSummary s, Selectors sel) {
        List<String> out = new ArrayList<>();
        for (String u : sel.mustIncludeUuids()) {
            if (s.state.node().positionOf(u) < 0) {
                out.add(u);
            }
        }
        for (int i : sel.mustIncludeIndices()) {
            boolean has = false;
            for (int g = 0; g < s.size; g++) {
                has |= s.state.gpu(g).device().index() == i;
            }
            if (!has) {
                out.add("index " + i);
            }
        }
        return String.join(", ", out);
    }

    private static boolean contains(int[] a, int len, int v) {
        for (int i = 0; i < len; i++) {
            if (a[i] == v) {
                return true;
            }
        }
        return false;
    }
}
