package io.qgpu.kubernetes.extender;

import java.util.AbstractList;
import java.util.List;
import java.util.RandomAccess;

/**
 * A prioritize reply ({@code HostPriorityList}) as the names asked and their scores, by index: an
 * unmodifiable {@code List<HostPriority>} whose elements are made only when read. The reply writer
 * writes it from the two arrays ({@link ReplyWriter}), so that no {@code HostPriority} object is made
 * per candidate on the way to the wire.
 *
 * <pre>{@code
 * List<ExtenderProtocol.HostPriority> reply = new Priorities(List.of("node-a", "node-b"), new long[] {10, 0});
 * reply.get(0);   // HostPriority[host=node-a, score=10]
 * }</pre>
 *
 * <p>Thread safety: immutable once made (the caller hands the scores over); safe from any thread.
 */
final class Priorities extends AbstractList<ExtenderProtocol.HostPriority> implements RandomAccess {
    private final List<String> names;
    private final long[] scores;

    /**
     * @param names  the hosts, in the order asked
     * @param scores each host's score, {@link ExtenderProtocol#MIN_PRIORITY}..{@link ExtenderProtocol#MAX_PRIORITY}
     * @throws io.qgpu.api.InvalidValueException if a score is out of that range
     */
    Priorities(List<String> names, long[] scores) {
        if (names.size() != scores.length) {
            throw new IllegalArgumentException(names.size() + " names but " + scores.length + " scores");
        }
        for (int j = 0; j < scores.length; j++) {
            if (scores[j] < ExtenderProtocol.MIN_PRIORITY || scores[j] > ExtenderProtocol.MAX_PRIORITY) {
                new ExtenderProtocol.HostPriority(names.get(j), scores[j]);   // throws, with the record's message
            }
        }
        this.names = names;
        this.scores = scores;
    }

    @Override
    public ExtenderProtocol.HostPriority get(int index) {
        return new ExtenderProtocol.HostPriority(names.get(index), scores[index]);
    }

    @Override
    public int size() {
        return scores.length;
    }

    /** The host at {@code index}. */
    String host(int index) {
        return names.get(index);
    }

    /** The score at {@code index}. */
    long score(int index) {
        return scores[index];
    }

    /** The hosts, in order (a {@link CandidateNames} when the request's names came with positions). */
    List<String> hosts() {
        return names;
    }
}
