package io.qgpu.kubernetes.dra;

import io.fabric8.kubernetes.api.model.Quantity;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.math.BigDecimal;
import java.util.Map;
import java.util.Optional;

/**
 * Reads an allocation result's {@code consumedCapacity} (Kubernetes quantities such as {@code 30Gi},
 * {@code 1G} or plain bytes, parsed by fabric8's {@link Quantity}) into what qgpu reserves: memory in
 * bytes and compute in percent. Nothing is rounded: a fraction of a byte or of a percent is refused. The
 * {@value DraNames#CAPACITY_TENANTS} entry (absent from allocations made against a slice that did not publish
 * it) must be exactly 1: every allocation is one tenant of its GPU.
 *
 * <p>Thread safety: stateless.
 */
final class Capacities {
    private Capacities() {
    }

    /**
     * What a result consumes.
     *
     * @param memoryBytes memory in bytes
     * @param cores       compute in percent of one GPU
     */
    record Consumed(long memoryBytes, int cores) {
    }

    /**
     * The result's consumption; empty when it has no {@code consumedCapacity} (the whole GPU).
     *
     * @param at where the map is, for messages ({@code status.allocation.devices.results[0].consumedCapacity})
     * @throws IllegalArgumentException naming the entry and its value when it is missing, unknown or not a whole number,
     *                                  or when {@code tenants} is there and not 1
     */
    static Optional<Consumed> of(String at, Map<String, Quantity> consumed) {
        if (consumed == null || consumed.isEmpty()) {
            return Optional.empty();
        }
        Quantity memory = null;
        Quantity cores = null;
        Quantity tenants = null;
        for (Map.Entry<String, Quantity> e : consumed.entrySet()) {
            String name = local(e.getKey());
            if (DraNames.CAPACITY_MEMORY.equals(name)) {
                memory = e.getValue();
            } else if (DraNames.CAPACITY_CORES.equals(name)) {
                cores = e.getValue();
            } else if (DraNames.CAPACITY_TENANTS.equals(name)) {
                tenants = e.getValue();
            } else {
                throw new IllegalArgumentException(at + "[" + e.getKey() + "] = " + e.getValue() + ": " + DraNames.DRIVER
                        + " publishes only " + DraNames.CAPACITY_MEMORY + ", " + DraNames.CAPACITY_CORES + " and "
                        + DraNames.CAPACITY_TENANTS);
            }
        }
        if (memory == null) {
            throw new IllegalArgumentException(at + " has no " + DraNames.CAPACITY_MEMORY + " entry: " + consumed);
        }
        if (cores == null) {
            throw new IllegalArgumentException(at + " has no " + DraNames.CAPACITY_CORES + " entry: " + consumed);
        }
        long bytes = whole(at + "[" + DraNames.CAPACITY_MEMORY + "]", memory, Long.MAX_VALUE);
        long percent = whole(at + "[" + DraNames.CAPACITY_CORES + "]", cores, 100);
        if (tenants != null) {
            String t = at + "[" + DraNames.CAPACITY_TENANTS + "]";
            if (whole(t, tenants, Long.MAX_VALUE) != 1) {
                throw new IllegalArgumentException(t + " = " + tenants + ": an allocation is exactly one tenant of its GPU (must be 1)");
            }
        }
        return Optional.of(new Consumed(bytes, (int) percent));
    }

    /** {@code memory} for {@code memory} and for {@code gpu.qgpu.io/memory}. */
    private static String local(String qualified) {
        String prefix = DraNames.DRIVER + "/";
        return qualified.startsWith(prefix) ? qualified.substring(prefix.length()) : qualified;
    }

    private static long whole(String at, Quantity q, long max) {
        BigDecimal v;
        try {
            v = q.getNumericalAmount();
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(at + " = " + q + ": not a Kubernetes quantity");
        }
        if (v.signum() < 0) {
            throw new IllegalArgumentException(at + " = " + q + ": must not be negative");
        }
        BigDecimal s = v.stripTrailingZeros();
        if (s.scale() > 0) {
            throw new IllegalArgumentException(at + " = " + q + ": must be a whole number (is " + s.toPlainString() + ")");
        }
        if (s.compareTo(BigDecimal.valueOf(max)) > 0) {
            throw new IllegalArgumentException(at + " = " + q + ": must be at most " + max);
        }
        return s.longValueExact();
    }
}
