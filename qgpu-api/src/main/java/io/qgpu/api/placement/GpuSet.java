package io.qgpu.api.placement;

import io.qgpu.api.GpuState;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.NodeState;
import io.qgpu.api.Validate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A set of GPUs of one node, by position in {@link io.qgpu.api.Node#gpus()}, in ascending order.
 *
 * <pre>{@code
 * GpuSet set = GpuSet.of(3, 0, 1);        // positions 0, 1, 3
 * set.size();                             // 3
 * set.uuids(nodeState);                   // the GPUs' UUIDs in position order
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public final class GpuSet {
    private final int[] positions;

    private GpuSet(int[] sortedDistinct) {
        this.positions = sortedDistinct;
    }

    private static final GpuSet EMPTY = new GpuSet(new int[0]);

    /**
     * The empty set: the "set" of a host-only claim (no GPU), as an explanation's candidate shows it.
     * Scorers of GPU sets are never called with it.
     */
    public static GpuSet empty() {
        return EMPTY;
    }

    /** The set of these positions; refuses negative or repeated positions and an empty set (see {@link #empty()}). */
    public static GpuSet of(int... positions) {
        Validate.notNull("gpuSet.positions", positions);
        if (positions.length == 0) {
            throw new InvalidValueException("gpuSet.positions", "[]", "a GPU set has at least one GPU");
        }
        int[] copy = positions.clone();
        if (!ascending(copy)) {
            Arrays.sort(copy);   // most callers (the engine's searches) pass ascending positions
        }
        for (int i = 0; i < copy.length; i++) {
            if (copy[i] < 0) {
                Validate.atLeast("gpuSet.positions[" + i + "]", copy[i], 0);   // the field's name made only to refuse
            }
            if (i > 0 && copy[i] == copy[i - 1]) {
                throw new InvalidValueException("gpuSet.positions", copy[i], "is repeated");
            }
        }
        return new GpuSet(copy);
    }

    /** Whether {@code a} is in non-descending order (sorting it would change nothing). */
    private static boolean ascending(int[] a) {
        for (int i = 1; i < a.length; i++) {
            if (a[i] < a[i - 1]) {
                return false;
            }
        }
        return true;
    }

    /** Number of GPUs. */
    public int size() {
        return positions.length;
    }

    /** The {@code i}-th position, in ascending order. */
    public int position(int i) {
        return positions[i];
    }

    /** Whether the GPU at {@code position} is in the set. */
    public boolean contains(int position) {
        return Arrays.binarySearch(positions, position) >= 0;
    }

    /** The positions, ascending (a copy). */
    public int[] positions() {
        return positions.clone();
    }

    /** The GPU states of the set on {@code node}. */
    public List<GpuState> states(NodeState node) {
        List<GpuState> out = new ArrayList<>(positions.length);
        for (int p : positions) {
            out.add(node.gpu(p));
        }
        return out;
    }

    /** The UUIDs of the set's GPUs on {@code node}, in position order. */
    public List<String> uuids(NodeState node) {
        List<String> out = new ArrayList<>(positions.length);
        for (int p : positions) {
            out.add(node.gpu(p).uuid());
        }
        return out;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GpuSet s && Arrays.equals(s.positions, positions);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(positions);
    }

    @Override
    public String toString() {
        return Arrays.toString(positions);
    }
}
