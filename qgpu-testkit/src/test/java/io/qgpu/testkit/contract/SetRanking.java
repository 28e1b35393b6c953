package io.qgpu.testkit.contract;

import io.qgpu.api.Node;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.IntToLongFunction;

/**
 * How the test schedulers order candidate GPU sets of one node: strongest weakest link first, then
 * the strongest links in total, then best fit (least free memory: fill the fullest GPUs), then by
 * position. Enumerates every k-subset (fine for the 8-GPU fake machines).
 */
final class SetRanking {

    private SetRanking() {
    }

    static List<List<Integer>> rank(Node node, List<Integer> usable, int k, IntToLongFunction freeMemory) {
        List<List<Integer>> sets = new ArrayList<>();
        subsets(usable, k, 0, new ArrayList<>(), sets);
        Comparator<List<Integer>> order = Comparator
                .comparingInt((List<Integer> s) -> -weakest(node, s))
                .thenComparingInt(s -> -total(node, s))
                .thenComparingLong(s -> s.stream().mapToLong(freeMemory::applyAsLong).sum())
                .thenComparing(SetRanking::lexicographic);
        sets.sort(order);
        return sets;
    }

    private static int lexicographic(List<Integer> a, List<Integer> b) {
        for (int i = 0; i < Math.min(a.size(), b.size()); i++) {
            int c = Integer.compare(a.get(i), b.get(i));
            if (c != 0) {
                return c;
            }
        }
        return Integer.compare(a.size(), b.size());
    }

    private static void subsets(List<Integer> from, int k, int start, List<Integer> acc, List<List<Integer>> out) {
        if (acc.size() == k) {
            out.add(List.copyOf(acc));
            return;
        }
        for (int i = start; i < from.size(); i++) {
            acc.add(from.get(i));
            subsets(from, k, i + 1, acc, out);
            acc.remove(acc.size() - 1);
        }
    }

    static int weakest(Node node, List<Integer> set) {
        int min = 1000;
        for (int i = 0; i < set.size(); i++) {
            for (int j = i + 1; j < set.size(); j++) {
                min = Math.min(min, node.topology().link(set.get(i), set.get(j)).quality());
            }
        }
        return min;
    }

    private static int total(Node node, List<Integer> set) {
        int sum = 0;
        for (int i = 0; i < set.size(); i++) {
            for (int j = i + 1; j < set.size(); j++) {
                sum += node.topology().link(set.get(i), set.get(j)).quality();
            }
        }
        return sum;
    }
}
