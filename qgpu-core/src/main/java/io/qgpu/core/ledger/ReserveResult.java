package io.qgpu.core.ledger;

import io.qgpu.api.Placement;
import io.qgpu.api.Reason;
import io.qgpu.api.Validate;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Outcome of {@link Ledger#reserve(Placement)}.
 *
 * <pre>{@code
 * ReserveResult result = ledger.reserve(placement);
 * if (result instanceof ReserveResult.Reserved r) {
 *     bind(r.placement());
 * } else if (result instanceof ReserveResult.Refused f) {
 *     log.info("refused: {}", f.summary());
 * }
 * }</pre>
 *
 * <p>The interface is sealed: on Java 21 or later a {@code switch} with type patterns over it is
 * checked by the compiler to cover both cases (the library itself needs only Java 17).
 *
 * <p>Thread safety: immutable.
 */
public sealed interface ReserveResult {

    String tenantId();

    default boolean reserved() {
        return this instanceof Reserved;
    }

    /** Every slice was reserved. */
    record Reserved(Placement placement) implements ReserveResult {
        @Override
        public String tenantId() {
            return placement.tenantId();
        }
    }

    /** Nothing was reserved, for these reasons. */
    record Refused(String tenantId, List<Reason> reasons) implements ReserveResult {
        public Refused {
            Validate.notBlank("refused.tenantId", tenantId);
            reasons = Validate.list("refused.reasons", reasons);
        }

        public String summary() {
            return reasons.stream().map(Reason::message).collect(Collectors.joining("; "));
        }
    }
}
