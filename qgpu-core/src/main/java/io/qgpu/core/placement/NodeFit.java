package io.qgpu.core.placement;

import io.qgpu.api.Reason;
import io.qgpu.api.Validate;
import io.qgpu.api.placement.GpuSet;

/**
 * Whether one node can take a claim now, from {@link PlacementEngine#check}: {@link Fits} with the
 * GPU set and total {@link PlacementEngine#place} would give it on that node, or {@link Refused}
 * with one reason, decided from the node's summaries.
 *
 * <pre>{@code
 * for (NodeFit f : engine.check(claim, List.of("n1", "n2"))) {
 *     if (f instanceof NodeFit.Fits ok) {
 *         log.info("{} total {}", ok.node(), ok.total());
 *     } else if (f instanceof NodeFit.Refused no) {
 *         log.info("{}", no.reason().message());
 *     }
 * }
 * }</pre>
 *
 * <p>The interface is sealed: on Java 21 or later a {@code switch} with type patterns over it is
 * checked by the compiler to cover both cases (the library itself needs only Java 17).
 *
 * <p>Thread safety: immutable.
 */
public sealed interface NodeFit {

    /** The node's name, as asked. */
    String node();

    /**
     * The node can take the claim.
     *
     * @param node  the node
     * @param gpus  the best GPU set on it, by position
     * @param total node score plus the set's score (what {@link PlacementExplanation.Candidate#total()}
     *              reports for the node)
     */
    record Fits(String node, GpuSet gpus, double total) implements NodeFit {
        public Fits {
            Validate.notBlank("fits.node", node);
            Validate.notNull("fits.gpus", gpus);
        }
    }

    /**
     * The node cannot take the claim.
     *
     * @param node   the node
     * @param reason why, in one reason
     */
    record Refused(String node, Reason reason) implements NodeFit {
        public Refused {
            Validate.notBlank("refused.node", node);
            Validate.notNull("refused.reason", reason);
        }
    }
}
