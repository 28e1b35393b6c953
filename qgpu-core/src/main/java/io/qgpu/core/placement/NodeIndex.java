package io.qgpu.core.placement;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.NodeState;
import io.qgpu.core.ledger.Ledger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The engine's cache of {@link NodeSummary}s by node position, with each node's precheck key for
 * each priority class in one contiguous array, so that the scan over ten thousand nodes streams
 * through a few hundred kilobytes instead of chasing a pointer per node. It mirrors one ledger
 * structure ({@link Ledger.NodeFeed}) and is kept current from the feed's change stamps: a
 * placement refreshes only the positions that changed since the last drain ({@link #sync}), and
 * re-reads every node only when the feed overflowed.
 *
 * <p>Key of a node for one class (64 bits; counts saturate, memory is rounded down, so a key never
 * rejects a node that has room):
 * <pre>
 *   bits  0..15  nodeLoad * 65535, rounded
 *   bits 16..23  open GPUs usable by the class      (255 = 255 or more)
 *   bits 24..31  empty open GPUs usable by the class
 *   bits 32..39  largest free guaranteed compute of the class + 1
 *   bits 40..63  largest free memory, MiB           (2^24 - 1 = that much or more)
 * </pre>
 *
 * <p>Thread safety: shared by all threads of an engine. Entries are published in the order
 * summary, keys, state (release), and read state (acquire) first; a summary is immutable and is
 * always re-checked against the node state it was made from before it decides anything. A refresh
 * re-reads the node after writing and writes again if it changed meanwhile, so of two threads
 * refreshing one node the last writes are those of the newest state. Concurrent drains may refresh
 * a node twice (idempotent); the drained-up-to cursor only grows. Keys may lag the ledger for the
 * short window between a node's compare-and-set and its change stamp, or until the next drain:
 * they only rank and pre-filter, and the engine re-scans exactly before it reports a claim
 * unschedulable, so such a lag can change which of two good nodes is chosen, never correctness.
 */
final class NodeIndex {
    private static final long MEM_MAX = (1L << 24) - 1;

    final Ledger.NodeFeed feed;
    private final GranularityRules rules;
    private final AtomicReferenceArray<NodeState> states;
    private final AtomicReferenceArray<NodeSummary> summaries;
    /** One array per class, so the scan reads 8 contiguous bytes per node. */
    private final AtomicLongArray onlineKeys;
    private final AtomicLongArray offlineKeys;
    /** Every change stamp below this sequence is reflected in the keys. */
    private final AtomicLong drained = new AtomicLong();
    final int size;

    /** An index of every node of {@code feed}, read now. */
    NodeIndex(Ledger.NodeFeed feed) {
        this.feed = feed;
        this.rules = feed.rules();
        int n = feed.size();
        this.size = n;
        this.states = new AtomicReferenceArray<>(n);
        this.summaries = new AtomicReferenceArray<>(n);
        this.onlineKeys = new AtomicLongArray(n);
        this.offlineKeys = new AtomicLongArray(n);
        refreshAll();
    }

    /** Brings the keys up to the feed: the changed positions, or every node after an overflow. */
    void sync() {
        long from = drained.get();
        long next = feed.drainChanges(from, this::ensure);
        if (next < 0) {
            refreshAll();
        } else if (next > from) {
            drained.accumulateAndGet(next, Math::max);
        }
    }

    private void refreshAll() {
        long head = feed.changeSequence(); // before reading the nodes: every change below it is seen
        for (int i = 0; i < size; i++) {
            ensure(i);
        }
        drained.accumulateAndGet(head, Math::max);
    }

    /** Refreshes node {@code i} if its key was not made from its current state. */
    private void ensure(int i) {
        NodeState ns = feed.nodeAt(i);
        if (states.getAcquire(i) != ns) {
            refresh(i, ns);
        }
    }

    /** The key of node {@code i} for the claim's class. */
    long key(int i, boolean online) {
        return (online ? onlineKeys : offlineKeys).getOpaque(i);
    }

    /** The summary of node {@code i} made from exactly {@code ns}. */
    NodeSummary summary(int i, NodeState ns) {
        NodeSummary s = summaries.getAcquire(i);
        if (s == null || s.state != ns) {
            s = refresh(i, ns);
        }
        return s;
    }

    /** Writes the entry of node {@code i} from {@code ns}; returns the summary of {@code ns}. */
    private NodeSummary refresh(int i, NodeState ns) {
        NodeSummary first = null;
        while (true) {
            NodeSummary prev = summaries.getAcquire(i);
            NodeSummary s = NodeSummary.of(ns, prev, rules);
            if (first == null) {
                first = s;
            }
            summaries.setRelease(i, s);
            onlineKeys.setOpaque(i, s.key(true));
            offlineKeys.setOpaque(i, s.key(false));
            states.setRelease(i, ns);
            NodeState now = feed.nodeAt(i);
            if (now == ns) {
                return first;
            }
            // the node changed while this thread wrote: write again, so that a slower refresher
            // holding an older state never has the last word
            ns = now;
        }
    }

    static long key(double nodeLoad, int open, int empty, int maxCompute, long maxMem) {
        long q = Math.round(Math.max(0.0, Math.min(1.0, nodeLoad)) * 65535.0);
        long o = Math.min(open, 255);
        long e = Math.min(empty, 255);
        long cpt = Math.max(-1, Math.min(100, maxCompute)) + 1;
        long mem = maxMem < 0 ? 0 : Math.min(maxMem >>> 20, MEM_MAX);
        return q | (o << 16) | (e << 24) | (cpt << 32) | (mem << 40);
    }

    /** The node load encoded in a key, to 1/65535. */
    static double load(long key) {
        return (key & 0xFFFF) / 65535.0;
    }

    /** Never false when {@link NodeSummary#precheck} is true for the state the key was made from. */
    static boolean fits(long key, ClaimShape c) {
        if (c.hostOnly) {
            return true;   // the key knows GPUs only; the node's host resources are checked on its summary
        }
        int open = (int) ((key >>> 16) & 0xFF);
        if (c.exclusive) {
            int empty = (int) ((key >>> 24) & 0xFF);
            return empty == 255 || empty >= c.k;
        }
        if (open != 255 && open < c.k) {
            return false;
        }
        if ((int) ((key >>> 32) & 0xFF) - 1 < c.minComputeFree) {
            return false;
        }
        long mem = key >>> 40;
        return mem == MEM_MAX || (c.memory >>> 20) <= mem;
    }
}
