package io.qgpu.core.internal;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.NodeState;
import io.qgpu.api.Validate;
import io.qgpu.core.ledger.internal.ChangeRing;
import io.qgpu.core.ledger.internal.Structure;
import java.util.function.IntConsumer;

/**
 * The nodes of one ledger structure by position, and a bounded record of the positions whose state
 * changed, for readers that keep a derived copy of every node (an index) and want to refresh only
 * what changed.
 *
 * <pre>{@code
 * NodeFeed feed = LedgerFeeds.of(ledger);
 * long seen = feed.changeSequence();              // read BEFORE copying
 * for (int i = 0; i < feed.size(); i++) copy(i, feed.nodeAt(i));
 * // later:
 * if (LedgerFeeds.of(ledger) != feed) { ... structure changed: start over with the new feed ... }
 * long next = feed.drainChanges(seen, i -> copy(i, feed.nodeAt(i)));
 * if (next < 0) { next = feed.changeSequence(); ... copy every node again ... }
 * seen = next;
 * }</pre>
 *
 * <p>Every successful change of a node's state (a reservation, a release, a health change) takes
 * the next number of a sequence and writes a stamp (sequence, position) into a ring of
 * {@link #CAPACITY} stamps, <em>after</em> the node's compare-and-set. So a reader that has read
 * {@link #changeSequence()} as {@code q} and then reads a node sees every change numbered below
 * {@code q}; a change whose compare-and-set is done but whose number is not taken yet is
 * delivered by a later drain. In that short window a reader may use a stale copy of the node:
 * the ledger re-validates every reservation atomically, so correctness must never depend on such
 * a copy. A reader never misses a change permanently: a drain that cannot prove it delivered every
 * stamp (a stamp overwritten by a writer that lapped the ring) answers {@code -1}, which asks for
 * a full re-read.
 *
 * <p>Thread safety: thread-safe and lock-free; any number of threads may drain concurrently (each
 * gets the positions; a position may be delivered more than once). Publishing costs a writer one
 * {@code getAndIncrement} and one array store.
 *
 * <p>Not part of the exported API: the placement engine gets a ledger's feed through
 * {@link LedgerFeeds}; users read nodes through {@code Ledger.nodes()} and {@code Ledger.node(String)}.
 */
public final class NodeFeed {
    /** How many stamps the ring keeps; a reader further behind than this must re-read everything. */
    public static final int CAPACITY = ChangeRing.CAPACITY;

    private final Structure structure;

    /** The feed of {@code structure}; made by the ledger only, once per structure. */
    public NodeFeed(Structure structure) {
        this.structure = structure;
    }

    /** The structure this feed reads (for the ledger). */
    public Structure structure() {
        return structure;
    }

    /** Identifies this structure; a later structure of the ledger has a higher epoch. */
    public long epoch() {
        return structure.epoch();
    }

    /** The rules of this structure. */
    public GranularityRules rules() {
        return structure.rules();
    }

    /** Number of nodes; positions are {@code 0 .. size() - 1}, in {@code Ledger.nodes()} order. */
    public int size() {
        return structure.size();
    }

    /**
     * The current state of the node at {@code position} (for a feed that is no longer the
     * ledger's, the state it had when the structure was replaced).
     *
     * @throws InvalidValueException if {@code position} is out of range
     */
    public NodeState nodeAt(int position) {
        if (position < 0 || position >= structure.size()) {
            throw new InvalidValueException("position", position, "must be in 0.." + (structure.size() - 1));
        }
        return structure.slotAt(position).get();
    }

    /** How many changes were numbered so far: the next change gets this number. */
    public long changeSequence() {
        return structure.ring().sequence();
    }

    /**
     * Hands {@code positions} the position of every change numbered from {@code fromSequence} on,
     * in sequence order, possibly with repeats.
     *
     * @return the sequence number to drain from next time (every change below it was delivered),
     *         or {@code -1} when the ring no longer holds every stamp since {@code fromSequence}
     *         (the reader was more than {@link #CAPACITY} changes behind, or {@code fromSequence}
     *         does not belong to this feed): then the reader must re-read every node
     */
    public long drainChanges(long fromSequence, IntConsumer positions) {
        Validate.notNull("positions", positions);
        return structure.ring().drain(fromSequence, positions);
    }

    @Override
    public String toString() {
        return "NodeFeed[epoch " + epoch() + ", " + size() + " nodes, sequence " + changeSequence() + "]";
    }
}
