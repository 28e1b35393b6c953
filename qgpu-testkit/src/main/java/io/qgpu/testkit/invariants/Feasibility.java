package io.qgpu.testkit.invariants;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.Selectors;
import io.qgpu.api.Validate;
import java.util.Collection;
import java.util.Map;
import java.util.Optional;

/**
 * An independent oracle for completeness: whether one claim fits a cluster on which nothing is
 * placed yet. A correct scheduler places exactly those claims on an empty cluster (locality labels
 * do not matter for a single tenant; topology only chooses among GPU sets that fit).
 *
 * <pre>{@code
 * boolean fits = Feasibility.fitsEmpty(inventory.rules(), inventory.nodes(), claim);
 * Optional<String> why = Feasibility.whyNot(inventory.rules(), inventory.nodes(), claim);
 * }</pre>
 *
 * <p>Thread safety: stateless.
 */
public final class Feasibility {

    private Feasibility() {
    }

    /** Whether some node has {@code claim.gpuCount()} GPUs that could each take the claim's slice. */
    public static boolean fitsEmpty(GranularityRules rules, Collection<Node> nodes, Claim claim) {
        return whyNot(rules, nodes, claim).isEmpty();
    }

    /** Empty when the claim fits an empty cluster, else a short reason. */
    public static Optional<String> whyNot(GranularityRules rules, Collection<Node> nodes, Claim claim) {
        Validate.notNull("feasibility.rules", rules);
        Validate.notNull("feasibility.nodes", nodes);
        Validate.notNull("feasibility.claim", claim);
        if (!claim.exclusive() && !claim.hostOnly() && (claim.memoryPerGpuBytes() < rules.minMemoryBytes()
                || claim.memoryPerGpuBytes() % rules.memoryUnitBytes() != 0)) {
            return Optional.of("memory is off the " + rules.name() + " grid");
        }
        if (claim.computeRequest() % rules.computeUnit() != 0 || claim.computeLimit() % rules.computeUnit() != 0) {
            return Optional.of("compute is off the " + rules.name() + " grid");
        }
        int best = 0;
        for (Node n : nodes) {
            if (!labelsMatch(claim.selectors(), n.labels()) || !hostFits(claim, n)) {
                continue;
            }
            int usable = 0;
            for (GpuDevice g : n.gpus()) {
                if (usable(claim, g)) {
                    usable++;
                }
            }
            if (usable >= claim.gpuCount()) {
                return Optional.empty();
            }
            best = Math.max(best, usable);
        }
        return Optional.of("no node has " + claim.gpuCount() + " usable GPUs (best " + best + ")"
                + (claim.host().isNone() ? "" : " and room for the CPU and host memory asked for"));
    }

    /** The node declares enough CPU and host memory, or does not track them. */
    private static boolean hostFits(Claim c, Node n) {
        return n.host().cpuMillis().orElse(Long.MAX_VALUE) >= c.host().cpuMillis()
                && n.host().memoryBytes().orElse(Long.MAX_VALUE) >= c.host().memoryBytes();
    }

    private static boolean labelsMatch(Selectors s, Map<String, String> labels) {
        for (Map.Entry<String, String> e : s.nodeLabels().entrySet()) {
            if (!e.getValue().equals(labels.get(e.getKey()))) {
                return false;
            }
        }
        return true;
    }

    private static boolean usable(Claim c, GpuDevice g) {
        Selectors s = c.selectors();
        if (!g.healthy()) {
            return false;
        }
        if (g.reservedFor().isPresent() && g.reservedFor().get() != c.priority()) {
            return false;
        }
        if (s.excludeModels().contains(g.model()) || (!s.includeModels().isEmpty() && !s.includeModels().contains(g.model()))) {
            return false;
        }
        if (s.excludeUuids().contains(g.uuid()) || (!s.includeUuids().isEmpty() && !s.includeUuids().contains(g.uuid()))) {
            return false;
        }
        return c.exclusive() || c.memoryPerGpuBytes() <= g.memoryBytes();
    }
}
