package io.qgpu.api;

import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

/**
 * Which nodes and GPUs a claim may use, and which GPUs its set must include. Empty include sets
 * mean "any"; excludes always win. Node labels must all match exactly.
 *
 * <p>Must-include GPUs ({@link #mustIncludeUuids()}, {@link #mustIncludeIndices()}) are not an
 * allow-list: the claim's set contains every one of them and the placement engine completes it with
 * the best other GPUs of the same node (as the kubelet's {@code must_include_deviceIDs} asks of a
 * device plugin's preferred allocation). A UUID names one GPU of the cluster; an index names the
 * GPU with that NVML index on whichever node is chosen. A must-include GPU must also pass the
 * other selectors.
 *
 * <pre>{@code
 * Selectors s = Selectors.builder().includeModel("Tesla T4").excludeUuid("GPU-bad").nodeLabel("pool", "a").build();
 * Selectors m = Selectors.builder().mustIncludeIndex(3).build();   // GPU 3 and the best others
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public record Selectors(Set<String> includeModels, Set<String> excludeModels, Set<String> includeUuids,
                        Set<String> excludeUuids, Map<String, String> nodeLabels, Set<String> mustIncludeUuids,
                        Set<Integer> mustIncludeIndices) {

    private static final Selectors NONE = new Selectors(Set.of(), Set.of(), Set.of(), Set.of(), Map.of());

    public Selectors {
        includeModels = Validate.names("selectors.includeModels", includeModels);
        excludeModels = Validate.names("selectors.excludeModels", excludeModels);
        includeUuids = Validate.names("selectors.includeUuids", includeUuids);
        excludeUuids = Validate.names("selectors.excludeUuids", excludeUuids);
        nodeLabels = Validate.labels("selectors.nodeLabels", nodeLabels);
        mustIncludeUuids = Validate.names("selectors.mustIncludeUuids", mustIncludeUuids);
        Validate.notNull("selectors.mustIncludeIndices", mustIncludeIndices);
        for (Integer i : mustIncludeIndices) {
            if (i == null || i < 0) {
                throw new InvalidValueException("selectors.mustIncludeIndices", i, "an index must be >= 0");
            }
        }
        mustIncludeIndices = java.util.Collections.unmodifiableSet(new java.util.TreeSet<>(mustIncludeIndices));
        for (String u : mustIncludeUuids) {
            if (excludeUuids.contains(u) || (!includeUuids.isEmpty() && !includeUuids.contains(u))) {
                throw new InvalidValueException("selectors.mustIncludeUuids", u, "is not allowed by the UUID selectors");
            }
        }
    }

    /** Selectors without must-include GPUs. */
    public Selectors(Set<String> includeModels, Set<String> excludeModels, Set<String> includeUuids,
                     Set<String> excludeUuids, Map<String, String> nodeLabels) {
        this(includeModels, excludeModels, includeUuids, excludeUuids, nodeLabels, Set.of(), Set.of());
    }

    /** How many GPUs the must-include lists name (UUIDs plus indices). */
    public int mustIncludeCount() {
        return mustIncludeUuids.size() + mustIncludeIndices.size();
    }

    /** Whether the GPU is one the claim's set must include. */
    public boolean mustInclude(GpuDevice gpu) {
        return mustIncludeUuids.contains(gpu.uuid()) || mustIncludeIndices.contains(gpu.index());
    }

    /** No constraint. */
    public static Selectors none() {
        return NONE;
    }

    public boolean isNone() {
        return equals(NONE);
    }

    /** Whether the node's labels satisfy {@link #nodeLabels()}. */
    public boolean matchesNode(Node node) {
        for (Map.Entry<String, String> e : nodeLabels.entrySet()) {
            if (!e.getValue().equals(node.labels().get(e.getKey()))) {
                return false;
            }
        }
        return true;
    }

    /** Whether the GPU's model is allowed. */
    public boolean allowsModel(GpuDevice gpu) {
        return !excludeModels.contains(gpu.model()) && (includeModels.isEmpty() || includeModels.contains(gpu.model()));
    }

    /** Whether the GPU's UUID is allowed. */
    public boolean allowsUuid(GpuDevice gpu) {
        return !excludeUuids.contains(gpu.uuid()) && (includeUuids.isEmpty() || includeUuids.contains(gpu.uuid()));
    }

    public static Builder builder() {
        return new Builder();
    }

    public static final class Builder {
        private final Set<String> includeModels = new LinkedHashSet<>();
        private final Set<String> excludeModels = new LinkedHashSet<>();
        private final Set<String> includeUuids = new LinkedHashSet<>();
        private final Set<String> excludeUuids = new LinkedHashSet<>();
        private final Map<String, String> nodeLabels = new LinkedHashMap<>();
        private final Set<String> mustIncludeUuids = new LinkedHashSet<>();
        private final Set<Integer> mustIncludeIndices = new LinkedHashSet<>();

        private Builder() {
        }

        public Builder includeModel(String m) { includeModels.add(m); return this; }
        public Builder excludeModel(String m) { excludeModels.add(m); return this; }
        public Builder includeUuid(String u) { includeUuids.add(u); return this; }
        public Builder excludeUuid(String u) { excludeUuids.add(u); return this; }
        public Builder nodeLabel(String k, String v) { nodeLabels.put(k, v); return this; }
        /** The set must contain the GPU with this UUID. */
        public Builder mustIncludeUuid(String u) { mustIncludeUuids.add(u); return this; }
        /** The set must contain the GPU with this NVML index on the chosen node. */
        public Builder mustIncludeIndex(int i) { mustIncludeIndices.add(i); return this; }

        public Selectors build() {
            return new Selectors(includeModels, excludeModels, includeUuids, excludeUuids, nodeLabels, mustIncludeUuids,
                    mustIncludeIndices);
        }
    }
}
