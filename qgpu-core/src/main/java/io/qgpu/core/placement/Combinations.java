package io.qgpu.core.placement;

/**
 * Steps through the k-subsets of {@code 0..n-1} in lexicographic order, in place.
 *
 * <p>Thread safety: stateless.
 */
final class Combinations {

    private Combinations() {
    }

    /**
     * Advances {@code idx} (ascending positions, {@code idx.length = k <= n}) to the next subset.
     *
     * @return false when {@code idx} was the last subset (it is then left unchanged)
     */
    static boolean next(int[] idx, int n) {
        int k = idx.length;
        int i = k - 1;
        while (i >= 0 && idx[i] == n - k + i) {
            i--;
        }
        if (i < 0) {
            return false;
        }
        idx[i]++;
        for (int j = i + 1; j < k; j++) {
            idx[j] = idx[j - 1] + 1;
        }
        return true;
    }
}
