package io.qgpu.kubernetes.node.dra;

import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.CapacityRequestPolicy;
import io.fabric8.kubernetes.api.model.resource.v1.CapacityRequestPolicyBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceCapacity;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceCapacityBuilder;
import io.qgpu.api.GranularityRules;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A GPU's capacities as qgpu's DRA driver publishes them in its ResourceSlice, with the {@code requestPolicy} that
 * makes kube-scheduler round every request up to the node's granularity rules ({@code --rules}) at allocation, so
 * that no allocation it makes is one the driver refuses at prepare. Here, in the node module, so that whatever
 * publishes a GPU as the driver does (the driver; {@code qgpu replay}'s {@code dra-allocator} policy, which replays
 * a trace through the DRA allocator) derives the capacities in this one place.
 *
 * <p>For a GPU that can be shared under the rules:
 * <ul>
 *   <li>{@value DraNames#CAPACITY_MEMORY}: the GPU's memory rounded <em>down</em> to the rules' memory unit
 *       ({@link GranularityRules#memoryUnitBytes()}), in bytes; {@code validRange} from the smallest share (the
 *       rules' minimum memory rounded up to the unit, at least one unit) to the whole capacity in steps of one
 *       unit; {@code default} the whole capacity, so a request without a memory entry still takes the whole
 *       GPU's memory;</li>
 *   <li>{@value DraNames#CAPACITY_CORES}: 100 (percent); {@code validRange} from the rules' compute step to
 *       100 in steps of it ({@link GranularityRules#computeUnit()}); {@code default} 100;</li>
 *   <li>{@value DraNames#CAPACITY_TENANTS}: how many claims the GPU may hold under the rules
 *       ({@link GranularityRules#maxTenants}); {@code validValues: [1]}, {@code default} 1: every allocation
 *       consumes exactly one, whatever it asks for, so no allocator can put more claims on the GPU.</li>
 * </ul>
 * The API server accepts a {@code validRange} only with a {@code default} in it that lies on the grid
 * ({@code default = min + n * step}) and with {@code min + step} within the capacity: both hold because the
 * capacity, the minimum and the step are all multiples of the memory unit (of the compute step for cores).
 *
 * <p><b>A GPU that cannot be shared under the rules.</b> The rule above is impossible when the rounded memory
 * holds fewer than two steps from the smallest share ({@code min + step > capacity}: a GPU below 2 GiB under
 * {@code qgpu}, below 2 MiB under {@code hami}, below 512 MiB under {@code gpu-manager}), or when the compute step
 * is above 50 (a custom rule: {@code cores} would have a single valid value). Such a GPU is published as a whole
 * device only ({@link #shareable()} false): {@code memory} is its memory as NVML reports it with
 * {@code validValues: [memory]}, {@code cores} 100 with {@code validValues: [100]}, {@code tenants} 1 with
 * {@code validValues: [1]}; every allocation of it consumes the whole of it, and prepare gives it whole.
 *
 * @param memoryBytes    the {@code memory} capacity published (bytes)
 * @param totalBytes     the GPU's memory as NVML reports it (bytes)
 * @param shareable      whether shares of the GPU can be allocated (else only the whole GPU)
 * @param minMemoryBytes the smallest share's memory ({@code validRange.min}); the capacity when not shareable
 * @param memoryStep     the memory grid ({@code validRange.step}); the capacity when not shareable
 * @param minCores       the smallest compute ({@code validRange.min}); 100 when not shareable
 * @param coresStep      the compute grid ({@code validRange.step}); 100 when not shareable
 * @param tenants        the {@code tenants} capacity
 *
 * <p>Thread safety: immutable.
 */
public record PublishedCapacity(long memoryBytes, long totalBytes, boolean shareable, long minMemoryBytes, long memoryStep,
                         int minCores, int coresStep, int tenants) {
    /** A GPU's compute in percent. */
    public static final int ALL_CORES = 100;

    /**
     * The capacities of a GPU under these rules.
     *
     * @param rules       the node's granularity rules
     * @param totalBytes  the GPU's memory as NVML reports it
     * @param maxTenants  how many claims the rules let the GPU hold ({@link GranularityRules#maxTenants})
     */
    public static PublishedCapacity of(GranularityRules rules, long totalBytes, int maxTenants) {
        if (totalBytes <= 0) {
            throw new IllegalArgumentException("GPU memory " + totalBytes + " must be positive");
        }
        long unit = rules.memoryUnitBytes();
        long rounded = totalBytes / unit * unit;
        long min = Math.max(unit, ceil(rules.minMemoryBytes(), unit));
        int cu = rules.computeUnit();
        boolean memoryShares = rounded >= min && rounded - min >= unit;
        boolean coreShares = 2 * cu <= ALL_CORES;
        if (!memoryShares || !coreShares) {
            return new PublishedCapacity(totalBytes, totalBytes, false, totalBytes, totalBytes, ALL_CORES, ALL_CORES, 1);
        }
        return new PublishedCapacity(rounded, totalBytes, true, min, unit, cu, cu, Math.max(1, maxTenants));
    }

    private static long ceil(long v, long unit) {
        return (v + unit - 1) / unit * unit;
    }

    /** The device's {@code capacity} map: {@code memory}, {@code cores}, {@code tenants}, each with its request policy. */
    public Map<String, DeviceCapacity> toSlice() {
        Map<String, DeviceCapacity> out = new LinkedHashMap<>();
        if (shareable) {
            out.put(DraNames.CAPACITY_MEMORY, range(memoryBytes, minMemoryBytes, memoryStep));
            out.put(DraNames.CAPACITY_CORES, range(ALL_CORES, minCores, coresStep));
        } else {
            out.put(DraNames.CAPACITY_MEMORY, fixed(memoryBytes, memoryBytes));
            out.put(DraNames.CAPACITY_CORES, fixed(ALL_CORES, ALL_CORES));
        }
        out.put(DraNames.CAPACITY_TENANTS, fixed(tenants, 1));
        return out;
    }

    /**
     * Whether a result consuming this is the whole GPU: all of the published memory (or NVML's) and all cores.
     *
     * @param consumedMemory the result's consumed {@code memory}, bytes
     * @param consumedCores  the result's consumed {@code cores}, percent
     */
    public boolean isWhole(long consumedMemory, int consumedCores) {
        return consumedCores == ALL_CORES && (consumedMemory == memoryBytes || consumedMemory == totalBytes);
    }

    /**
     * Why a share consuming this is not one the published policy lets the scheduler allocate, or null when it
     * is: on a GPU published whole only, anything but the whole; on a shareable one, fewer cores than the smallest
     * share or more memory than the capacity. (Memory below the smallest share or off the memory unit, and cores
     * off the compute step, are the granularity rules' to refuse: {@link GranularityRules#validate}.)
     *
     * @param consumedMemory the share's consumed {@code memory}, bytes
     * @param consumedCores  the share's consumed {@code cores}, percent
     */
    public String offGrid(long consumedMemory, int consumedCores, GranularityRules rules) {
        if (!shareable) {
            return "this GPU is published whole only (its memory, " + totalBytes + " bytes, holds fewer than two shares under the "
                    + rules.name() + " rules, or the compute step " + rules.computeUnit() + " allows one): a result must consume "
                    + DraNames.CAPACITY_MEMORY + " " + memoryBytes + " and " + DraNames.CAPACITY_CORES + " 100";
        }
        if (consumedCores < minCores) {
            return DraNames.CAPACITY_CORES + " " + consumedCores + " is below the smallest share's " + minCores + " under the "
                    + rules.name() + " rules";
        }
        if (consumedMemory > memoryBytes) {
            return DraNames.CAPACITY_MEMORY + " " + consumedMemory + " is more than the published capacity " + memoryBytes;
        }
        return null;
    }

    private static DeviceCapacity range(long value, long min, long step) {
        CapacityRequestPolicy p = new CapacityRequestPolicyBuilder().withDefault(q(value))
                .withNewValidRange().withMin(q(min)).withMax(q(value)).withStep(q(step)).endValidRange().build();
        return new DeviceCapacityBuilder().withValue(q(value)).withRequestPolicy(p).build();
    }

    private static DeviceCapacity fixed(long value, long only) {
        CapacityRequestPolicy p = new CapacityRequestPolicyBuilder().withDefault(q(only)).withValidValues(List.of(q(only))).build();
        return new DeviceCapacityBuilder().withValue(q(value)).withRequestPolicy(p).build();
    }

    private static Quantity q(long v) {
        return new Quantity(Long.toString(v));
    }
}
