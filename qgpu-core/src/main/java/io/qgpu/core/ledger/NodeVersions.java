package io.qgpu.core.ledger;

import io.qgpu.api.Validate;
import io.qgpu.core.internal.LedgerFeeds;
import io.qgpu.core.internal.NodeFeed;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.jspecify.annotations.Nullable;

/**
 * A version number for each node of one ledger structure, for a memo of per-node answers: an answer
 * worked out from a node while its version was {@code v} may be given again while the version is
 * still {@code v}. Nodes are numbered by position, in {@link Ledger#nodes()} order at the time this
 * was made ({@link #names()}), so a reader keeps its memo in arrays rather than behind a lookup by
 * name, and a check of a node's version is one array read.
 *
 * <pre>{@code
 * NodeVersions versions = NodeVersions.of(ledger);
 * long[] answeredAt = new long[versions.size()];
 * // per request:
 * if (!versions.isCurrent()) { versions = NodeVersions.of(ledger); ... drop the memo ... }
 * versions.refresh();
 * long v = versions.version(position);      // read BEFORE working the answer out from the ledger
 * if (answeredAt[position] != v) { ... work it out, file it under v ... }
 * }</pre>
 *
 * <p>The guarantee: after {@link #refresh()} returns, every change of a node's state (a reservation,
 * a release, a health change, by any thread) whose ledger call returned before that {@code refresh}
 * began has given the node a version it never had before. Versions only grow and are never given
 * twice, so an answer filed under a version read before the ledger was read again is never taken for
 * a later state. A change still under way while {@code refresh} runs may or may not be reflected;
 * it is by the next {@code refresh} after its call returned. A node may get a new version without a
 * change (when a change record is delivered twice): a memo then works that answer out once more.
 *
 * <p>Structural changes (a node added or removed, a restore, a reconcile) renumber the nodes: this
 * object then stops following the ledger ({@link #isCurrent()} is false) and a new one is made.
 *
 * <p>Cost: {@code refresh} reads the ledger's record of changed nodes since the last refresh (one
 * read when nothing changed); it holds no lock and blocks no writer. Should the reader fall more
 * than a few thousand changes behind, every node gets a new version.
 *
 * <p>Thread safety: thread-safe and lock-free; any number of threads may call {@code refresh} and
 * {@code version} concurrently.
 */
public final class NodeVersions {
    private final Ledger ledger;
    private final NodeFeed feed;
    private final List<String> names;
    private final AtomicLongArray versions;
    private final AtomicLong counter = new AtomicLong();
    /** Every change numbered below this is reflected in {@link #versions}. */
    private final AtomicLong drained;
    /** Tests only: run between giving the changed nodes their versions and recording how far that got. */
    volatile @Nullable Runnable beforePublish;

    private NodeVersions(Ledger ledger, NodeFeed feed) {
        this.ledger = ledger;
        this.feed = feed;
        int n = feed.size();
        this.drained = new AtomicLong(feed.changeSequence());   // nothing before this object matters
        List<String> list = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            list.add(feed.nodeAt(i).name());
        }
        this.names = Collections.unmodifiableList(list);
        this.versions = new AtomicLongArray(n);
        for (int i = 0; i < n; i++) {
            versions.set(i, counter.incrementAndGet());
        }
    }

    /** The versions of the ledger's current structure, every node at a version of its own. */
    public static NodeVersions of(Ledger ledger) {
        Validate.notNull("ledger", ledger);
        return new NodeVersions(ledger, LedgerFeeds.of(ledger));
    }

    /** Number of nodes; positions are {@code 0 .. size() - 1}. */
    public int size() {
        return names.size();
    }

    /** The nodes' names by position: {@link Ledger#nodes()}'s order when this was made. Unmodifiable. */
    public List<String> names() {
        return names;
    }

    /** The structure's epoch ({@link Ledger#structureEpoch()}) these positions belong to. */
    public long epoch() {
        return feed.epoch();
    }

    /** Whether the ledger still has the structure this numbers; when not, make a new one. */
    public boolean isCurrent() {
        return LedgerFeeds.of(ledger) == feed;
    }

    /**
     * Gives every node changed since the last refresh a new version (see the class comment for what
     * is guaranteed). Once {@link #isCurrent()} is false, nothing changes any more.
     */
    public void refresh() {
        long from = drained.get();
        long head = feed.changeSequence();
        if (head == from) {
            return;
        }
        long next = feed.drainChanges(from, this::bump);
        if (next < 0) {            // fell behind the record: every node is new
            head = feed.changeSequence();
            for (int i = 0; i < versions.length(); i++) {
                bump(i);
            }
            next = head;
        }
        Runnable hook = beforePublish;
        if (hook != null) {
            hook.run();
        }
        drained.accumulateAndGet(next, Math::max);
    }

    /**
     * The version of the node at {@code position}, as of the last {@link #refresh()}.
     *
     * @throws io.qgpu.api.InvalidValueException if {@code position} is out of range
     */
    public long version(int position) {
        if (position < 0 || position >= versions.length()) {
            Validate.between("position", position, 0, versions.length() - 1);
        }
        return versions.get(position);
    }

    /** A new version, never given before; a version never goes down (two drains may race). */
    private void bump(int position) {
        long fresh = counter.incrementAndGet();
        versions.accumulateAndGet(position, fresh, Math::max);
    }

    @Override
    public String toString() {
        return "NodeVersions[epoch " + epoch() + ", " + size() + " nodes]";
    }
}
