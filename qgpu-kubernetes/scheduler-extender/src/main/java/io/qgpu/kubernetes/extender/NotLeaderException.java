package io.qgpu.kubernetes.extender;

import io.qgpu.api.QgpuException;

/**
 * This replica is not the leader, so it does not answer the scheduler's verbs: the server answers
 * 503 with {@code Retry-After} and {@code {"Error": "..."}}; the scheduler retries the pod, and
 * readiness has taken this replica out of the Service meanwhile.
 *
 * <pre>{@code
 * throw new NotLeaderException("replica-b", Optional.of("replica-a"));
 * }</pre>
 *
 * <p>Thread safety: immutable once thrown.
 */
public final class NotLeaderException extends QgpuException {
    private static final long serialVersionUID = 1L;

    public NotLeaderException(String identity, java.util.Optional<String> leader) {
        super("replica " + identity + " is not the leader"
                + leader.filter(l -> !l.isEmpty() && !l.equals(identity)).map(l -> " (the leader is " + l + ")").orElse("")
                + "; only the leader serves filter, prioritize and bind: retry");
    }
}
