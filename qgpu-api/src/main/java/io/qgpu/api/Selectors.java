package io.qgpu.api;

import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

/**
 * Which nodes and GPUs a claim may use. Empty include sets mean "any"; excludes always win.
 * Node labels must all match exactly.
 *
 * <pre>{@code
 * Selectors s = Selectors.builder().includeModel("Tesla T4").excludeUuid("GPU-bad").nodeLabel("pool", "a").build();
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public record Selectors(Set<String> includeModels, Set<String> excludeModels, Set<String> includeUuids,
                        Set<String> excludeUuids, Map<String, String> nodeLabels) {

    private static final Selectors NONE = new Selectors(Set.of(), Set.of(), Set.of(), Set.of(), Map.of());

    public Selectors {
        includeModels = Validate.names("selectors.includeModels", includeModels);
        excludeModels = Validate.names("selectors.excludeModels", excludeModels);
        includeUuids = Validate.names("selectors.includeUuids", includeUuids);
        excludeUuids = Validate.names("selectors.excludeUuids", excludeUuids);
        nodeLabels = Validate.labels("selectors.nodeLabels", nodeLabels);
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

        public Builder includeModel(String m) { includeModels.add(m); return this; }
        public Builder excludeModel(String m) { excludeModels.add(m); return this; }
        public Builder includeUuid(String u) { includeUuids.add(u); return this; }
        public Builder excludeUuid(String u) { excludeUuids.add(u); return this; }
        public Builder nodeLabel(String k, String v) { nodeLabels.put(k, v); return this; }

        public Selectors build() {
            return new Selectors(includeModels, excludeModels, includeUuids, excludeUuids, nodeLabels);
        }
    }
}
