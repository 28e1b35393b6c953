package io.qgpu.api;

import org.jspecify.annotations.Nullable;
import java.util.Optional;

/**
 * One physical GPU as the scheduler sees it.
 *
 * <pre>{@code
 * GpuDevice gpu = GpuDevice.builder("GPU-0b5c1d5e-0000-0000-0000-000000000000")
 *         .index(0).model("NVIDIA H100 80GB HBM3").memoryGiB(80).numaNode(0)
 *         .isolationPolicy(IsolationPolicy.BURST_SHARE)
 *         .build();
 * }</pre>
 *
 * @param uuid            NVML UUID ({@code GPU-...}, or {@code MIG-...} for a MIG instance reported as a
 *                        device of its own), unique in a cluster
 * @param index           NVML index on its node, {@code >= 0}
 * @param model           product name, for example {@code Tesla T4}
 * @param memoryBytes     device memory, {@code > 0}
 * @param health          whether it takes new tenants
 * @param numaNode        NUMA node, or {@code -1} when unknown
 * @param isolationPolicy how compute is divided between this GPU's tenants
 * @param reservedFor     if present, only tenants of this priority class may be placed here
 *
 * <p>Thread safety: immutable.
 */
public record GpuDevice(String uuid, int index, String model, long memoryBytes, Health health, int numaNode,
                        IsolationPolicy isolationPolicy, Optional<PriorityClass> reservedFor) {

    public static final long GIB = 1L << 30;
    public static final long MIB = 1L << 20;

    public GpuDevice {
        Validate.name("gpu.uuid", uuid, Validate.MAX_NAME_LENGTH);
        Validate.atLeast("gpu[" + uuid + "].index", index, 0);
        Validate.name("gpu[" + uuid + "].model", model, Validate.MAX_NAME_LENGTH);
        Validate.atLeast("gpu[" + uuid + "].memoryBytes", memoryBytes, 1);
        Validate.notNull("gpu[" + uuid + "].health", health);
        Validate.atLeast("gpu[" + uuid + "].numaNode", numaNode, -1);
        Validate.notNull("gpu[" + uuid + "].isolationPolicy", isolationPolicy);
        Validate.notNull("gpu[" + uuid + "].reservedFor", reservedFor);
    }

    public boolean healthy() {
        return health == Health.HEALTHY;
    }

    /**
     * Whether this device is a MIG instance (a slice of a MIG-enabled GPU that NVML addresses as a device
     * of its own): its UUID starts with {@code MIG-}, as NVML names MIG instances. Placement keeps such an
     * instance for one tenant unless {@link GranularityRules#shareMigInstances()}.
     */
    public boolean migInstance() {
        return uuid.startsWith("MIG-");
    }

    /** A copy with another health. */
    public GpuDevice withHealth(Health newHealth) {
        return new GpuDevice(uuid, index, model, memoryBytes, newHealth, numaNode, isolationPolicy, reservedFor);
    }

    /** A copy with another isolation policy. */
    public GpuDevice withIsolationPolicy(IsolationPolicy policy) {
        return new GpuDevice(uuid, index, model, memoryBytes, health, numaNode, policy, reservedFor);
    }

    public static Builder builder(String uuid) {
        return new Builder(uuid);
    }

    /** Builder with defaults: healthy, NUMA unknown, best-effort, open to both classes. */
    public static final class Builder {
        private final String uuid;
        private int index;
        private String model = "unknown";
        private long memoryBytes;
        private Health health = Health.HEALTHY;
        private int numaNode = -1;
        private IsolationPolicy isolationPolicy = IsolationPolicy.BEST_EFFORT;
        private @Nullable PriorityClass reservedFor;

        private Builder(String uuid) {
            this.uuid = uuid;
        }

        public Builder index(int index) {
            this.index = index;
            return this;
        }

        public Builder model(String model) {
            this.model = model;
            return this;
        }

        public Builder memoryBytes(long bytes) {
            this.memoryBytes = bytes;
            return this;
        }

        public Builder memoryGiB(long gib) {
            if (gib < 0 || gib > Long.MAX_VALUE / GIB) {
                throw new InvalidValueException("gpu[" + uuid + "].memoryGiB", gib, "must be between 0 and " + Long.MAX_VALUE / GIB);
            }
            this.memoryBytes = gib * GIB;
            return this;
        }

        public Builder health(Health health) {
            this.health = health;
            return this;
        }

        public Builder numaNode(int numaNode) {
            this.numaNode = numaNode;
            return this;
        }

        public Builder isolationPolicy(IsolationPolicy policy) {
            this.isolationPolicy = policy;
            return this;
        }

        /** Keep this GPU for one priority class; {@code null} opens it to both. */
        public Builder reservedFor(PriorityClass priority) {
            this.reservedFor = priority;
            return this;
        }

        public GpuDevice build() {
            return new GpuDevice(uuid, index, model, memoryBytes, health, numaNode, isolationPolicy,
                    Optional.ofNullable(reservedFor));
        }
    }
}
