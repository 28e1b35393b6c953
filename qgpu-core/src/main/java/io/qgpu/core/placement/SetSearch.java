package io.qgpu.core.placement;

import io.qgpu.api.ClusterView;
import io.qgpu.api.placement.GpuSet;
import io.qgpu.api.placement.GpuSetScorer;
import io.qgpu.api.placement.Score;
import java.util.Arrays;

/**
 * Finds the best set of {@code k} GPUs among a node's admissible ones.
 *
 * <p>Set score (see {@link PlacementEngine} for the full formula):
 * {@code cliqueWeight * clique(S) + linkWeight * link(S) + loadWeight * policyTerm(meanLoad(S))}
 * plus each registered {@link GpuSetScorer}'s {@code weight * score}.
 *
 * <p>Search: when {@code C(m, k)} (m admissible GPUs) is at most {@code exhaustiveSetLimit}, every
 * set is enumerated in lexicographic order and the first best is kept. Beyond, a bounded greedy
 * search: from each of the {@code greedySeeds} GPUs with the best policy term, add the GPU that
 * raises the built-in score most until {@code k} are chosen, then swap one member for one
 * non-member while the full score improves (at most {@code 4k} passes); the best result wins.
 * Its cost is {@code O(seeds * (k * m * k^2 + 4k * k * m * k^2))}, independent of {@code C(m, k)}.
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

    SetSearch(NodeSummary s, ClaimShape c, PlacementConfig cfg, GpuSetScorer[] scorers, double[] weights,
              ClusterView view) {
        this.s = s;
        this.c = c;
        this.cfg = cfg;
        this.scorers = scorers;
        this.weights = weights;
        this.view = view;
    }

    /** Best set and its score. */
    record Choice(int[] positions, double score) {
    }

    /** The best set of {@code c.k} among {@code cand[0..m)} (ascending positions, {@code m >= k}). */
    Choice best(int[] cand, int m) {
        int k = c.k;
        if (k == 1) {
            int best = -1;
            double bestScore = Double.NEGATIVE_INFINITY;
            int[] one = new int[1];
            for (int i = 0; i < m; i++) {
                one[0] = cand[i];
                double v = score(one, 1, true);
                if (v > bestScore) {
                    bestScore = v;
                    best = cand[i];
                }
            }
            return new Choice(new int[] {best}, bestScore);
        }
        if (binomialAtMost(m, k, cfg.exhaustiveSetLimit())) {
            return exhaustive(cand, m, k);
        }
        return greedy(cand, m, k);
    }

    private Choice exhaustive(int[] cand, int m, int k) {
        int[] idx = new int[k];
        for (int i = 0; i < k; i++) {
            idx[i] = i;
        }
        int[] set = new int[k];
        int[] best = null;
        double bestScore = Double.NEGATIVE_INFINITY;
        while (true) {
            for (int i = 0; i < k; i++) {
                set[i] = cand[idx[i]];
            }
            double v = score(set, k, true);
            if (v > bestScore) {
                bestScore = v;
                best = set.clone();
            }
            int i = k - 1;
            while (i >= 0 && idx[i] == m - k + i) {
                i--;
            }
            if (i < 0) {
                break;
            }
            idx[i]++;
            for (int j = i + 1; j < k; j++) {
                idx[j] = idx[j - 1] + 1;
            }
        }
        return new Choice(best, bestScore);
    }

    private Choice greedy(int[] cand, int m, int k) {
        // seeds: the GPUs with the best policy term (ties: lower position first)
        Integer[] order = new Integer[m];
        for (int i = 0; i < m; i++) {
            order[i] = cand[i];
        }
        Arrays.sort(order, (a, b) -> {
            int cmp = Double.compare(policy(s.load[b]), policy(s.load[a]));
            return cmp != 0 ? cmp : Integer.compare(a, b);
        });
        int seeds = Math.min(m, cfg.greedySeeds());
        int[] best = null;
        double bestScore = Double.NEGATIVE_INFINITY;
        boolean[] in = new boolean[s.size];
        int[] set = new int[k];
        for (int sd = 0; sd < seeds; sd++) {
            Arrays.fill(in, false);
            set[0] = order[sd];
            in[set[0]] = true;
            for (int len = 1; len < k; len++) {
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
                set[len] = pick;
                in[pick] = true;
            }
            double cur = score(set, k, true);
            boolean improved = true;
            for (int pass = 0; improved && pass < 4 * k; pass++) {
                improved = false;
                for (int j = 0; j < k; j++) {
                    int out = set[j];
                    for (int i = 0; i < m; i++) {
                        int p = cand[i];
                        if (in[p]) {
                            continue;
                        }
                        set[j] = p;
                        double v = score(set, k, true);
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
        return new Choice(best, bestScore);
    }

    private double policy(double load) {
        return c.gpuBinpack ? load : 1.0 - load;
    }

    /**
     * Score of {@code set[0..len)}. {@code full}: the set has {@code k} GPUs and the registered scorers
     * are added (partial sets of the greedy growth are ranked by the built-in terms only).
     */
    double score(int[] set, int len, boolean full) {
        double loadSum = 0;
        for (int i = 0; i < len; i++) {
            loadSum += s.load[set[i]];
        }
        double loadTerm = policy(loadSum / len);
        double clique = 1.0;
        double link = 1.0;
        if (len > 1) {
            NodeSummary.Topo t = s.topo;
            int n = t.size;
            double sum = 0;
            boolean all = true;
            for (int a = 0; a < len; a++) {
                int row = set[a] * n;
                for (int b = a + 1; b < len; b++) {
                    sum += t.link[row + set[b]];
                    all &= t.nv[row + set[b]];
                }
            }
            link = sum / (len * (len - 1) / 2);
            clique = all ? 1.0 : 0.0;
        }
        double v = cfg.cliqueWeight() * clique + cfg.linkWeight() * link + cfg.loadWeight() * loadTerm;
        if (full && scorers.length > 0) {
            GpuSet g = GpuSet.of(Arrays.copyOf(set, len));
            for (int i = 0; i < scorers.length; i++) {
                v += weights[i] * Score.check(scorers[i].name() + ".score",
                        scorers[i].score(c.claim, s.state, g, view));
            }
        }
        return v;
    }

    /** Whether C(m, k) is at most {@code limit}, without overflow. */
    static boolean binomialAtMost(int m, int k, long limit) {
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
