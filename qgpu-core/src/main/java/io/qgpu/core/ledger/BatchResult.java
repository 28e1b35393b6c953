package io.qgpu.core.ledger;

import io.qgpu.api.Placement;
import io.qgpu.api.Reason;
import io.qgpu.api.Validate;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Outcome of {@link Ledger#commit}: every release and every reservation of the batch took effect,
 * or none did.
 *
 * <pre>{@code
 * BatchResult r = ledger.commit(List.of(ledger.placement("batch-7").orElseThrow()), List.of(placement));
 * if (r instanceof BatchResult.Committed c) {
 *     evict(c.released());
 * } else if (r instanceof BatchResult.Refused f) {
 *     log.info("nothing changed: {}", f.summary());
 * }
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public sealed interface BatchResult {

    /** Whether the batch took effect. */
    default boolean committed() {
        return this instanceof Committed;
    }

    /**
     * The batch took effect.
     *
     * @param released the placements released, in the order the batch named them
     * @param reserved the placements reserved, in the order given
     */
    record Committed(List<Placement> released, List<Placement> reserved) implements BatchResult {
        public Committed {
            released = Validate.list("committed.released", released);
            reserved = Validate.list("committed.reserved", reserved);
        }
    }

    /**
     * Nothing changed.
     *
     * @param reasons per tenant id of the batch (a release or a reservation), why it could not be made
     */
    record Refused(Map<String, List<Reason>> reasons) implements BatchResult {
        public Refused {
            Validate.notNull("refused.reasons", reasons);
            reasons = reasons.entrySet().stream().collect(Collectors.toUnmodifiableMap(Map.Entry::getKey,
                    e -> List.copyOf(e.getValue())));
        }

        /** One line: {@code tenant: reason; reason | tenant: ...}, in tenant-id order. */
        public String summary() {
            return reasons.entrySet().stream().sorted(Map.Entry.comparingByKey())
                    .map(e -> e.getKey() + ": " + e.getValue().stream().map(Reason::message).collect(Collectors.joining("; ")))
                    .collect(Collectors.joining(" | "));
        }
    }
}
