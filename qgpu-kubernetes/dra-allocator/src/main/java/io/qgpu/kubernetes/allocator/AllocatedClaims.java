package io.qgpu.kubernetes.allocator;

import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.AllocationResult;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceRequestAllocationResult;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.qgpu.api.Claim;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Slice;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.BiFunction;

/**
 * What an allocated claim holds of qgpu's devices, as the ledger's reservations, whoever allocated it (this allocator,
 * kube-scheduler for a pod that escaped the gate, another allocator): the allocator counts every allocation of driver
 * {@code gpu.qgpu.io}, so the capacity consumed on a device never exceeds what it published, across allocators.
 *
 * <p>The results of driver {@code gpu.qgpu.io} on devices still published ({@code pool}, {@code device}) become
 * slices: a result without {@code consumedCapacity}, or consuming the device's whole {@code memory} (100 cores), is
 * the whole GPU; otherwise its {@code memory} (the device's {@code memory} default, its whole capacity, when not
 * consumed) and {@code cores} (100 when not consumed). When every result is the same share on distinct GPUs of one
 * node (always so for this allocator's claims and for what the node's driver prepares) the claim is one placement,
 * tenant id = the claim's uid, as the driver reserves it at prepare. Otherwise (another allocator's claim mixing
 * shares) each result is a placement of its own, tenant {@code <uid>#<i>}. An amount off the rules' grid (another
 * allocator's, which the driver would refuse at prepare) is counted rounded <em>up</em> to it, so that nothing is
 * counted for less than it holds. Results on a pool or device no longer published hold nothing anyone can use and
 * are skipped.
 *
 * <p>Thread safety: stateless.
 */
final class AllocatedClaims {
    private AllocatedClaims() {
    }

    /** The device a result names, as published: its node and GPU; empty when it is no longer published. */
    @FunctionalInterface
    interface Devices extends BiFunction<String, String, Optional<Located>> {
    }

    /** A published GPU and the node it is on. */
    record Located(String node, PublishedGpu gpu) {
    }

    /** Whether the claim has an allocation with a result of qgpu's driver. */
    static boolean holdsQgpuDevices(ResourceClaim rc) {
        return !results(rc).isEmpty();
    }

    /** The claim's results of driver {@code gpu.qgpu.io}, in order; empty when not allocated. */
    static List<DeviceRequestAllocationResult> results(ResourceClaim rc) {
        AllocationResult a = rc.getStatus() == null ? null : rc.getStatus().getAllocation();
        if (a == null || a.getDevices() == null || a.getDevices().getResults() == null) {
            return List.of();
        }
        return a.getDevices().getResults().stream().filter(r -> DraNames.DRIVER.equals(r.getDriver())).toList();
    }

    /**
     * The reservations an allocated claim holds.
     *
     * @param priority the claim's priority class (its GpuConfig's), for the ledger's admission by class
     */
    static List<Placement> placements(ResourceClaim rc, Devices devices, GranularityRules rules, PriorityClass priority) {
        String uid = rc.getMetadata().getUid();
        List<DeviceRequestAllocationResult> results = results(rc);
        List<String> nodes = new ArrayList<>();
        List<Slice> slices = new ArrayList<>();
        List<Boolean> whole = new ArrayList<>();
        for (DeviceRequestAllocationResult r : results) {
            Optional<Located> at = devices.apply(r.getPool(), r.getDevice());
            if (at.isEmpty()) {
                continue;
            }
            nodes.add(at.get().node());
            Slice s = slice(at.get().gpu(), r.getConsumedCapacity(), rules);
            slices.add(s);
            whole.add(s == null);
            if (s == null) {
                slices.set(slices.size() - 1, new Slice(at.get().gpu().gpuUuid(), at.get().gpu().memory().value(), 100, 100));
            }
        }
        if (slices.isEmpty()) {
            return List.of();
        }
        Set<String> gpus = new HashSet<>();
        boolean uniform = slices.stream().allMatch(s -> gpus.add(s.gpuUuid()))
                && nodes.stream().distinct().count() == 1
                && (whole.stream().allMatch(w -> w)
                    || whole.stream().noneMatch(w -> w)
                       && slices.stream().map(s -> List.of(s.memoryBytes(), (long) s.computeRequest())).distinct().count() == 1);
        if (uniform) {
            return List.of(placement(uid, nodes.get(0), slices, whole.get(0), priority));
        }
        List<Placement> out = new ArrayList<>();
        for (int i = 0; i < slices.size(); i++) {
            out.add(placement(uid + "#" + i, nodes.get(i), List.of(slices.get(i)), whole.get(i), priority));
        }
        return out;
    }

    private static Placement placement(String tenant, String node, List<Slice> slices, boolean whole, PriorityClass priority) {
        Slice first = slices.get(0);
        Claim.Builder b = Claim.builder(tenant).gpus(slices.size()).priority(priority);
        if (whole) {
            b.exclusive();
        } else {
            b.memoryBytes(first.memoryBytes()).compute(first.computeRequest(), first.computeLimit());
        }
        return new Placement(b.build(), node, slices);
    }

    /** The slice a result consumes, or null for the whole GPU. */
    private static Slice slice(PublishedGpu g, Map<String, Quantity> consumed, GranularityRules rules) {
        if (consumed == null || consumed.isEmpty()) {
            return null;
        }
        long memory = consumed.containsKey(DraNames.CAPACITY_MEMORY) ? amount(consumed.get(DraNames.CAPACITY_MEMORY))
                : g.memory().defaultValue();
        long cores = consumed.containsKey(DraNames.CAPACITY_CORES) ? amount(consumed.get(DraNames.CAPACITY_CORES))
                : ClaimTranslator.ALL_CORES;
        if (memory >= g.memory().value() && cores >= ClaimTranslator.ALL_CORES) {
            return null;
        }
        long unit = rules.memoryUnitBytes();
        long min = Math.max(unit, (rules.minMemoryBytes() + unit - 1) / unit * unit);
        long m = Math.min(g.memory().value(), (Math.max(memory, min) + unit - 1) / unit * unit);
        int cu = rules.computeUnit();
        int c = (int) Math.min(ClaimTranslator.ALL_CORES, Math.max(0, (cores + cu - 1) / cu * cu));
        return new Slice(g.gpuUuid(), Math.max(1, m), c, Math.max(1, c));
    }

    private static long amount(Quantity q) {
        BigDecimal b = Quantity.getAmountInBytes(q);
        return b.setScale(0, java.math.RoundingMode.CEILING).min(BigDecimal.valueOf(Long.MAX_VALUE)).longValue();
    }
}
