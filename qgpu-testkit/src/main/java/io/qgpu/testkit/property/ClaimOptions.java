package io.qgpu.testkit.property;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Validate;
import java.util.List;

/**
 * What {@link QgpuGens#claims} may generate. Sizes are always on the grid of {@link #rules()}:
 * memory a multiple of the memory unit and at least the minimum, compute request and limit
 * multiples of the compute unit.
 *
 * <pre>{@code
 * ClaimOptions simple = ClaimOptions.defaults().withMaxGpus(1).withLocality(false);
 * ClaimOptions hami = ClaimOptions.defaults().withRules(GranularityRules.hami());
 * }</pre>
 *
 * @param rules          granularity grid of the sizes
 * @param maxGpus        most GPUs per claim (1: single-GPU claims only)
 * @param exclusive      whether exclusive (whole-GPU) claims come up
 * @param priorities     the classes to draw from (shrinks towards the first)
 * @param locality       whether affinity, anti-affinity and exclusion labels come up
 * @param selectors      whether model, UUID and node-label selectors come up
 * @param maxMemoryBytes largest memory per GPU asked for
 * @param host           whether claims ask for CPU and host memory, and host-only claims (0 GPUs) come up
 *
 * <p>Thread safety: immutable.
 */
public record ClaimOptions(GranularityRules rules, int maxGpus, boolean exclusive, List<PriorityClass> priorities,
                           boolean locality, boolean selectors, long maxMemoryBytes, boolean host) {

    public ClaimOptions {
        Validate.notNull("claimOptions.rules", rules);
        Validate.between("claimOptions.maxGpus", maxGpus, 1, 1024);
        priorities = Validate.list("claimOptions.priorities", priorities);
        if (priorities.isEmpty()) {
            throw new InvalidValueException("claimOptions.priorities", priorities, "must not be empty");
        }
        long min = Math.max(rules.minMemoryBytes(), rules.memoryUnitBytes());
        if (maxMemoryBytes < min) {
            throw new InvalidValueException("claimOptions.maxMemoryBytes", maxMemoryBytes,
                    "must be at least one memory unit and the minimum of the rules (" + min + ")");
        }
    }

    /** Options without host resources. */
    public ClaimOptions(GranularityRules rules, int maxGpus, boolean exclusive, List<PriorityClass> priorities,
                        boolean locality, boolean selectors, long maxMemoryBytes) {
        this(rules, maxGpus, exclusive, priorities, locality, selectors, maxMemoryBytes, false);
    }

    /** qGPU rules, up to 4 GPUs, exclusive claims, both classes, locality labels, selectors, up to 80 GiB, no host resources. */
    public static ClaimOptions defaults() {
        return new ClaimOptions(GranularityRules.ofDefaults(), 4, true,
                List.of(PriorityClass.OFFLINE, PriorityClass.ONLINE), true, true, 80 * GpuDevice.GIB, false);
    }

    public ClaimOptions withRules(GranularityRules r) {
        return new ClaimOptions(r, maxGpus, exclusive, priorities, locality, selectors, maxMemoryBytes, host);
    }

    public ClaimOptions withMaxGpus(int n) {
        return new ClaimOptions(rules, n, exclusive, priorities, locality, selectors, maxMemoryBytes, host);
    }

    public ClaimOptions withExclusive(boolean on) {
        return new ClaimOptions(rules, maxGpus, on, priorities, locality, selectors, maxMemoryBytes, host);
    }

    public ClaimOptions withPriorities(List<PriorityClass> p) {
        return new ClaimOptions(rules, maxGpus, exclusive, p, locality, selectors, maxMemoryBytes, host);
    }

    public ClaimOptions withLocality(boolean on) {
        return new ClaimOptions(rules, maxGpus, exclusive, priorities, on, selectors, maxMemoryBytes, host);
    }

    public ClaimOptions withSelectors(boolean on) {
        return new ClaimOptions(rules, maxGpus, exclusive, priorities, locality, on, maxMemoryBytes, host);
    }

    public ClaimOptions withMaxMemoryBytes(long b) {
        return new ClaimOptions(rules, maxGpus, exclusive, priorities, locality, selectors, b, host);
    }

    public ClaimOptions withHost(boolean on) {
        return new ClaimOptions(rules, maxGpus, exclusive, priorities, locality, selectors, maxMemoryBytes, on);
    }
}
