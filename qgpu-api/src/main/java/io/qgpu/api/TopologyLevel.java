package io.qgpu.api;

import org.jspecify.annotations.Nullable;
/**
 * The PCIe common-ancestor level of two GPUs, as NVML's {@code nvmlGpuTopologyLevel_t} reports it.
 * Lower is closer.
 */
public enum TopologyLevel {
    /** Same board (multi-GPU card). */
    INTERNAL(0),
    /** Behind a single PCIe switch. */
    SINGLE(10),
    /** Behind several PCIe switches, no host bridge crossed. */
    MULTIPLE(20),
    /** Behind the same host bridge. */
    HOSTBRIDGE(30),
    /** Same NUMA node, across host bridges. */
    NODE(40),
    /** Across NUMA nodes (SMP interconnect). */
    SYSTEM(50);

    private final int nvmlValue;

    TopologyLevel(int nvmlValue) {
        this.nvmlValue = nvmlValue;
    }

    /** The value NVML uses for this level. */
    public int nvmlValue() {
        return nvmlValue;
    }

    /** The label {@code nvidia-smi topo -m} prints for a PCIe-only pair at this level. */
    public String label() {
        return switch (this) {
            case INTERNAL -> "PSB";
            case SINGLE -> "PIX";
            case MULTIPLE -> "PXB";
            case HOSTBRIDGE -> "PHB";
            case NODE -> "NODE";
            case SYSTEM -> "SYS";
        };
    }

    /** The level whose {@link #label()} is {@code label} (case-insensitive), or null. */
    public static @Nullable TopologyLevel fromLabel(String label) {
        for (TopologyLevel l : values()) {
            if (l.label().equalsIgnoreCase(label)) {
                return l;
            }
        }
        return null;
    }

    /**
     * The level a label names, as the file formats and {@code nvidia-smi topo -m} write it
     * ({@code PSB, PIX, PXB, PHB, NODE, SYS}, any case); the enum's own names are accepted as well.
     *
     * <pre>{@code
     * TopologyLevel.parse("PHB");   // HOSTBRIDGE, printed as PHB
     * }</pre>
     *
     * @throws InvalidValueException naming the label and the labels accepted
     */
    public static TopologyLevel parse(String label) {
        Validate.notNull("topologyLevel", label);
        TopologyLevel l = fromLabel(label.trim());
        if (l != null) {
            return l;
        }
        for (TopologyLevel t : values()) {
            if (t.name().equalsIgnoreCase(label.trim())) {
                return t;
            }
        }
        throw new InvalidValueException("topologyLevel", label, "must be PSB, PIX, PXB, PHB, NODE or SYS");
    }

    /** The label ({@link #label()}): what the file formats and {@code nvidia-smi topo -m} write. */
    @Override
    public String toString() {
        return label();
    }

    /** Maps an NVML level value; an unknown value is refused. */
    public static TopologyLevel fromNvml(int value) {
        for (TopologyLevel l : values()) {
            if (l.nvmlValue == value) {
                return l;
            }
        }
        throw new InvalidValueException("topologyLevel", value, "must be one of 0, 10, 20, 30, 40, 50");
    }
}
