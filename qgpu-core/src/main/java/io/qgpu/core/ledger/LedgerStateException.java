package io.qgpu.core.ledger;

import io.qgpu.api.QgpuException;
import io.qgpu.api.Reason;
import java.util.List;
import java.util.stream.Collectors;

/**
 * A snapshot or a structural change was refused because it would leave the ledger inconsistent
 * (oversubscribed, an unknown GPU, a duplicate node or tenant). The ledger is unchanged.
 *
 * <p>Thread safety: immutable.
 */
public final class LedgerStateException extends QgpuException {
    private static final long serialVersionUID = 1L;
    private final transient List<Reason> reasons;

    public LedgerStateException(String message, List<Reason> reasons) {
        super(message + (reasons.isEmpty() ? "" : ": "
                + reasons.stream().map(Reason::message).collect(Collectors.joining("; "))));
        this.reasons = List.copyOf(reasons);
    }

    /** What was wrong, one reason per problem found. */
    public List<Reason> reasons() {
        return reasons;
    }
}
