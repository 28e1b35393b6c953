package io.qgpu.core.placement;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.NodeState;
import io.qgpu.api.ReasonCode;
import io.qgpu.core.internal.NodeFeed;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.jspecify.annotations.Nullable;

/**
 * The engine's cache of {@link NodeSummary}s by node position, with each node's precheck key for
 * each priority class in one contiguous array, so that the scan over ten thousand nodes streams
 * through a few hundred kilobytes instead of chasing a pointer per node. It mirrors one ledger
 * structure ({@link NodeFeed}) and is kept current from the feed's change stamps: a
 * placement refreshes only the positions that changed since the last drain ({@link #sync}), and
 * re-reads every node only when the feed overflowed. The same keys are also indexed by free room,
 * one {@link RoomTree} per class ({@link #room}), updated with every refresh.
 *
 * <p>Key of a node for one class (64 bits; counts saturate, memory is rounded down, so a key never
 * rejects a node that has room):
 * <pre>
 *   bits  0..15  nodeLoad * 65535, rounded
 *   bits 16..19  open GPUs usable by the class      (15 = 15 or more)
 *   bits 20..23  those with a free tenant slot      (15 = 15 or more)
 *   bits 24..31  empty open GPUs usable by the class (255 = 255 or more)
 *   bits 32..39  largest free guaranteed compute of the class on a GPU with a free slot, + 1
 *   bits 40..63  largest free memory on a GPU with a free slot, MiB (2^24 - 1 = that much or more)
 * </pre>
 * Beside it, per node and class, the refusal tier key and one level key per compute level
 * ({@link RefusalTiers}), read only for the shared claims whose first key lets them through.
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

    final NodeFeed feed;
    private final GranularityRules rules;
    private final AtomicReferenceArray<NodeState> states;
    private final AtomicReferenceArray<NodeSummary> summaries;
    /** One array per class, so the scan reads 8 contiguous bytes per node. */
    private final AtomicLongArray onlineKeys;
    private final AtomicLongArray offlineKeys;
    /** The tier keys ({@link RefusalTiers#key}), read only for a multi-GPU shared claim whose key lets it through. */
    private final AtomicLongArray onlineTiers;
    private final AtomicLongArray offlineTiers;
    /**
     * The level keys ({@link RefusalTiers#level}), level {@code j} of node {@code i} at {@code j * size + i}
     * (each level contiguous), read only for a shared claim whose other keys let it through.
     */
    private final AtomicLongArray onlineLevels;
    private final AtomicLongArray offlineLevels;
    /** The same keys indexed by free room ({@link #room}). */
    private final RoomTree onlineRoom;
    private final RoomTree offlineRoom;
    /** Every change stamp below this sequence is reflected in the keys. */
    private final AtomicLong drained = new AtomicLong();
    /** Refreshes begun and ended: equal when none is under way ({@link #settled}). */
    private final AtomicLong refreshStarted = new AtomicLong();
    private final AtomicLong refreshEnded = new AtomicLong();
    final int size;
    /** Node name to position, made on first use (the structure never changes). */
    private volatile @Nullable Map<String, Integer> positions;

    /** An index of every node of {@code feed}, read now. */
    NodeIndex(NodeFeed feed) {
        this.feed = feed;
        this.rules = feed.rules();
        int n = feed.size();
        this.size = n;
        this.states = new AtomicReferenceArray<>(n);
        this.summaries = new AtomicReferenceArray<>(n);
        this.onlineKeys = new AtomicLongArray(n);
        this.offlineKeys = new AtomicLongArray(n);
        this.onlineTiers = new AtomicLongArray(n);
        this.offlineTiers = new AtomicLongArray(n);
        this.onlineLevels = new AtomicLongArray(n * RefusalTiers.LEVELS.length);
        this.offlineLevels = new AtomicLongArray(n * RefusalTiers.LEVELS.length);
        this.onlineRoom = new RoomTree(n);
        this.offlineRoom = new RoomTree(n);
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
    @SuppressWarnings("ReferenceEquality") // identity meant: a node state is immutable, a new state is a new object
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

    /**
     * Null when node {@code i} may take the claim as far as its keys show, else the first cause: the
     * key's ({@link #cause(long, ClaimShape)}), then, for a multi-GPU shared claim, the tier key's
     * ({@link RefusalTiers#tierCause}), then, for a shared claim, its level key's
     * ({@link RefusalTiers#levelCause}). The order of {@link NodeSummary#precheckCause}.
     */
    @Nullable ReasonCode cause(int i, ClaimShape c) {
        ReasonCode code = cause((c.online ? onlineKeys : offlineKeys).getOpaque(i), c);
        return code != null ? code : keysBeyondTheFirst(i, c);
    }

    /**
     * The tier and level keys' cause of node {@code i} ({@link #cause(int, ClaimShape)} without its first
     * key), for the scan that has just read and decided the first key itself: it does not read or decode
     * that key again.
     */
    @Nullable ReasonCode keysBeyondTheFirst(int i, ClaimShape c) {
        boolean online = c.online;
        ReasonCode code = null;
        if (c.tiered) {
            code = RefusalTiers.tierCause((online ? onlineTiers : offlineTiers).getOpaque(i), c);
        }
        if (code == null && c.levelled) {
            code = RefusalTiers.levelCause((online ? onlineLevels : offlineLevels).getOpaque(c.level * size + i), c);
        }
        return code;
    }

    /** {@link #cause(int, ClaimShape)} on the keys of the summary {@code s} itself. */
    static @Nullable ReasonCode cause(NodeSummary s, ClaimShape c) {
        ReasonCode code = cause(s.key(c.online), c);
        RefusalTiers r = s.tiers(c.online);
        if (code == null && c.tiered) {
            code = RefusalTiers.tierCause(r.key(), c);
        }
        if (code == null && c.levelled) {
            code = RefusalTiers.levelCause(r.level(c.level), c);
        }
        return code;
    }

    /** The index of the keys of the claim's class by free room. */
    RoomTree room(boolean online) {
        return online ? onlineRoom : offlineRoom;
    }

    /** The summary of node {@code i} made from exactly {@code ns}. */
    @SuppressWarnings("ReferenceEquality") // identity meant: a node state is immutable, a new state is a new object
    NodeSummary summary(int i, NodeState ns) {
        NodeSummary s = summaries.getAcquire(i);
        if (s == null || s.state != ns) {
            s = refresh(i, ns);
        }
        return s;
    }

    /** Writes the entry of node {@code i} from {@code ns}; returns the summary of {@code ns}. */
    private NodeSummary refresh(int i, NodeState ns) {
        refreshStarted.incrementAndGet();
        try {
            return write(i, ns);
        } finally {
            refreshEnded.incrementAndGet();
        }
    }

    @SuppressWarnings("ReferenceEquality") // identity meant: a node state is immutable, a new state is a new object
    private NodeSummary write(int i, NodeState ns) {
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
            onlineTiers.setOpaque(i, s.tiers(true).key());
            offlineTiers.setOpaque(i, s.tiers(false).key());
            for (int j = 0; j < RefusalTiers.LEVELS.length; j++) {
                onlineLevels.setOpaque(j * size + i, s.tiers(true).level(j));
                offlineLevels.setOpaque(j * size + i, s.tiers(false).level(j));
            }
            onlineRoom.update(i, s.key(true));
            offlineRoom.update(i, s.key(false));
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

    static long key(double nodeLoad, int open, int slots, int empty, int maxCompute, long maxMem) {
        long q = Math.round(Math.max(0.0, Math.min(1.0, nodeLoad)) * 65535.0);
        long o = Math.min(open, 15) | Math.min(slots, 15) << 4;
        long e = Math.min(empty, 255);
        long cpt = Math.max(-1, Math.min(100, maxCompute)) + 1L;
        long mem = maxMem < 0 ? 0 : Math.min(maxMem >>> 20, MEM_MAX);
        return q | (o << 16) | (e << 24) | (cpt << 32) | (mem << 40);
    }

    /**
     * A token (at least 0) when the keys are settled now: every change the feed has numbered was
     * delivered and its node refreshed, and no refresh is under way; else -1. While
     * {@link #stillSettled} holds for the token afterwards, no key was written in between, so every
     * key read in between was made from a state at least as new as every change that completed
     * before this call.
     */
    long settled() {
        long ended = refreshEnded.get();
        long started = refreshStarted.get();
        if (started != ended || drained.get() != feed.changeSequence()) {
            return -1;
        }
        return started;
    }

    /** Whether no refresh began since {@link #settled} gave {@code token}. */
    boolean stillSettled(long token) {
        return refreshStarted.get() == token;
    }

    /** The position of the node named {@code name}, or -1 when the structure has no such node. */
    int positionOf(String name) {
        Map<String, Integer> m = positions;
        if (m == null) {
            m = new HashMap<>(size * 2);
            for (int i = 0; i < size; i++) {
                m.put(feed.nodeAt(i).name(), i);
            }
            positions = m;
        }
        Integer p = m.get(name);
        return p == null ? -1 : p;
    }

    /** The key's count of empty GPUs (255: that many or more). */
    static int emptyGpus(long key) {
        return (int) ((key >>> 24) & 0xFF);
    }

    /** The key's count of GPUs with a free tenant slot (15: that many or more). */
    static int slotGpus(long key) {
        return (int) ((key >>> 20) & 0xF);
    }

    /**
     * Null when a node whose key this is may take the claim ({@link #fits}), else the first cause the
     * key shows, in the order of {@link NodeSummary#precheckCause}: free whole GPUs ({@code EXCLUSIVE},
     * an exclusive claim), open GPUs ({@code NOT_ENOUGH_GPUS}), those with a free tenant slot
     * ({@code TOO_MANY_TENANTS}), the largest free memory
     * ({@code INSUFFICIENT_MEMORY}), the largest free compute of the class
     * ({@code INSUFFICIENT_COMPUTE}). When it is not null, {@link NodeSummary#precheckCause} of the
     * state the key was made from gives the same code.
     */
    static @Nullable ReasonCode cause(long key, ClaimShape c) {
        if (c.hostOnly) {
            return null;   // the key knows GPUs only; the node's host resources are checked on its summary
        }
        if (c.exclusive) {
            int empty = emptyGpus(key);
            return empty == 255 || empty >= c.k ? null : ReasonCode.EXCLUSIVE;
        }
        int open = (int) ((key >>> 16) & 0xF);
        if (open != 15 && open < c.k) {
            return ReasonCode.NOT_ENOUGH_GPUS;
        }
        int slots = slotGpus(key);
        if (slots != 15 && slots < c.k) {
            return ReasonCode.TOO_MANY_TENANTS;
        }
        long mem = key >>> 40;
        if (mem != MEM_MAX && (c.memory >>> 20) > mem) {
            return ReasonCode.INSUFFICIENT_MEMORY;
        }
        if ((int) ((key >>> 32) & 0xFF) - 1 < c.minComputeFree) {
            return ReasonCode.INSUFFICIENT_COMPUTE;
        }
        return null;
    }

    /** The node load encoded in a key, to 1/65535. */
    static double load(long key) {
        return (key & 0xFFFF) / 65535.0;
    }

    /** Never false when {@link NodeSummary#precheck} is true for the state the key was made from. */
    static boolean fits(long key, ClaimShape c) {
        return cause(key, c) == null;
    }
}
