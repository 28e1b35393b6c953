package io.qgpu.core.placement;

import io.qgpu.api.NodeRejection;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.Reason;
import io.qgpu.api.Validate;
import io.qgpu.api.placement.GpuSet;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * What {@link PlacementEngine#explain} found for one claim, without committing anything: every
 * candidate node with its best GPU set and each score term, every other node with the reasons it was
 * refused, and the candidate {@link PlacementEngine#place} would commit from the same state.
 *
 * <pre>{@code
 * PlacementExplanation e = engine.explain(claim);
 * e.chosen().ifPresent(c -> log.info("{}", c.node() + " " + c.gpuUuids() + " total " + c.total()));
 * log.info("{}", e.table());
 * }</pre>
 *
 * @param tenantId     the claim's tenant
 * @param nodePolicy   the node-level policy applied (claim override, class default or engine default)
 * @param gpuPolicy    the GPU-level policy applied
 * @param candidates   every feasible node, best total first (ties in cluster order)
 * @param rejected     every other node, by name, with its reasons
 * @param general      reasons not tied to a node (granularity, duplicate tenant, empty cluster)
 * @param chosen       the candidate place would commit: the best total among the shortlisted
 * @param elapsedNanos time the explanation took, from the engine's {@link io.qgpu.api.Ticker}
 *
 * <p>Thread safety: immutable.
 */
public record PlacementExplanation(String tenantId, PlacementPolicy nodePolicy, PlacementPolicy gpuPolicy,
                                   List<Candidate> candidates, Map<String, NodeRejection> rejected,
                                   List<Reason> general, Optional<Candidate> chosen, long elapsedNanos) {

    public PlacementExplanation {
        Validate.notBlank("explanation.tenantId", tenantId);
        Validate.notNull("explanation.nodePolicy", nodePolicy);
        Validate.notNull("explanation.gpuPolicy", gpuPolicy);
        candidates = Validate.list("explanation.candidates", candidates);
        rejected = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(Validate.notNull("explanation.rejected", rejected)));
        general = Validate.list("explanation.general", general);
        Validate.notNull("explanation.chosen", chosen);
    }

    /** Whether a placement would be found. */
    public boolean schedulable() {
        return chosen.isPresent();
    }

    /** Which part of the pipeline a score term comes from. */
    public enum Level {
        /** A node scorer (the node policy term or a registered {@link io.qgpu.api.placement.NodeScorer}). */
        NODE,
        /** A GPU set scorer (clique, link quality, GPU policy, or a registered {@link io.qgpu.api.placement.GpuSetScorer}). */
        GPU_SET
    }

    /**
     * One weighted term of a candidate's total.
     *
     * @param level  node or GPU set
     * @param scorer the scorer's name
     * @param value  its score, 0..1
     * @param weight its weight
     * @param why    the reason, in words
     */
    public record Term(Level level, String scorer, double value, double weight, String why) {
        public Term {
            Validate.notNull("term.level", level);
            Validate.notBlank("term.scorer", scorer);
            Validate.notNull("term.why", why);
        }

        /** {@code value * weight}. */
        public double weighted() {
            return value * weight;
        }
    }

    /**
     * A feasible node with its best GPU set.
     *
     * @param node        the node's name
     * @param gpus        the best GPU set, by position
     * @param gpuUuids    the same GPUs by UUID
     * @param total       sum of the weighted terms
     * @param shortlisted whether the node was among the best by node score whose GPU sets place searches
     * @param terms       every term of the total
     */
    public record Candidate(String node, GpuSet gpus, List<String> gpuUuids, double total, boolean shortlisted,
                            List<Term> terms) {
        public Candidate {
            Validate.notBlank("candidate.node", node);
            Validate.notNull("candidate.gpus", gpus);
            gpuUuids = Validate.list("candidate.gpuUuids", gpuUuids);
            terms = Validate.list("candidate.terms", terms);
        }

        /** The sum of the node-level terms. */
        public double nodeScore() {
            return terms.stream().filter(t -> t.level() == Level.NODE).mapToDouble(Term::weighted).sum();
        }

        /** The sum of the GPU-set terms. */
        public double setScore() {
            return terms.stream().filter(t -> t.level() == Level.GPU_SET).mapToDouble(Term::weighted).sum();
        }
    }

    /** A weight for the table: two decimals, or one significant digit for the tie-breaks' tiny weights. */
    private static String weight(double w) {
        return w == 0 || w >= 0.005 ? String.format(Locale.ROOT, "%.2f", w) : String.format(Locale.ROOT, "%.0e", w);
    }

    /** Width at which {@link #table()} wraps long lines. */
    public static final int TABLE_WIDTH = 100;

    /**
     * A text table of the candidates and the refused nodes, for people: one row per candidate, then
     * one line per term (value x weight and the reason), then one line per refused node and reason.
     * Lines longer than {@link #TABLE_WIDTH} characters are wrapped, the continuation indented.
     */
    public String table() {
        StringBuilder sb = new StringBuilder();
        sb.append("claim ").append(tenantId).append("  node policy ").append(nodePolicy.wireName())
                .append("  gpu policy ").append(gpuPolicy.wireName()).append('\n');
        for (Reason r : general) {
            wrap(sb, "  ! ", r.message());
        }
        if (!candidates.isEmpty()) {
            sb.append(String.format(Locale.ROOT, "  %-3s %-20s %-28s %8s %8s %8s%n", "", "node", "gpus", "node", "gpu-set",
                    "total"));
        }
        for (Candidate c : candidates) {
            boolean isChosen = chosen.isPresent() && chosen.get().node().equals(c.node());
            sb.append(String.format(Locale.ROOT, "  %-3s %-20s %-28s %8.3f %8.3f %8.3f%n",
                    isChosen ? "=>" : (c.shortlisted() ? "" : "-"), c.node(), c.gpus().toString(), c.nodeScore(), c.setScore(),
                    c.total()));
            for (Term t : c.terms()) {
                wrap(sb, String.format(Locale.ROOT, "        %-16s %.3f x %s  ", t.scorer(), t.value(), weight(t.weight())), t.why());
            }
        }
        for (NodeRejection r : rejected.values()) {
            sb.append("  x   ").append(r.nodeName()).append('\n');
            for (Reason reason : r.all()) {
                wrap(sb, "        - ", reason.message());
            }
        }
        if (chosen.isEmpty()) {
            sb.append("  unschedulable\n");
        }
        return sb.toString();
    }

    /** Appends {@code head + text}, wrapped at word boundaries to {@link #TABLE_WIDTH}, continuation lines indented. */
    @SuppressWarnings("StringSplitter") // dropping trailing empty strings is wanted: a trailing space adds no word
    private static void wrap(StringBuilder sb, String head, String text) {
        String indent = " ".repeat(Math.min(head.length() + 2, TABLE_WIDTH / 2));
        StringBuilder line = new StringBuilder(head);
        boolean empty = true;
        for (String word : text.split(" ")) {
            if (!empty && line.length() + 1 + word.length() > TABLE_WIDTH) {
                sb.append(line).append('\n');
                line.setLength(0);
                line.append(indent);
                empty = true;
            }
            if (!empty) {
                line.append(' ');
            }
            line.append(word);
            empty = false;
        }
        sb.append(line).append('\n');
    }
}
