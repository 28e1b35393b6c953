package io.qgpu.api;

import java.util.Locale;

/**
 * Whether a multi-GPU claim's GPUs must share one CPU NUMA node ({@link GpuDevice#numaNode()}).
 *
 * <pre>{@code
 * Claim c = Claim.builder("allreduce").gpus(4).exclusive().numa(NumaPolicy.REQUIRED).build();
 * }</pre>
 */
public enum NumaPolicy {
    /** GPUs of one NUMA node are preferred after link quality; a set across nodes is still allowed. */
    PREFERRED,
    /**
     * Every GPU of a set of two or more must report the same known NUMA node; a node without such an
     * admissible set is refused with {@link ReasonCode#NUMA}. A GPU whose NUMA node is unknown
     * ({@code -1}) is never part of such a set. A one-GPU claim always satisfies it.
     */
    REQUIRED;

    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }

    public static NumaPolicy fromName(String field, String name) {
        Validate.notNull(field, name);
        for (NumaPolicy p : values()) {
            if (p.name().equalsIgnoreCase(name)) {
                return p;
            }
        }
        throw new InvalidValueException(field, name, "must be one of preferred, required");
    }
}
