package io.qgpu.djl;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.PriorityClass;
import io.qgpu.core.gate.GateTenantSpec;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.jspecify.annotations.Nullable;

/**
 * What the device plugin or the DRA driver told this container about its share of the GPU, read from the
 * environment: the tenant's name, its priority class, its compute request and limit in percent, the GPUs it
 * sees and its memory limit on each.
 *
 * <table>
 *   <caption>The variables</caption>
 *   <tr><th>variable</th><th>meaning</th><th>when unset</th></tr>
 *   <tr><td>{@code QGPU_PRIORITY}</td><td>{@code online} or {@code offline} (any case)</td><td>an error</td></tr>
 *   <tr><td>{@code QGPU_COMPUTE_REQUEST}</td><td>guaranteed share, integer percent 0..100</td><td>0</td></tr>
 *   <tr><td>{@code QGPU_COMPUTE_LIMIT}</td><td>most the tenant may use over the window, integer percent 1..100,
 *       at least the request</td><td>100</td></tr>
 *   <tr><td>{@code QGPU_TENANT}</td><td>the tenant's name in the gate</td><td>the priority's name</td></tr>
 *   <tr><td>{@code NVIDIA_VISIBLE_DEVICES}</td><td>the GPUs' UUIDs, comma-separated; a gate per UUID</td>
 *       <td>no GPU ({@code void}, {@code none} and {@code all} name no UUID either): the gate is named
 *       {@code cpu}</td></tr>
 *   <tr><td>{@code QGPU_MEMORY_LIMIT_BYTES}</td><td>bytes per visible GPU, comma-separated in the same order</td>
 *       <td>no memory limit</td></tr>
 * </table>
 *
 * <p>A value that is set must be valid: a bad one is refused with an {@link InvalidValueException} whose field
 * is the variable's name and whose value is the text as it was set, for example
 * {@code QGPU_COMPUTE_LIMIT = "60%": must be an integer percent between 1 and 100}. Set but empty counts as
 * a bad value, not as unset.
 *
 * <pre>{@code
 * QgpuEnvironment env = QgpuEnvironment.from(Map.of("QGPU_PRIORITY", "online",
 *         "QGPU_COMPUTE_REQUEST", "20", "QGPU_COMPUTE_LIMIT", "60"));
 * env.tenantSpec();          // online "online", request 20, limit 60
 * QgpuEnvironment.fromSystem();   // the same from System.getenv()
 * }</pre>
 *
 * @param tenant           the tenant's name
 * @param priority         online preempts offline
 * @param computeRequest   guaranteed share in percent
 * @param computeLimit     maximum share in percent
 * @param gpuUuids         the visible GPUs, possibly none
 * @param memoryLimitBytes the memory limit per visible GPU (same order), empty when none was set
 *
 * <p>Thread safety: immutable.
 */
public record QgpuEnvironment(String tenant, PriorityClass priority, int computeRequest, int computeLimit,
                              List<String> gpuUuids, List<Long> memoryLimitBytes) {

    public static final String PRIORITY = "QGPU_PRIORITY";
    public static final String COMPUTE_REQUEST = "QGPU_COMPUTE_REQUEST";
    public static final String COMPUTE_LIMIT = "QGPU_COMPUTE_LIMIT";
    public static final String TENANT = "QGPU_TENANT";
    public static final String VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES";
    public static final String MEMORY_LIMIT_BYTES = "QGPU_MEMORY_LIMIT_BYTES";
    /** The gate's name when no GPU UUID is visible (a developer's machine, a CPU-only test). */
    public static final String NO_GPU = "cpu";

    public QgpuEnvironment {
        tenant = io.qgpu.api.Validate.notBlank("qgpuEnvironment.tenant", tenant);
        io.qgpu.api.Validate.notNull("qgpuEnvironment.priority", priority);
        io.qgpu.api.Validate.between("qgpuEnvironment.computeLimit", computeLimit, 1, 100);
        io.qgpu.api.Validate.between("qgpuEnvironment.computeRequest", computeRequest, 0, computeLimit);
        gpuUuids = List.copyOf(gpuUuids);
        memoryLimitBytes = List.copyOf(memoryLimitBytes);
        if (!memoryLimitBytes.isEmpty() && !gpuUuids.isEmpty() && memoryLimitBytes.size() != gpuUuids.size()) {
            throw new InvalidValueException("qgpuEnvironment.memoryLimitBytes", memoryLimitBytes,
                    "needs one value per visible GPU (" + gpuUuids.size() + ")");
        }
    }

    /** Reads {@link System#getenv()}. */
    public static QgpuEnvironment fromSystem() {
        return from(System.getenv());
    }

    /**
     * Reads the variables from {@code env} (a copy of the environment, or a map a test builds).
     *
     * @throws InvalidValueException naming the variable and its text if a value is missing where it is
     *                               needed or is not valid
     */
    public static QgpuEnvironment from(Map<String, String> env) {
        io.qgpu.api.Validate.notNull("env", env);
        String p = env.get(PRIORITY);
        if (p == null) {
            throw new InvalidValueException(PRIORITY, null,
                    "is not set; the device plugin and the DRA driver set it to online or offline");
        }
        PriorityClass priority;
        try {
            priority = PriorityClass.fromName(PRIORITY, p);
        } catch (InvalidValueException e) {
            throw new InvalidValueException(PRIORITY, p, "must be online or offline");
        }
        int limit = percent(env, COMPUTE_LIMIT, 100, 1);
        int request = percent(env, COMPUTE_REQUEST, 0, 0);
        if (request > limit) {
            throw new InvalidValueException(COMPUTE_REQUEST, env.get(COMPUTE_REQUEST),
                    "must be at most " + COMPUTE_LIMIT + " (" + limit + ")");
        }
        String tenant = env.get(TENANT);
        if (tenant == null) {
            tenant = priority.wireName();
        } else if (tenant.isBlank()) {
            throw new InvalidValueException(TENANT, tenant, "must not be blank");
        }
        List<String> gpus = gpus(env.get(VISIBLE_DEVICES));
        List<Long> memory = memory(env.get(MEMORY_LIMIT_BYTES));
        if (!memory.isEmpty() && !gpus.isEmpty() && memory.size() != gpus.size()) {
            throw new InvalidValueException(MEMORY_LIMIT_BYTES, env.get(MEMORY_LIMIT_BYTES),
                    "has " + memory.size() + " values for " + gpus.size() + " GPUs in " + VISIBLE_DEVICES
                            + "; it needs one per GPU, in the same order");
        }
        return new QgpuEnvironment(tenant, priority, request, limit, gpus, memory);
    }

    /** The tenant as the gate registers it. */
    public GateTenantSpec tenantSpec() {
        return GateTenantSpec.builder(tenant, priority).limit(computeLimit).request(computeRequest).build();
    }

    /**
     * The name of the gate for DJL device index {@code deviceIndex}: the UUID of that visible GPU, or
     * {@value #NO_GPU} when no GPU is visible.
     *
     * @throws InvalidValueException if GPUs are visible and the index is not one of them
     */
    public String gpu(int deviceIndex) {
        if (gpuUuids.isEmpty()) {
            return NO_GPU;
        }
        return gpuUuids.get(index(deviceIndex, gpuUuids.size()));
    }

    /**
     * The memory limit on the visible GPU {@code deviceIndex}, if one was set.
     *
     * @throws InvalidValueException if limits were set and the index is not one of them
     */
    public OptionalLong memoryLimitBytes(int deviceIndex) {
        if (memoryLimitBytes.isEmpty()) {
            return OptionalLong.empty();
        }
        return OptionalLong.of(memoryLimitBytes.get(index(deviceIndex, memoryLimitBytes.size())));
    }

    /** The UUID of the first visible GPU, if any. */
    public Optional<String> firstGpu() {
        return gpuUuids.stream().findFirst();
    }

    private static int index(int deviceIndex, int count) {
        if (deviceIndex < 0 || deviceIndex >= count) {
            throw new InvalidValueException("deviceIndex", deviceIndex,
                    "must be between 0 and " + (count - 1) + " (" + count + " visible GPUs in "
                            + VISIBLE_DEVICES + ")");
        }
        return deviceIndex;
    }

    private static int percent(Map<String, String> env, String name, int unset, int min) {
        String text = env.get(name);
        if (text == null) {
            return unset;
        }
        String rule = "must be an integer percent between " + min + " and 100";
        int v;
        try {
            v = Integer.parseInt(text);
        } catch (NumberFormatException e) {
            throw new InvalidValueException(name, text, rule);
        }
        if (v < min || v > 100) {
            throw new InvalidValueException(name, text, rule);
        }
        return v;
    }

    private static List<String> gpus(@Nullable String text) {
        if (text == null) {
            return List.of();
        }
        String t = text.trim();
        if (t.isEmpty() || t.equals("void") || t.equals("none") || t.equals("all")) {
            return List.of();
        }
        List<String> out = new ArrayList<>();
        for (String part : t.split(",", -1)) {
            String uuid = part.trim();
            if (uuid.isEmpty()) {
                throw new InvalidValueException(VISIBLE_DEVICES, text, "has an empty entry");
            }
            out.add(uuid);
        }
        return out;
    }

    private static List<Long> memory(@Nullable String text) {
        if (text == null) {
            return List.of();
        }
        List<Long> out = new ArrayList<>();
        for (String part : text.split(",", -1)) {
            long v;
            try {
                v = Long.parseLong(part);
            } catch (NumberFormatException e) {
                throw new InvalidValueException(MEMORY_LIMIT_BYTES, text,
                        "must be positive integers of bytes, one per GPU, comma-separated (\"" + part
                                + "\" is not)");
            }
            if (v <= 0) {
                throw new InvalidValueException(MEMORY_LIMIT_BYTES, text,
                        "must be positive integers of bytes, one per GPU, comma-separated (" + v + " is not)");
            }
            out.add(v);
        }
        return out;
    }
}
