package io.qgpu.cli.replay;

import io.qgpu.api.InvalidValueException;
import io.qgpu.core.placement.RequestMix;
import io.qgpu.core.placement.RequestShape;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * The arrival stream of a replay, built as the paper's simulator builds it: the pods sorted by name
 * and shuffled with the seed, then, while the GPU capacity they ask is below {@code ratio} times the
 * cluster's GPU capacity, copies of pods drawn uniformly (with the same random source) from the
 * name-sorted list are appended, stopping before the first copy that would pass the target. So the
 * original pods arrive first in a seeded order and the inflation comes after them. The random source
 * is {@link java.util.Random}: the same seed gives the same stream here, not the simulator's stream.
 *
 * <p>Thread safety: stateless.
 */
public final class Workload {

    private Workload() {
    }

    /** The pods in arrival order; copies are named {@code <name>-copy-<i>}. */
    public static List<TracePod> stream(List<TracePod> pods, long gpuCapacityMilli, double ratio, long seed) {
        if (!(ratio > 0) || ratio > 100) {
            throw new InvalidValueException("replay.ratio", ratio, "must be in (0, 100]");
        }
        List<TracePod> sorted = new ArrayList<>(pods);
        sorted.sort(Comparator.comparing(TracePod::name));
        Random rnd = new Random(seed);
        List<TracePod> out = new ArrayList<>(sorted);
        Collections.shuffle(out, rnd);
        long target = (long) Math.floor(ratio * gpuCapacityMilli);
        long asked = 0;
        for (TracePod p : out) {
            asked += p.totalMilli();
        }
        if (sorted.stream().mapToLong(TracePod::totalMilli).sum() == 0) {
            return out;   // no pod asks a GPU: nothing to inflate towards a GPU target
        }
        for (int i = 0; asked <= target; i++) {
            TracePod p = sorted.get(rnd.nextInt(sorted.size()));
            if (asked + p.totalMilli() > target) {
                break;
            }
            asked += p.totalMilli();
            out.add(new TracePod(p.name() + "-copy-" + i, p.cpuMillis(), p.memoryMib(), p.gpus(), p.gpuMilli(), p.models(), p.qos()));
        }
        return out;
    }

    /** {@link #typicalMix(List, double, boolean)} with the CPU-only shapes kept, as the paper's experiments keep them. */
    public static RequestMix typicalMix(List<TracePod> pods, double coverage) {
        return typicalMix(pods, coverage, true);
    }

    /**
     * The typical requests of a workload, as the paper takes them: pods grouped by shape (GPUs, share,
     * CPU, models), the most frequent shapes kept until they cover {@code coverage} of all pods (CPU-only
     * pods included in the count), then normalised. With {@code hostOnly} the CPU-only shapes stay in the
     * mix as host-only shapes ({@link RequestShape#hostOnly}: all free GPU capacity is fragmentation for
     * them), as the paper's experiments count CPU-only pods among the typical pods; without, they are
     * dropped before normalising.
     */
    public static RequestMix typicalMix(List<TracePod> pods, double coverage, boolean hostOnly) {
        if (!(coverage > 0) || coverage > 1) {
            throw new InvalidValueException("replay.coverage", coverage, "must be in (0, 1]");
        }
        Map<List<Object>, Integer> counts = new HashMap<>();
        Map<List<Object>, TracePod> example = new HashMap<>();
        for (TracePod p : pods) {
            List<Object> key = List.of(p.gpus(), p.gpuMilli(), p.cpuMillis(), new java.util.TreeSet<>(p.models()).toString());
            counts.merge(key, 1, Integer::sum);
            example.putIfAbsent(key, p);
        }
        List<Map.Entry<List<Object>, Integer>> byCount = new ArrayList<>(counts.entrySet());
        byCount.sort(Map.Entry.<List<Object>, Integer>comparingByValue().reversed()
                .thenComparing(e -> e.getKey().toString()));
        Map<RequestShape, Double> kept = new LinkedHashMap<>();
        long covered = 0;
        for (Map.Entry<List<Object>, Integer> e : byCount) {
            if (covered >= coverage * pods.size()) {
                break;
            }
            covered += e.getValue();
            TracePod p = example.get(e.getKey());
            RequestShape shape;
            if (p.gpus() > 0) {
                shape = new RequestShape(p.gpus(), Math.max(1, Math.min(100, p.gpuMilli() / 10)), p.cpuMillis(), p.models());
            } else if (hostOnly) {
                shape = RequestShape.hostOnly(p.cpuMillis());
            } else {
                continue;
            }
            kept.merge(shape, (double) e.getValue(), Double::sum);
        }
        return RequestMix.of(kept);
    }
}
