package io.qgpu.core.placement;

import io.qgpu.api.ClusterView;
import io.qgpu.api.placement.GpuSet;
import io.qgpu.api.placement.GpuSetScorer;
import io.qgpu.api.placement.Score;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * Finds the best set of {@code k} GPUs among a node's admissible ones.
 *
 * <p>Set score (see {@link PlacementEngine} for the full formula and {@link PlacementScores} for each
 * term): {@code cliqueWeight * clique(S) + linkWeight * link(S) + leftoverWeight * leftover(S)
 * + loadWeight * policyTerm(meanLoad(S))} plus each registered {@link GpuSetScorer}'s
 * {@code weight * score}, plus the tie-breaks {@code TIE_BREAK * (numaWeight * numa(S) + pcieWeight * pcie(S) / pairs)}
 * and, for a single GPU, {@code CONNECTIVITY_TIE_BREAK * leftoverWeight * connectivity(S)}: scaled so
 * that they decide only between sets the other terms rank equal (see {@link PlacementScores#TIE_BREAK}).
 * The chosen set then carries its NUMA and PCIe terms at their full weights, and no tie-break, into
 * the node's total ({@code total}): across nodes they weigh as before, and the tie-breaks (the
 * connectivity one included) never decide between nodes. {@code leftover(S)} is relative:
 * {@code 1 - (maxLeft[j] - left(S))}, where {@code j} is how many idle GPUs {@code S} takes and
 * {@code maxLeft[j]} the most any set of the node taking as many idle GPUs leaves behind. So the
 * look-ahead decides which idle GPUs a claim takes, never how many (the GPU policy decides that),
 * and it adds the same {@code leftoverWeight} to the best set of every node (it never moves a claim
 * to another node).
 *
 * <p>Constraints: the claim's must-include GPUs ({@code fixed}) are in every set; with
 * {@code numa: required} a set of two or more GPUs on different (or unknown) NUMA nodes is never
 * chosen. When no set satisfies them, {@link #best} answers {@code null}.
 *
 * <p>Search: when {@code C(m, k - fixed)} is at most {@code exhaustiveSetLimit}, every set is
 * enumerated once in lexicographic order of the free part, each set's score and {@code left} kept
 * (so {@code maxLeft} is known at the end), then ranked with the look-ahead, and the first best is kept. Beyond, a bounded greedy search without the look-ahead: from each of the {@code greedySeeds} GPUs with the best policy term (or from the
 * must-include GPUs alone), add the GPU that raises the built-in score without the look-ahead most
 * until {@code k} are chosen, then swap one non-fixed member for one non-member while the full score
 * improves (at most {@code 4k} passes); the best result wins. A claim of one GPU without must-include
 * GPUs (most claims) takes {@link #bestOne}: every GPU is a set, so the enumeration is a loop over the
 * admissible GPUs with the same additions in the same order, without its per-search arrays, and the
 * claim-independent terms of each GPU ({@code left} and connectivity) come from the node summary
 * ({@link NodeSummary#singleGpuLefts}); {@link #enumerated} is the general search it agrees with.
 *
 * <p>Thread safety: one instance per search; not shared.
 */
final class SetSearch {
    private final NodeSummary s;
    private final ClaimShape c;
    private final PlacementConfig cfg;
    private final GpuSetScorer[] scorers;
    private final double[] weights;
    private final ClusterView view;
    /**
     * {@code maxLeft[j]}: the most any evaluated full set that takes {@code j} free (idle) GPUs leaves
     * behind ({@code left}); set by {@link #best} and {@link #single}.
     */
    private final double[] maxLeft;

    SetSearch(NodeSummary s, ClaimShape c, PlacementConfig cfg, GpuSetScorer[] scorers, double[] weights,
              ClusterView view) {
        this.s = s;
        this.c = c;
        this.cfg = cfg;
        this.scorers = scorers;
        this.weights = weights;
        this.view = view;
        this.maxLeft = new double[c.k + 1];
        Arrays.fill(maxLeft, Double.NEGATIVE_INFINITY);
    }

    /** Best set (ascending positions) and its score, the look-ahead counted relative to the node's best. */
    @SuppressWarnings("ArrayRecordComponent") // package-private carrier, never compared or hashed; not copied on the hot path
    record Choice(int[] positions, double score) {
    }

    /** The most any evaluated set taking as many idle GPUs as {@code positions} leaves behind. */
    double maxLeftFor(int[] positions) {
        return maxLeft[taken(positions, positions.length)];
    }

    /**
     * The best set of {@code c.k} among {@code cand[0..m)} (ascending positions, {@code m >= k}) that
     * contains {@code fixed[0..f)} (must-include positions, all among {@code cand}); null when no set
     * satisfies the claim's constraints.
     */
    @Nullable Choice best(int[] cand, int m, int[] fixed, int f) {
        if (c.k == 1 && f == 0 && s.size <= 64) {
            long mask = 0;
            for (int i = 0; i < m; i++) {
                mask |= 1L << cand[i];
            }
            return bestOne(mask);
        }
        return enumerated(cand, m, fixed, f);
    }

    /**
     * {@link #best} by the general search for every {@code k} (the exhaustive enumeration or the greedy
     * search), without the single-GPU path: the reference {@link #bestOne} is held to.
     */
    @Nullable Choice enumerated(int[] cand, int m, int[] fixed, int f) {
        int k = c.k;
        int[] free = cand;
        int fm = m;
        if (f > 0) {
            free = new int[m];
            fm = 0;
            for (int i = 0; i < m; i++) {
                if (!contains(fixed, f, cand[i])) {
                    free[fm++] = cand[i];
                }
            }
        }
        int want = k - f;
        if (fm < want) {
            return null;
        }
        if (binomialAtMost(fm, want, cfg.exhaustiveSetLimit())) {
            return exhaustive(free, fm, fixed, f, k);
        }
        return greedy(free, fm, fixed, f, k);
    }

    /**
     * {@link #best} for a claim of one GPU without must-include GPUs on a node of at most 64 GPUs, the
     * admissible GPUs given as a mask (bit {@code g}: GPU {@code g}): the same GPU and the same score, to
     * the last bit, as {@link #enumerated}, whose sets of one GPU are the GPUs in ascending order. The
     * same two passes without the enumeration's arrays: first {@code maxLeft} over the GPUs, then each
     * GPU's ranked score ({@link #one}, the look-ahead added by {@link #lookAheadTerm}), the first best
     * kept; the terms of each GPU's set that do not depend on the claim ({@code left} and connectivity)
     * come from the summary's table ({@link NodeSummary#singleGpuLefts}). Null when the mask is empty.
     * More GPUs than {@code exhaustiveSetLimit} (a limit below the node's size): {@link #enumerated}
     * itself, which searches greedily then.
     */
    @Nullable Choice bestOne(long cand) {
        if (cand == 0) {
            return null;
        }
        int m = Long.bitCount(cand);
        if (m > cfg.exhaustiveSetLimit()) {
            // more sets than the limit: the general search is the greedy one
            int[] positions = new int[m];
            int n = 0;
            for (long b = cand; b != 0; b &= b - 1) {
                positions[n++] = Long.numberOfTrailingZeros(b);
            }
            return enumerated(positions, m, NO_COUNTS, 0);
        }
        boolean look = cfg.leftoverWeight() > 0;
        double[] lefts = s.singleGpuLefts();
        long idle = s.freeMask;
        if (look) {
            for (long b = cand; b != 0; b &= b - 1) {
                int g = Long.numberOfTrailingZeros(b);
                int j = (int) (idle >>> g & 1L);   // taken({g})
                maxLeft[j] = Math.max(maxLeft[j], lefts[2 * g]);
            }
        }
        int best = -1;
        double bestScore = Double.NEGATIVE_INFINITY;
        int[] set = scorers.length > 0 ? new int[1] : NO_COUNTS;
        for (long b = cand; b != 0; b &= b - 1) {
            int g = Long.numberOfTrailingZeros(b);
            double v = one(g, true, true, lefts[2 * g + 1]);
            if (scorers.length > 0) {
                set[0] = g;
                v = withScorers(v, set, 1);
            }
            if (look) {
                v += lookAheadTerm((int) (idle >>> g & 1L), lefts[2 * g]);
            }
            if (v > bestScore) {
                bestScore = v;
                best = g;
            }
        }
        if (best < 0) {
            return null;   // no score above -infinity: a NaN score, as in the enumeration
        }
        int[] chosen = {best};
        return new Choice(chosen, total(chosen, 1) + lookAhead(chosen, 1));
    }

    /** The score of exactly this set, its look-ahead counted against itself (the only set evaluated). */
    @Nullable Choice single(int[] positions) {
        double v = total(positions, positions.length);
        if (v == Double.NEGATIVE_INFINITY) {
            return null;
        }
        noteLeft(positions, positions.length);
        return new Choice(positions, v + lookAhead(positions, positions.length));
    }

    /**
     * The score of {@code positions} against this search's {@code maxLeft} (after {@link #best}):
     * what {@link #best} would have given it. Null-free; {@code -infinity} for a set that breaks
     * {@code numa: required}.
     */
    double scoreOf(int[] positions) {
        double v = total(positions, positions.length);
        return v == Double.NEGATIVE_INFINITY ? v : v + lookAhead(positions, positions.length);
    }

    /** Records {@code left(S)} in {@link #maxLeft}; false for a set that breaks {@code numa: required}. */
    private boolean noteLeft(int[] set, int len) {
        if (c.numaRequired && len > 1 && !s.sameKnownNuma(set, len)) {
            return false;
        }
        int j = taken(set, len);
        maxLeft[j] = Math.max(maxLeft[j], cfg.leftoverWeight() > 0 ? s.leftAfter(set, len) : 1.0);
        return true;
    }

    /** {@code leftoverWeight * (1 - (maxLeft[j] - left(S)))}, j the idle GPUs the set takes. */
    private double lookAhead(int[] set, int len) {
        if (cfg.leftoverWeight() == 0) {
            return 0.0;
        }
        return lookAheadTerm(taken(set, len), s.leftAfter(set, len));
    }

    /** {@code leftoverWeight * (1 - (maxLeft[j] - left))}: the look-ahead of a set taking {@code j} idle GPUs that leaves {@code left}. */
    private double lookAheadTerm(int j, double left) {
        return cfg.leftoverWeight() * (1.0 - (maxLeft[j] - left));
    }

    /**
     * The tie-break within a node, before {@code TIE_BREAK}: {@code numaWeight * numa + pcieWeight * pcie / pairs}.
     * A set with one more pair on one NUMA node gains {@code numaWeight / pairs}; PCIe closeness moves
     * the term by less than {@code pcieWeight * (5/6) / pairs}, so one NUMA node comes before PCIe
     * closeness whenever {@code numaWeight > 5/6 * pcieWeight} (0.1 against 0.05 by default).
     */
    private double withinNode(double numa, double pcie, double pairs) {
        return cfg.numaWeight() * numa + cfg.pcieWeight() * pcie / pairs;
    }

    /** How many of the set's GPUs are idle (in the node's free mask). */
    private int taken(int[] set, int len) {
        int j = 0;
        for (int i = 0; i < len; i++) {
            j += set[i] < 64 && (s.freeMask >>> set[i] & 1L) != 0 ? 1 : 0;
        }
        return j;
    }

    /**
     * One pass over every set in lexicographic order, keeping each valid set's score without the
     * look-ahead, its {@code left} and {@code j} (and so {@code maxLeft}); then a scan of the kept
     * values in the same order adds the look-ahead and keeps the first best. The same additions, in
     * the same order, as ranking in a second enumeration: the same set and the same score to the
     * last bit, without enumerating and scoring twice.
     */
    private @Nullable Choice exhaustive(int[] cand, int m, int[] fixed, int f, int k) {
        int want = k - f;
        int[] set = new int[k];
        System.arraycopy(fixed, 0, set, 0, f);
        int[] idx = new int[want];
        for (int i = 0; i < want; i++) {
            idx[i] = i;
        }
        boolean look = cfg.leftoverWeight() > 0;
        int sets = (int) Math.min(Integer.MAX_VALUE - 8, binomial(m, want));
        double[] scores = look ? new double[sets] : NO_VALUES;
        double[] lefts = look ? new double[sets] : NO_VALUES;
        int[] takens = look ? new int[sets] : NO_COUNTS;
        int bestN = -1;
        double bestScore = Double.NEGATIVE_INFINITY;
        int n = 0;
        while (true) {
            for (int i = 0; i < want; i++) {
                set[f + i] = cand[idx[i]];
            }
            double v = score(set, k, true);   // -infinity exactly when the set breaks numa: required
            if (look) {
                scores[n] = v;
                if (v != Double.NEGATIVE_INFINITY) {
                    int j = taken(set, k);
                    double left = s.leftAfter(set, k);
                    lefts[n] = left;
                    takens[n] = j;
                    maxLeft[j] = Math.max(maxLeft[j], left);
                }
            } else if (v != Double.NEGATIVE_INFINITY && v > bestScore) {
                bestScore = v;
                bestN = n;
            }
            n++;
            if (!next(idx, want, m)) {
                break;
            }
        }
        if (look) {
            for (int i = 0; i < n; i++) {
                double v = scores[i];
                if (v != Double.NEGATIVE_INFINITY) {
                    v += lookAheadTerm(takens[i], lefts[i]);
                    if (v > bestScore) {
                        bestScore = v;
                        bestN = i;
                    }
                }
            }
        }
        if (bestN < 0) {
            return null;
        }
        // the bestN-th set of the enumeration
        for (int i = 0; i < want; i++) {
            idx[i] = i;
        }
        for (int i = 0; i < bestN; i++) {
            next(idx, want, m);
        }
        int[] best = new int[k];
        System.arraycopy(fixed, 0, best, 0, f);
        for (int i = 0; i < want; i++) {
            best[f + i] = cand[idx[i]];
        }
        Arrays.sort(best);
        return new Choice(best, total(best, k) + lookAhead(best, k));
    }

    private static final double[] NO_VALUES = new double[0];
    private static final int[] NO_COUNTS = new int[0];

    /** Advances {@code idx[0..want)} to the next combination of {@code want} of the indices 0 to {@code m - 1} in lexicographic order; false after the last. */
    private static boolean next(int[] idx, int want, int m) {
        int i = want - 1;
        while (i >= 0 && idx[i] == m - want + i) {
            i--;
        }
        if (i < 0) {
            return false;
        }
        idx[i]++;
        for (int j = i + 1; j < want; j++) {
            idx[j] = idx[j - 1] + 1;
        }
        return true;
    }

    /** C(m, k), exact for the sizes {@link #binomialAtMost} lets through. */
    private static long binomial(int m, int k) {
        if (m < PASCAL_ROWS) {
            return PASCAL[m][k];
        }
        int kk = Math.min(k, m - k);
        long v = 1;
        for (int i = 0; i < kk; i++) {
            v = v * (m - i) / (i + 1);
        }
        return v;
    }

    /**
     * Greedy growth and local improvement, without the look-ahead (it is part of the exhaustive search
     * only: with the default limit of 5000 sets, every node of up to 14 GPUs is searched exhaustively).
     */
    private @Nullable Choice greedy(int[] cand, int m, int[] fixed, int f, int k) {
        // seeds: the GPUs with the best policy term (ties: lower position first); with must-include
        // GPUs, those alone are the seed
        Integer[] order = new Integer[m];
        for (int i = 0; i < m; i++) {
            order[i] = cand[i];
        }
        Arrays.sort(order, (a, b) -> {
            int cmp = Double.compare(policy(s.load[b]), policy(s.load[a]));
            return cmp != 0 ? cmp : Integer.compare(a, b);
        });
        int seeds = f > 0 ? 1 : Math.min(m, cfg.greedySeeds());
        int start = Math.max(f, 1);
        int[] best = null;
        double bestScore = Double.NEGATIVE_INFINITY;
        boolean[] in = new boolean[s.size];
        int[] set = new int[k];
        for (int sd = 0; sd < seeds; sd++) {
            Arrays.fill(in, false);
            if (f > 0) {
                System.arraycopy(fixed, 0, set, 0, f);
            } else {
                set[0] = order[sd];
            }
            for (int i = 0; i < start; i++) {
                in[set[i]] = true;
            }
            boolean grown = true;
            for (int len = start; len < k && grown; len++) {
                int pick = -1;
                double pickScore = Double.NEGATIVE_INFINITY;
                for (int i = 0; i < m; i++) {
                    int p = cand[i];
                    if (in[p]) {
                        continue;
                    }
                    set[len] = p;
                    double v = score(set, len + 1, false);
                    if (v > pickScore) {
                        pickScore = v;
                        pick = p;
                    }
                }
                grown = pick >= 0;
                if (grown) {
                    set[len] = pick;
                    in[pick] = true;
                }
            }
            if (!grown) {
                continue;   // no GPU could join this seed (numa: required)
            }
            double cur = absolute(set, k);
            boolean improved = true;
            for (int pass = 0; improved && pass < 4 * k; pass++) {
                improved = false;
                for (int j = f; j < k; j++) {
                    int out = set[j];
                    for (int i = 0; i < m; i++) {
                        int p = cand[i];
                        if (in[p]) {
                            continue;
                        }
                        set[j] = p;
                        double v = absolute(set, k);
                        if (v > cur + 1e-12) {
                            cur = v;
                            in[out] = false;
                            in[p] = true;
                            out = p;
                            improved = true;
                        } else {
                            set[j] = out;
                        }
                    }
                }
            }
            int[] sorted = set.clone();
            Arrays.sort(sorted);
            if (cur > bestScore) {
                bestScore = cur;
                best = sorted;
            }
        }
        if (best == null || bestScore == Double.NEGATIVE_INFINITY) {
            return null;
        }
        // no look-ahead here: the chosen set is its own reference (term 1, as the best set of any node)
        noteLeft(best, k);
        return new Choice(best, total(best, k) + lookAhead(best, k));
    }

    /** A full set's score without the look-ahead (the greedy search does not look ahead). */
    private double absolute(int[] set, int k) {
        return score(set, k, true);
    }

    private double policy(double load) {
        return c.gpuBinpack ? load : 1.0 - load;
    }

    /**
     * Score of {@code set[0..len)} without the look-ahead. {@code full}: the set has {@code k} GPUs and
     * the registered scorers are added (partial sets of the greedy growth are ranked by the built-in
     * terms only). {@code -infinity} for a set that breaks {@code numa: required}.
     */
    double score(int[] set, int len, boolean full) {
        return score(set, len, full, true);
    }

    /**
     * The chosen set's score as it counts in its node's total, without the look-ahead: the NUMA and
     * PCIe terms at their full weights and no tie-break. Within a node the tie-breaks only order sets
     * the other terms rank equal; they never reach the total, so they cannot move a claim to another
     * node, and the total is the same number, to the last bit, as the score before the tie-breaks
     * existed (the terms are added in the same order).
     */
    private double total(int[] set, int len) {
        return score(set, len, true, false);
    }

    /**
     * {@link #score(int[], int, boolean)} when {@code ranked}: the tie-breaks (NUMA, then PCIe, then a
     * single GPU's connectivity) scaled below every other term; else the node-total form ({@link #total}).
     */
    private double score(int[] set, int len, boolean full, boolean ranked) {
        if (c.numaRequired && len > 1 && !s.sameKnownNuma(set, len)) {
            return Double.NEGATIVE_INFINITY;
        }
        if (len == 1) {
            double v = one(set[0], full, ranked,
                    ranked && full && cfg.leftoverWeight() > 0 ? s.connectivityAfter(set, len) : 0.0);
            return full ? withScorers(v, set, len) : v;
        }
        double loadSum = 0;
        for (int i = 0; i < len; i++) {
            loadSum += s.load[set[i]];
        }
        double v = cfg.loadWeight() * policy(loadSum / len);
        NodeTopo t = s.topo;
        int n = t.size;
        double link = 0;
        double pcie = 0;
        int sameNuma = 0;
        boolean all = true;
        for (int a = 0; a < len; a++) {
            int row = set[a] * n;
            int na = s.numa[set[a]];
            for (int b = a + 1; b < len; b++) {
                link += t.link[row + set[b]];
                pcie += t.pcie[row + set[b]];
                all &= t.nv[row + set[b]];
                sameNuma += na == s.numa[set[b]] ? 1 : 0;
            }
        }
        double pairs = len * (len - 1) / 2.0;   // the product is even: the same value as the int division
        double x = (all ? cfg.cliqueWeight() : 0.0) + cfg.linkWeight() * link / pairs;
        v += ranked ? x + PlacementScores.TIE_BREAK * withinNode(sameNuma / pairs, pcie / pairs, pairs)
                : x + cfg.pcieWeight() * pcie / pairs + cfg.numaWeight() * sameNuma / pairs;
        return full ? withScorers(v, set, len) : v;
    }

    /**
     * The built-in score of the set {@code {g}} without the look-ahead and the registered scorers, as
     * {@link #score(int[], int, boolean, boolean)} gives it: the policy term of the GPU's load (the mean
     * over one GPU: {@code (0 + load) / 1} is {@code load} to the last bit, a load never being -0), the clique and link terms at their full values, then the NUMA and PCIe terms (as tie-breaks
     * when {@code ranked}) and, when {@code ranked} and {@code full} with a look-ahead weight, the
     * connectivity tie-break of {@code connectivity} ({@link NodeSummary#connectivityAfter} of the set;
     * not read otherwise). The one place these terms of a single GPU are added, for
     * {@link #enumerated} and {@link #bestOne} alike.
     */
    private double one(int g, boolean full, boolean ranked, double connectivity) {
        double v = cfg.loadWeight() * policy(s.load[g]);
        double x = cfg.cliqueWeight() + cfg.linkWeight();
        v += ranked ? x + PlacementScores.TIE_BREAK * withinNode(1.0, 1.0, 1) : x + cfg.pcieWeight() + cfg.numaWeight();
        if (ranked && full && cfg.leftoverWeight() > 0) {
            v += PlacementScores.CONNECTIVITY_TIE_BREAK * cfg.leftoverWeight() * connectivity;
        }
        return v;
    }

    /** {@code v} plus each registered set scorer's {@code weight * score} of {@code set[0..len)}, in order. */
    private double withScorers(double v, int[] set, int len) {
        if (scorers.length > 0) {
            GpuSet g = GpuSet.of(Arrays.copyOf(set, len));
            for (int i = 0; i < scorers.length; i++) {
                v += weights[i] * Score.check(scorers[i].name() + ".score",
                        scorers[i].score(c.claim, s.state, g, view));
            }
        }
        return v;
    }

    /** Rows of {@link #PASCAL}: nodes of up to 64 GPUs (C(64, 32) is below {@code Long.MAX_VALUE}). */
    private static final int PASCAL_ROWS = 65;

    /**
     * {@code PASCAL[m][k] = C(m, k)} for {@code m < PASCAL_ROWS}, exact: the search asks for these
     * for every node it searches, and a table look-up costs less than the divisions of the product
     * formula (a visible share of a scheduling pass).
     */
    private static final long[][] PASCAL = pascal(PASCAL_ROWS);

    private static long[][] pascal(int rows) {
        long[][] t = new long[rows][];
        for (int m = 0; m < rows; m++) {
            t[m] = new long[m + 1];
            t[m][0] = 1;
            t[m][m] = 1;
            for (int k = 1; k < m; k++) {
                t[m][k] = t[m - 1][k - 1] + t[m - 1][k];
            }
        }
        return t;
    }

    private static boolean contains(int[] a, int len, int v) {
        for (int i = 0; i < len; i++) {
            if (a[i] == v) {
                return true;
            }
        }
        return false;
    }

    /** Whether C(m, k) is at most {@code limit}, without overflow. */
    static boolean binomialAtMost(int m, int k, long limit) {
        if (m < PASCAL_ROWS) {
            // the exact value: the loop's answer (which, like this, lets C(m, 0) = C(m, m) = 1 through at any limit)
            return k == 0 || k == m || PASCAL[m][k] <= limit;
        }
        int kk = Math.min(k, m - k);
        long v = 1;
        for (int i = 0; i < kk; i++) {
            v = v * (m - i) / (i + 1);
            if (v > limit) {
                return false;
            }
        }
        return true;
    }
}
