package io.qgpu.core.placement;

import io.qgpu.api.ReasonCode;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import org.jspecify.annotations.Nullable;

/**
 * An index of the nodes by free room, for one priority class: a complete binary tree over the node
 * positions whose every entry holds, for the nodes below it, the field-wise largest {@link NodeIndex}
 * key (open GPUs, GPUs with a free tenant slot, empty GPUs, the largest free compute and memory on
 * one GPU with a free slot, the highest load) and the lowest load. A subtree whose largest fields
 * already refuse a claim ({@link NodeIndex#cause} on the field-wise maximum) holds no node whose key
 * lets it through, because every key test is monotone in its field; so {@link #visit} walks, best
 * first, only subtrees that may hold a node for the claim, and hands out the nodes whose key lets
 * the claim through in the order of the shortlist's rank ({@code nodeWeight * policyTerm(load)},
 * highest first, ties in cluster order), until the caller has what it needs.
 *
 * <p>The rank bound of a subtree is the rank of its highest load (binpack) or its lowest load
 * (spread), computed with the very expression the pass ranks a node with, and its first position;
 * both are optimistic for every node below, so the nodes come out in exactly the order of a full
 * scan sorted by rank: the caller sees the same shortlist as a scan of every key would build.
 *
 * <p>Cost: an update rewrites one leaf and its {@code log2(n)} ancestors; a visit that stops after
 * {@code m} nodes touches about {@code m log2(n)} entries plus the subtrees it prunes at their root,
 * when the field-wise maxima are tight; it gives up past a budget ({@link #budget}) when they are
 * not (nodes whose fields each pass somewhere, but never together), and the caller scans instead.
 *
 * <p>Thread safety: updates are serialised on the tree and rewrite each ancestor from its two
 * children, so once updates stop every entry is exactly the combination of the leaves below it.
 * Visits read without locking (opaque reads) and may see an update half-way (each thread's visits
 * queue in arrays of that thread's own, kept between visits); like the keys the tree
 * is built from, the tree then only ranks and pre-filters: the caller decides each node on its own
 * summary, and falls back to a scan of every key when the visit finds nothing.
 */
class RoomTree {
    /** The load field of a key, and the highest value it takes. */
    static final int LOAD_MASK = 0xFFFF;

    private final int size;
    /** A power of two at least {@code size}: leaf {@code i} is entry {@code leaves + i}; the root is entry 1. */
    private final int leaves;
    private final AtomicLongArray maxKey;
    private final AtomicIntegerArray minLoad;

    /** A tree over {@code size} nodes, every node without room until it is {@link #update}d. */
    RoomTree(int size) {
        this.size = size;
        this.leaves = size <= 1 ? 1 : Integer.highestOneBit(size - 1) << 1;
        this.maxKey = new AtomicLongArray(2 * leaves);
        this.minLoad = new AtomicIntegerArray(2 * leaves);
        for (int t = 1; t < 2 * leaves; t++) {
            minLoad.setPlain(t, LOAD_MASK);
        }
    }

    /** Sets the key of node {@code i} and rewrites its ancestors, serialised with every other update. */
    void update(int i, long key) {
        synchronized (this) {
            write(i, key);
        }
    }

    /** {@link #update} without the lock (for one thread at a time). */
    final void write(int i, long key) {
        int t = leaves + i;
        boolean none = noRoom(key);
        // a node without room ranks nowhere: its load would make every subtree above it look best
        // (binpack: a full node has the highest load; spread: an idle node without open GPUs the
        // lowest), so that a visit walks those subtrees first, finds nothing and runs out of budget
        maxKey.setOpaque(t, none ? key & ~(long) LOAD_MASK : key);
        minLoad.setOpaque(t, none ? LOAD_MASK : (int) (key & LOAD_MASK));
        for (t >>>= 1; t >= 1; t >>>= 1) {
            int l = 2 * t;
            maxKey.setOpaque(t, combine(maxKey.getOpaque(l), maxKey.getOpaque(l + 1)));
            minLoad.setOpaque(t, Math.min(minLoad.getOpaque(l), minLoad.getOpaque(l + 1)));
        }
    }

    /**
     * Whether every entry is the combination of its two children ({@link #combine}, and the lower
     * load): what holds once no update is under way.
     */
    final boolean consistent() {
        for (int t = 1; t < leaves; t++) {
            int l = 2 * t;
            if (maxKey.getOpaque(t) != combine(maxKey.getOpaque(l), maxKey.getOpaque(l + 1))
                    || minLoad.getOpaque(t) != Math.min(minLoad.getOpaque(l), minLoad.getOpaque(l + 1))) {
                return false;
            }
        }
        return true;
    }

    /**
     * Whether a node with this key has no room for any claim with GPUs: no GPU with a free tenant slot
     * and no empty GPU ({@link NodeIndex#cause} refuses every shared claim, {@code TOO_MANY_TENANTS} or
     * {@code NOT_ENOUGH_GPUS}, and every exclusive one, {@code EXCLUSIVE}). Its leaf keeps the key's
     * fields but not its load: no visit hands such a node out, so its load only ever made the rank
     * bounds of the subtrees above it looser.
     */
    static boolean noRoom(long key) {
        return NodeIndex.slotGpus(key) == 0 && NodeIndex.emptyGpus(key) == 0;
    }

    /**
     * When the field-wise maximum of every key already refuses the claim at its first test, the code
     * every node's key refuses it with: {@code EXCLUSIVE} (an exclusive claim: no node has {@code k}
     * empty GPUs of the class) or {@code NOT_ENOUGH_GPUS} (a shared one: no node has {@code k} open
     * GPUs); else null (some node may pass that test, or the tree is empty). Exact for the keys the
     * tree was updated with; like every read of the tree, it may see an update half-way.
     */
    @Nullable ReasonCode refusesEvery(ClaimShape c) {
        if (size == 0 || c.hostOnly) {
            return null;
        }
        ReasonCode code = NodeIndex.cause(rootKey(), c);
        return code == ReasonCode.EXCLUSIVE || code == ReasonCode.NOT_ENOUGH_GPUS ? code : null;
    }

    /** The field-wise maximum of every key (0 for an empty tree). */
    final long rootKey() {
        return maxKey.getOpaque(1);
    }

    /**
     * The field-wise maximum of two keys: every field of the result is the larger of the two fields
     * (so a key test that passes on either key passes on the result).
     */
    long combine(long a, long b) {
        return max(a, b, 0, LOAD_MASK) | max(a, b, 16, 0xF) | max(a, b, 20, 0xF) | max(a, b, 24, 0xFF)
                | max(a, b, 32, 0xFF) | max(a, b, 40, 0xFFFFFF);
    }

    private static long max(long a, long b, int shift, long mask) {
        return Math.max((a >>> shift) & mask, (b >>> shift) & mask) << shift;
    }

    /** What a visit does with each node it hands out. */
    interface Visitor {
        /** Node {@code i}, whose key is {@code key} and rank {@code rank}; false to stop the visit. */
        boolean node(int i, long key, double rank);
    }

    /**
     * Hands out every node whose key lets the claim through ({@link NodeIndex#cause} is null), best
     * rank first ({@code nodeWeight * (binpack ? load : 1 - load)} with {@code load} the key's,
     * ties: lower position first), until the visitor says stop or the tree has no more; true then.
     * False when it gave up after taking {@code budget} entries off its queue (subtrees and nodes):
     * the field-wise maxima of a subtree can let a claim through that none of its nodes' keys does,
     * and on such a cluster a scan of every key is cheaper. Not for host-only claims (the keys know
     * GPUs only).
     */
    final boolean visit(ClaimShape c, double nodeWeight, int budget, Visitor v) {
        if (size == 0 || NodeIndex.cause(maxKey.getOpaque(1), c) != null) {
            return true;
        }
        Queue q = QUEUES.get();
        if (q.busy) {
            q = new Queue();   // a visit from inside a visitor (none in the engine) queues apart
        }
        q.busy = true;
        try {
            return visit(c, nodeWeight, budget, v, q);
        } finally {
            q.busy = false;
        }
    }

    /**
     * A visit's queue, kept per thread between visits (a visit made two arrays per claim, a tenth of
     * the scheduling pass's allocation). A visit reads only the entries it has written.
     */
    private static final class Queue {
        int[] heap = new int[32];
        double[] rank = new double[32];
        boolean busy;
    }

    private static final ThreadLocal<Queue> QUEUES = ThreadLocal.withInitial(Queue::new);

    private boolean visit(ClaimShape c, double nodeWeight, int budget, Visitor v, Queue q) {
        boolean binpack = c.nodeBinpack;
        int[] heap = q.heap;
        double[] rank = q.rank;
        int n = 0;
        heap[n] = 1;
        rank[n++] = rank(1, binpack, nodeWeight);
        for (int taken = 0; n > 0; taken++) {
            if (taken == budget) {
                return false;
            }
            int t = heap[0];
            double r = rank[0];
            n--;
            heap[0] = heap[n];
            rank[0] = rank[n];
            down(heap, rank, n);
            if (t >= leaves) {
                int i = t - leaves;
                if (!v.node(i, maxKey.getOpaque(t), r)) {
                    return true;
                }
                continue;
            }
            for (int child = 2 * t; child <= 2 * t + 1; child++) {
                if (child - leaves >= size || NodeIndex.cause(maxKey.getOpaque(child), c) != null) {
                    continue;   // padding past the last node, or no node below lets the claim through
                }
                if (n == heap.length) {
                    heap = java.util.Arrays.copyOf(heap, 2 * n);
                    rank = java.util.Arrays.copyOf(rank, 2 * n);
                    q.heap = heap;
                    q.rank = rank;
                }
                heap[n] = child;
                rank[n] = rank(child, binpack, nodeWeight);
                up(heap, rank, n++);
            }
        }
        return true;
    }

    /**
     * The budget of a visit that wants {@code wanted} nodes: what a walk down to each of them takes
     * ({@code wanted * (depth + 1)} entries; 104 for 8 nodes of 4,000). What a visit that gives up
     * took is lost, so the budget is kept small: when the maxima are tight, a visit takes far less.
     */
    int budget(int wanted) {
        return wanted * (Integer.numberOfTrailingZeros(leaves) + 1);
    }

    /** The optimistic rank of entry {@code t}: the pass's rank of its best load. */
    private double rank(int t, boolean binpack, double nodeWeight) {
        double load = (binpack ? (int) (maxKey.getOpaque(t) & LOAD_MASK) : minLoad.getOpaque(t)) / 65535.0;
        return nodeWeight * (binpack ? load : 1.0 - load);
    }

    /** The first node position below entry {@code t}. */
    private int first(int t) {
        return (t << (Integer.numberOfLeadingZeros(t) - Integer.numberOfLeadingZeros(leaves))) - leaves;
    }

    /** Whether entry {@code a} (rank {@code ra}) goes before entry {@code b}: higher rank, then lower first position. */
    private boolean before(int a, double ra, int b, double rb) {
        return ra > rb || (ra == rb && first(a) < first(b));
    }

    private void up(int[] heap, double[] rank, int j) {
        int t = heap[j];
        double r = rank[j];
        while (j > 0) {
            int p = (j - 1) >>> 1;
            if (!before(t, r, heap[p], rank[p])) {
                break;
            }
            heap[j] = heap[p];
            rank[j] = rank[p];
            j = p;
        }
        heap[j] = t;
        rank[j] = r;
    }

    private void down(int[] heap, double[] rank, int n) {
        if (n == 0) {
            return;
        }
        int j = 0;
        int t = heap[0];
        double r = rank[0];
        while (true) {
            int l = 2 * j + 1;
            if (l >= n) {
                break;
            }
            int b = l + 1 < n && before(heap[l + 1], rank[l + 1], heap[l], rank[l]) ? l + 1 : l;
            if (!before(heap[b], rank[b], t, r)) {
                break;
            }
            heap[j] = heap[b];
            rank[j] = rank[b];
            j = b;
        }
        heap[j] = t;
        rank[j] = r;
    }
}
