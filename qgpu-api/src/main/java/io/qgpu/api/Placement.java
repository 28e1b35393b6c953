package io.qgpu.api;

import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Where a claim went: its node and one slice per GPU, plus the environment a container needs.
 *
 * <pre>{@code
 * Placement p = new Placement(claim, "node-a", List.of(new Slice("GPU-a0", 8L << 30, 40, 70)));
 * p.environment().get("NVIDIA_VISIBLE_DEVICES");   // "GPU-a0"
 * }</pre>
 *
 * @param claim    what was asked for
 * @param nodeName the node
 * @param slices   one slice per GPU, {@code claim.gpuCount()} of them, on distinct GPUs
 *
 * <p>Thread safety: immutable.
 */
public record Placement(Claim claim, String nodeName, List<Slice> slices) {

    /** Environment variable with the comma-separated physical GPU UUIDs. */
    public static final String ENV_VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES";
    /** Memory limit in bytes per visible device, comma-separated in device order. */
    public static final String ENV_MEMORY_LIMIT = "QGPU_MEMORY_LIMIT_BYTES";
    /** Guaranteed compute in percent. */
    public static final String ENV_COMPUTE_REQUEST = "QGPU_COMPUTE_REQUEST";
    /** Maximum compute in percent. */
    public static final String ENV_COMPUTE_LIMIT = "QGPU_COMPUTE_LIMIT";
    /** {@code online} or {@code offline}. */
    public static final String ENV_PRIORITY = "QGPU_PRIORITY";
    /** The tenant id. */
    public static final String ENV_TENANT = "QGPU_TENANT";
    /** {@code NVIDIA_VISIBLE_DEVICES} of a host-only placement: the NVIDIA runtime exposes no GPU. */
    public static final String NO_DEVICES = "void";

    public Placement {
        Validate.notNull("placement.claim", claim);
        // the field names (placement[tenant].…) are built only for a message: the engine makes a
        // placement per claim it places
        if (nodeName == null || nodeName.isBlank() || nodeName.length() > Validate.MAX_NAME_LENGTH) {
            Validate.name(field(claim, ".nodeName"), nodeName, Validate.MAX_NAME_LENGTH);
        }
        slices = slices == null || anyNull(slices) ? Validate.list(field(claim, ".slices"), slices) : List.copyOf(slices);
        if (slices.size() != claim.gpuCount()) {
            throw new InvalidValueException(field(claim, ".slices.size"), slices.size(),
                    "must equal claim.gpuCount (" + claim.gpuCount() + ")");
        }
        Set<String> seen = slices.size() > SMALL ? new HashSet<>() : null;
        for (int i = 0; i < slices.size(); i++) {
            Slice s = slices.get(i);
            if (seen != null ? !seen.add(s.gpuUuid()) : usedBefore(slices, i)) {
                throw new InvalidValueException(field(claim, ".slices.gpuUuid"), s.gpuUuid(), "is used twice");
            }
            if (s.computeRequest() != claim.computeRequest() || s.computeLimit() != claim.computeLimit()) {
                throw new InvalidValueException(field(claim, ".slices[" + s.gpuUuid() + "].compute"),
                        s.computeRequest() + "/" + s.computeLimit(),
                        "must equal the claim's " + claim.computeRequest() + "/" + claim.computeLimit());
            }
            if (!claim.exclusive() && s.memoryBytes() != claim.memoryPerGpuBytes()) {
                throw new InvalidValueException(field(claim, ".slices[" + s.gpuUuid() + "].memoryBytes"), s.memoryBytes(),
                        "must equal the claim's memoryPerGpuBytes (" + claim.memoryPerGpuBytes() + ")");
            }
        }
    }

    /** Up to this many slices, a repeated GPU is looked for among the earlier slices rather than in a set. */
    private static final int SMALL = 16;

    private static String field(Claim claim, String suffix) {
        return "placement[" + claim.tenantId() + "]" + suffix;
    }

    private static boolean anyNull(List<Slice> slices) {
        for (Slice s : slices) {
            if (s == null) {
                return true;
            }
        }
        return false;
    }

    /** Whether the GPU of slice {@code i} is that of an earlier slice. */
    private static boolean usedBefore(List<Slice> slices, int i) {
        String uuid = slices.get(i).gpuUuid();
        for (int j = 0; j < i; j++) {
            if (slices.get(j).gpuUuid().equals(uuid)) {
                return true;
            }
        }
        return false;
    }

    public String tenantId() {
        return claim.tenantId();
    }

    /** UUIDs of the GPUs in slice order. */
    public List<String> gpuUuids() {
        return slices.stream().map(Slice::gpuUuid).toList();
    }

    /**
     * What the container needs. For a host-only claim ({@code gpuCount} 0):
     * {@code NVIDIA_VISIBLE_DEVICES=void} (no GPU, also when the image defaults to {@code all}),
     * {@code QGPU_PRIORITY} and {@code QGPU_TENANT}, without the GPU limits. Otherwise: {@code NVIDIA_VISIBLE_DEVICES} and the limits for the enforcement
     * layer ({@code QGPU_MEMORY_LIMIT_BYTES}, {@code QGPU_COMPUTE_REQUEST}, {@code QGPU_COMPUTE_LIMIT},
     * {@code QGPU_PRIORITY}, {@code QGPU_TENANT}). Derived, in a stable order.
     */
    public Map<String, String> environment() {
        Map<String, String> env = new LinkedHashMap<>();
        if (claim.hostOnly()) {
            env.put(ENV_VISIBLE_DEVICES, NO_DEVICES);
            env.put(ENV_PRIORITY, claim.priority().wireName());
            env.put(ENV_TENANT, claim.tenantId());
            return Collections.unmodifiableMap(env);
        }
        env.put(ENV_VISIBLE_DEVICES, String.join(",", gpuUuids()));
        env.put(ENV_MEMORY_LIMIT, slices.stream().map(s -> Long.toString(s.memoryBytes())).collect(Collectors.joining(",")));
        env.put(ENV_COMPUTE_REQUEST, Integer.toString(claim.computeRequest()));
        env.put(ENV_COMPUTE_LIMIT, Integer.toString(claim.computeLimit()));
        env.put(ENV_PRIORITY, claim.priority().wireName());
        env.put(ENV_TENANT, claim.tenantId());
        return Collections.unmodifiableMap(env);
    }
}
