package io.qgpu.core.placement;

import io.qgpu.api.ReasonCode;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * The refusal tiers of one node for one priority class: what a shared claim of several GPUs, or of
 * one GPU that needs memory and compute on the same GPU, needs beyond the largest free values of the
 * node's first {@link NodeIndex} key. Taken over the GPUs open to the class with a free tenant slot
 * (the GPUs the largest free memory and compute are taken over), each a necessary condition: a node
 * with {@code k} GPUs that admit a claim is never refused by them.
 * <ul>
 *   <li><b>Tiers</b> ({@link #key}): the 4th and 8th largest free memory and the 2nd, 4th and 8th
 *       largest free guaranteed compute of the class; a claim of {@code k} GPUs needs {@code k} of
 *       them with its memory and its compute, so the {@code t}-th largest, for the largest tier
 *       {@code t <= k} ({@link #tier}), must cover it (shared claims of 2 to 14 GPUs).</li>
 *   <li><b>Levels</b> ({@link #level}): memory and compute together. For each compute level
 *       {@code L} of {@link #LEVELS}, the 1st to 8th largest free memory among those GPUs whose free
 *       guaranteed compute of the class is at least {@code L}, one byte each, quantised
 *       ({@link #quantize}, rounded down). A shared claim of {@code k} GPUs that asks for compute
 *       {@code C} needs {@code k} GPUs each with its memory and at least {@code C >= L} compute, for
 *       the highest level {@code L <= C}: the {@code min(k, 8)}-th largest of that level must cover
 *       its memory. This is what the largest values miss on a nearly full cluster: one GPU with the
 *       memory, another with the compute, none with both.</li>
 * </ul>
 * The summary decides the levels on the very bytes the index streams through, so a node the level
 * key refuses has the same cause on its summary.
 *
 * <p>Thread safety: immutable (arrays never written after construction).
 */
final class RefusalTiers {
    /** The compute levels (free guaranteed compute of the class, percent) of the level keys. */
    static final int[] LEVELS = {0, 1, 5, 10, 20, 50};
    private static final long TIER_MEM_MAX = (1L << 21) - 1;

    final long mem4;
    final long mem8;
    final int cpt2;
    final int cpt4;
    final int cpt8;
    /** Largest free memory and compute (over the same GPUs), for the words of a refusal. */
    private final long[] mems;
    private final int[] cpts;
    private final int n;
    private final long key;
    private final long[] levels = new long[LEVELS.length];

    /**
     * The tiers of the GPUs {@code 0..n)} of {@code mems} (free memory, bytes) and {@code cpts} (free
     * guaranteed compute of the class, clamped to -1..100), index-aligned; the arrays are kept, their
     * pairs reordered by free memory, largest first.
     *
     * <p>Two sorts of at most {@code n} values (insertion sorts: {@code n} is a node's GPU count) instead
     * of one per tier and level: the pairs by memory, which gives the memory tiers and, read in that
     * order, the {@code t}-th largest memory of every level (the first {@code t} pairs reaching its
     * compute); and a copy of the compute values for the compute tiers. The values are those of sorting
     * each tier and level apart: a {@code t}-th largest does not depend on the order of equal values.
     */
    RefusalTiers(long[] mems, int[] cpts, int n) {
        for (int i = 1; i < n; i++) {
            long m = mems[i];
            int c = cpts[i];
            int j = i;
            for (; j > 0 && mems[j - 1] < m; j--) {
                mems[j] = mems[j - 1];
                cpts[j] = cpts[j - 1];
            }
            mems[j] = m;
            cpts[j] = c;
        }
        this.mems = mems;
        this.cpts = cpts;
        this.n = n;
        this.mem4 = n < 4 ? -1 : mems[3];
        this.mem8 = n < 8 ? -1 : mems[7];
        int[] c = Arrays.copyOf(cpts, n);
        for (int i = 1; i < n; i++) {
            int v = c[i];
            int j = i;
            for (; j > 0 && c[j - 1] < v; j--) {
                c[j] = c[j - 1];
            }
            c[j] = v;
        }
        this.cpt2 = n < 2 ? -1 : c[1];
        this.cpt4 = n < 4 ? -1 : c[3];
        this.cpt8 = n < 8 ? -1 : c[7];
        this.key = cpt(cpt2) | (cpt(cpt4) << 7) | (cpt(cpt8) << 14) | (mib(mem4) << 21) | (mib(mem8) << 42);
        int[] taken = new int[LEVELS.length];
        for (int i = 0; i < n; i++) {
            long code = quantize(Math.max(0, mems[i]) >>> 20) + 1;
            // LEVELS ascend: the GPU counts at every level up to the highest its compute reaches
            for (int j = 0; j < LEVELS.length && cpts[i] >= LEVELS[j]; j++) {
                if (taken[j] < 8) {
                    levels[j] |= code << (8 * taken[j]++);
                }
            }
        }
    }

    /** The tier of a claim of {@code k} GPUs: 8, 4 or 2 (the largest not above k), 0 for one GPU. */
    static int tier(int k) {
        return k >= 8 ? 8 : k >= 4 ? 4 : k >= 2 ? 2 : 0;
    }

    /**
     * The tier key ({@link NodeIndex}, read only for a shared claim of 2 to 14 GPUs; values over the
     * open GPUs of the class with a free tenant slot, each -1 when there are fewer of them; memory
     * rounded down, so it never rejects a node that has room):
     * <pre>
     *   bits  0..6   2nd largest free guaranteed compute of the class, + 1
     *   bits  7..13  4th largest, + 1
     *   bits 14..20  8th largest, + 1
     *   bits 21..41  4th largest free memory, MiB (0 when none; 2^21 - 1 = that much or more)
     *   bits 42..62  8th largest free memory, MiB
     * </pre>
     */
    long key() {
        return key;
    }

    /** The level key of level {@code j} ({@link #LEVELS}): byte {@code t - 1} is the t-th largest, quantised, + 1 (0: none). */
    long level(int j) {
        return levels[j];
    }

    private static long cpt(int v) {
        return Math.max(-1, Math.min(100, v)) + 1L;
    }

    private static long mib(long bytes) {
        return bytes < 0 ? 0 : Math.min(bytes >>> 20, TIER_MEM_MAX);
    }

    /**
     * A monotone 8-bit code of a memory size in MiB: the size itself below 16, else its power of two
     * and the next three bits (8 steps per doubling, at most 12.5% apart); {@code quantize(a) >
     * quantize(b)} only when {@code a > b}. Sizes of 2^24 MiB and more share the top code.
     */
    static long quantize(long mib) {
        long v = Math.max(0, Math.min(mib, (1L << 24) - 1));
        if (v < 16) {
            return v;
        }
        int e = 63 - Long.numberOfLeadingZeros(v);
        return 16 + (e - 4) * 8L + ((v >>> (e - 3)) & 7);
    }

    /**
     * For a shared claim of 2 to 14 GPUs ({@link ClaimShape#tiered}), the cause the tier key shows:
     * the 4th or 8th largest free memory ({@code INSUFFICIENT_MEMORY}), then the 2nd, 4th or 8th
     * largest free compute ({@code INSUFFICIENT_COMPUTE}); null when it lets the claim through.
     */
    static @Nullable ReasonCode tierCause(long tiers, ClaimShape c) {
        int t = tier(c.k);
        if (t >= 4) {
            long mem = (tiers >>> (t == 8 ? 42 : 21)) & TIER_MEM_MAX;
            if (mem != TIER_MEM_MAX && (c.memory >>> 20) > mem) {
                return ReasonCode.INSUFFICIENT_MEMORY;
            }
        }
        int cpt = (int) ((tiers >>> (t == 8 ? 14 : t == 4 ? 7 : 0)) & 0x7F);
        return cpt - 1 < c.minComputeFree ? ReasonCode.INSUFFICIENT_COMPUTE : null;
    }

    /**
     * For a shared claim with GPUs ({@link ClaimShape#levelled}), the cause the level key of its level
     * ({@link ClaimShape#level}) shows: fewer than {@code min(k, 8)} GPUs reach the level's compute
     * ({@code INSUFFICIENT_COMPUTE}), or the {@code min(k, 8)}-th largest free memory among them,
     * quantised, is below the claim's ({@code INSUFFICIENT_MEMORY}); null when it lets the claim through.
     */
    static @Nullable ReasonCode levelCause(long level, ClaimShape c) {
        long have = (level >>> (8 * (Math.min(c.k, 8) - 1))) & 0xFF;
        if (have == 0) {
            return ReasonCode.INSUFFICIENT_COMPUTE;
        }
        return have - 1 < c.memoryCode ? ReasonCode.INSUFFICIENT_MEMORY : null;
    }

    /**
     * The exact {@code t}-th largest free memory ({@code compute} false) or compute behind a refusal:
     * over the GPUs with at least {@code minCompute} free compute; -1 when fewer than {@code t}.
     */
    long largest(int t, int minCompute, boolean compute) {
        long[] v = new long[n];
        int len = 0;
        for (int i = 0; i < n; i++) {
            if (cpts[i] >= minCompute) {
                v[len++] = compute ? cpts[i] : mems[i];
            }
        }
        Arrays.sort(v, 0, len);
        return len < t ? -1 : v[len - t];
    }

    /** The tier's words: {@code 4th largest free on the GPUs with a free tenant slot (4 GPUs needed)}. */
    static String tierWords(int k, String what) {
        int t = tier(k);
        return ordinal(t) + " largest " + what + " on the GPUs with a free tenant slot (" + k + " GPUs needed)";
    }

    /**
     * A level's words: {@code 2nd largest free on the GPUs with a free tenant slot and at least 10% free
     * online guaranteed compute (2 GPU(s) needed)} ({@code memory}), or {@code 2nd largest free online
     * guaranteed compute on the GPUs with a free tenant slot, below 10% (2 GPU(s) needed)}.
     */
    static String levelWords(ClaimShape c, boolean memory) {
        String cpt = "free " + c.claim.priority().wireName() + " guaranteed compute";
        String t = ordinal(Math.min(c.k, 8));
        return memory
                ? t + " largest free on the GPUs with a free tenant slot and at least " + LEVELS[c.level] + "% " + cpt
                        + " (" + c.k + " GPU(s) needed)"
                : t + " largest " + cpt + " on the GPUs with a free tenant slot, below " + LEVELS[c.level] + "% (" + c.k
                        + " GPU(s) needed)";
    }

    private static String ordinal(int t) {
        return t == 1 ? "1st" : t == 2 ? "2nd" : t == 3 ? "3rd" : t + "th";
    }
}
