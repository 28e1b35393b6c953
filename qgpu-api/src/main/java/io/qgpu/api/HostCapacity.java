package io.qgpu.api;

import java.util.OptionalLong;

/**
 * What a node offers to host processes besides its GPUs: CPU in millicores and host memory in
 * bytes. Each resource is either declared (a capacity, {@code >= 0}) or <b>not tracked</b> (empty).
 *
 * <p><b>Not tracked is not zero.</b> On a node that does not declare a resource, the ledger records
 * what claims ask for but never refuses a claim for lack of it (as before host resources existed,
 * so inventories without host capacity keep placing as they did). A node that declares a capacity
 * of 0 refuses every claim asking for any of that resource ({@link ReasonCode#INSUFFICIENT_CPU},
 * {@link ReasonCode#INSUFFICIENT_HOST_MEMORY}).
 *
 * <pre>{@code
 * HostCapacity c = HostCapacity.of(64_000, 256L << 30);        // 64 CPUs, 256 GiB
 * HostCapacity cpuOnly = HostCapacity.untracked().withCpuMillis(32_000);
 * c.cpuMillis().getAsLong();                                   // 64000
 * cpuOnly.memoryBytes().isPresent();                           // false: host memory not tracked
 * }</pre>
 *
 * @param cpuMillis   CPU capacity in millicores (1000 = one CPU), or empty when not tracked
 * @param memoryBytes host memory capacity in bytes, or empty when not tracked
 *
 * <p>Thread safety: immutable.
 */
public record HostCapacity(OptionalLong cpuMillis, OptionalLong memoryBytes) {

    private static final HostCapacity UNTRACKED = new HostCapacity(OptionalLong.empty(), OptionalLong.empty());

    public HostCapacity {
        Validate.notNull("node.host.cpuMillis", cpuMillis);
        Validate.notNull("node.host.memoryBytes", memoryBytes);
        if (cpuMillis.isPresent()) {
            Validate.atLeast("node.host.cpuMillis", cpuMillis.getAsLong(), 0);
        }
        if (memoryBytes.isPresent()) {
            Validate.atLeast("node.host.memoryBytes", memoryBytes.getAsLong(), 0);
        }
    }

    /** Neither CPU nor host memory tracked: the default of a node. */
    public static HostCapacity untracked() {
        return UNTRACKED;
    }

    /** Both resources declared. */
    public static HostCapacity of(long cpuMillis, long memoryBytes) {
        return new HostCapacity(OptionalLong.of(cpuMillis), OptionalLong.of(memoryBytes));
    }

    /** A copy with this CPU capacity declared. */
    public HostCapacity withCpuMillis(long millis) {
        return new HostCapacity(OptionalLong.of(millis), memoryBytes);
    }

    /** A copy with this host memory capacity declared. */
    public HostCapacity withMemoryBytes(long bytes) {
        return new HostCapacity(cpuMillis, OptionalLong.of(bytes));
    }

    /** Whether neither resource is declared. */
    public boolean isUntracked() {
        return cpuMillis.isEmpty() && memoryBytes.isEmpty();
    }
}
