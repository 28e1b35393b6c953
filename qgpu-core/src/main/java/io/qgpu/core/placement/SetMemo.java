package io.qgpu.core.placement;

import java.util.concurrent.atomic.AtomicReferenceArray;
import org.jspecify.annotations.Nullable;

/**
 * The best GPU set of a node for a claim's set shape, remembered between claims: in a scheduling pass
 * the same few shortlisted nodes are searched for claim after claim, and after a commit only the node
 * that took the claim has changed, so the other searches would repeat to the last bit.
 *
 * <p>Exactness. An entry is keyed by the {@link NodeSummary} itself, by its {@link NodeSummary#serial}
 * (a number no other summary of the process has: a summary is an immutable snapshot of one node state,
 * replaced whenever the node changes, so the same serial always means the same loads, NUMA nodes, idle
 * and healthy GPUs and topology) together with
 * every other input of {@link SetSearch#best} that varies between claims: the admissible GPUs (a bit
 * mask, {@link NodeVerdicts#candidateMask}, which already carries the claim's memory, compute, class, selectors,
 * labels and the registered GPU filters), {@code k}, the GPU policy (binpack or spread) and
 * {@code numa: required}. The engine's {@link PlacementConfig} is fixed per {@link NodePass}, which
 * owns its memo. {@link NodePass} consults the memo only where nothing else enters the score: no
 * registered {@link io.qgpu.api.placement.GpuSetScorer} (its score may read the ledger or the
 * claim), a node policy other than {@code fragmentation} (whose term depends on the cluster-wide
 * request mix), no must-include GPUs, and nodes of at most 64 GPUs (the mask). Where it applies, a hit
 * answers what the search would answer, positions and score bit for bit;
 * {@code SetMemoTest} checks it against engines without a memo on seeded random clusters and claims,
 * with releases and under every policy, and shows that a memo keyed by the node's name rather than its
 * summary is caught.
 *
 * <p>An entry holds the summary's serial, not the summary: a remembered answer does not keep an old
 * node state reachable (each one did, until its slot was taken, and the collector copied them).
 *
 * <p>A remembered {@link SetSearch.Choice} is handed to every caller that hits it: its positions are
 * read-only by contract (no caller in the engine writes them).
 *
 * <p>Memory: a direct-mapped table of {@value #SLOTS} entries, each replacing whatever held its slot;
 * an entry holds its key and its choice (positions and score), no summary or node state.
 *
 * <p>Thread safety: safe for any number of concurrent passes. Entries are immutable (final fields)
 * and read and written whole through an {@link AtomicReferenceArray}; a racing reader sees no entry,
 * an older one or a newer one, each of them a correct answer for its own key, which is compared in
 * full before use. A lost write only costs a later search.
 */
class SetMemo {
    static final int SLOTS = 1 << 12;

    /** One remembered answer; {@code choice} null when no set satisfies the constraints. */
    record Entry(long node, long cand, int shape, SetSearch.@Nullable Choice choice) {
    }

    private final AtomicReferenceArray<@Nullable Entry> slots = new AtomicReferenceArray<>(SLOTS);

    /** The set-shape part of the key: {@code k}, the GPU policy and {@code numa: required}. */
    static int shape(ClaimShape c) {
        return c.k << 2 | (c.gpuBinpack ? 2 : 0) | (c.numaRequired ? 1 : 0);
    }

    /** The entry for the key, or null when none is remembered. */
    @Nullable Entry get(NodeSummary s, long cand, int shape) {
        long node = nodeKey(s);
        Entry e = slots.getOpaque(slot(node, cand, shape));
        return e != null && e.node == node && e.cand == cand && e.shape == shape ? e : null;
    }

    /** Remembers the answer for the key (replacing whatever held its slot). */
    void put(NodeSummary s, long cand, int shape, SetSearch.@Nullable Choice choice) {
        long node = nodeKey(s);
        slots.setOpaque(slot(node, cand, shape), new Entry(node, cand, shape, choice));
    }

    private static int slot(long node, long cand, int shape) {
        long h = node * 0x9E3779B97F4A7C15L + cand * 0xC2B2AE3D27D4EB4FL + shape;
        h ^= h >>> 29;
        h *= 0xBF58476D1CE4E5B9L;
        return (int) (h >>> 40) & (SLOTS - 1);
    }

    /**
     * The node part of the key: the summary's {@link NodeSummary#serial}, equal for two summaries only
     * when they are the same object, that is the same node state. (Overridden only by the deliberately
     * broken memo of the tests.)
     */
    long nodeKey(NodeSummary s) {
        return s.serial;
    }
}
