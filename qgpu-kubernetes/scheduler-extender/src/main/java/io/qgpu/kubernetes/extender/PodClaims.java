package io.qgpu.kubernetes.extender;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Locality;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Selectors;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;

/**
 * Reads what a pod asks for ({@link QgpuAnnotations}) into a {@link Claim}. A pod without any
 * {@code qgpu.io/} resource needs no GPU: {@link #claimOf} returns empty and the extender lets it
 * through untouched.
 *
 * <pre>{@code
 * // resources.limits: {qgpu.io/gpu: 1, qgpu.io/gpu-memory: 8, qgpu.io/gpu-core: 30}
 * // annotations:      {qgpu.io/priority: online, qgpu.io/gpu-core-limit: "60"}
 * Optional<Claim> c = new PodClaims(GranularityRules.ofDefaults()).claimOf(pod);
 * // Claim[tenantId=ns/name, gpuCount=1, memoryPerGpuBytes=8 GiB, computeRequest=30, computeLimit=60, priority=ONLINE, ...]
 * }</pre>
 *
 * <p>Rules: the {@code qgpu.io/} resources sit in one regular container (not an init container);
 * when both a request and a limit are given they must be equal (Kubernetes requires it of extended
 * resources); {@value QgpuAnnotations#GPU_MEMORY} is a whole number of GiB, or a byte quantity with a
 * binary suffix ({@code 8Gi}, {@code 512Mi}); a {@code qgpu.io/} resource or pod annotation this
 * extender does not know is refused, so that a typo never goes unnoticed. The claim must also follow
 * the ledger's granularity rules. Every refusal is a {@link BadRequestException} (400) naming the
 * field and the value.
 *
 * <p>Host resources: the claim asks for the pod's effective CPU and memory requests
 * ({@link PodHostRequests}), so the ledger reserves them with the GPU slices on nodes whose
 * inventory declares a host capacity, and explain and refusals show them.
 *
 * <p>Tenant id: {@code namespace/name} of the pod (see {@link #tenantOf}).
 *
 * <p>Thread safety: immutable; safe from any thread.
 */
public final class PodClaims {

    private final GranularityRules rules;

    public PodClaims(GranularityRules rules) {
        this.rules = io.qgpu.api.Validate.notNull("rules", rules);
    }

    /** The tenant id of a pod: {@code namespace/name}. */
    public static String tenantOf(String namespace, String name) {
        return namespace + "/" + name;
    }

    /** The tenant id of a pod; refuses a pod without a name or namespace. */
    public static String tenantOf(Pod pod) {
        ObjectMeta m = pod.getMetadata();
        if (m == null) {
            throw BadRequestException.badValue("Pod.metadata", null, "is required");
        }
        if (m.getName() == null || m.getName().isBlank()) {
            throw BadRequestException.badValue("Pod.metadata.name", m.getName(), "is required");
        }
        if (m.getNamespace() == null || m.getNamespace().isBlank()) {
            throw BadRequestException.badValue("Pod.metadata.namespace", m.getNamespace(), "is required");
        }
        return tenantOf(m.getNamespace(), m.getName());
    }

    /** Whether the pod asks for any {@code qgpu.io/} resource (in any container, init ones included). */
    public static boolean wantsGpu(Pod pod) {
        if (pod.getSpec() == null) {
            return false;
        }
        for (List<Container> list : List.of(nullSafe(pod.getSpec().getContainers()), nullSafe(pod.getSpec().getInitContainers()))) {
            for (Container c : list) {
                if (c != null && !qgpuResources(c).isEmpty()) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * The pod's claim, or empty when it asks for no GPU.
     *
     * @throws BadRequestException if what it asks for is malformed, unknown or breaks the granularity rules
     */
    public Optional<Claim> claimOf(Pod pod) {
        String tenant = tenantOf(pod);
        if (pod.getSpec() == null) {
            throw BadRequestException.badValue("Pod.spec", null, "is required");
        }
        List<Container> init = nullSafe(pod.getSpec().getInitContainers());
        noNulls("Pod.spec.initContainers", init);
        noNulls("Pod.spec.containers", nullSafe(pod.getSpec().getContainers()));
        for (int i = 0; i < init.size(); i++) {
            Map<String, Quantity> r = qgpuResources(init.get(i));
            if (!r.isEmpty()) {
                throw BadRequestException.badValue("Pod.spec.initContainers[" + i + "].resources", new TreeSet<>(r.keySet()),
                        "qgpu.io resources are only supported on regular containers");
            }
        }
        List<Container> containers = nullSafe(pod.getSpec().getContainers());
        Map<String, Quantity> resources = null;
        String where = null;
        for (int i = 0; i < containers.size(); i++) {
            Map<String, Quantity> r = qgpuResources(containers.get(i));
            if (r.isEmpty()) {
                continue;
            }
            String here = "Pod.spec.containers[" + i + "]";
            if (resources != null) {
                throw BadRequestException.badValue(here + ".resources", new TreeSet<>(r.keySet()),
                        "qgpu.io resources must sit in one container only (already in " + where + ")");
            }
            resources = merged(here, containers.get(i));
            where = here;
        }
        Map<String, String> annotations = annotations(pod);
        checkAnnotations(annotations);
        if (resources == null) {
            return Optional.empty();
        }
        String rf = where + ".resources.limits";
        for (String name : resources.keySet()) {
            if (!QgpuAnnotations.RESOURCES.contains(name)) {
                throw BadRequestException.badValue(rf + "[" + name + "]", resources.get(name).toString(),
                        "unknown qgpu.io resource; known: " + QgpuAnnotations.RESOURCES);
            }
        }
        Integer gpus = wholeNumber(rf + "[" + QgpuAnnotations.GPU + "]", resources.get(QgpuAnnotations.GPU), 1, 1024);
        Long memoryBytes = memory(rf + "[" + QgpuAnnotations.GPU_MEMORY + "]", resources.get(QgpuAnnotations.GPU_MEMORY));
        Integer core = wholeNumber(rf + "[" + QgpuAnnotations.GPU_CORE + "]", resources.get(QgpuAnnotations.GPU_CORE), 0, 100);
        Integer coreLimit = annotations.containsKey(QgpuAnnotations.GPU_CORE_LIMIT)
                ? parseInt("Pod.metadata.annotations[" + QgpuAnnotations.GPU_CORE_LIMIT + "]",
                annotations.get(QgpuAnnotations.GPU_CORE_LIMIT), 1, 100) : null;

        Claim.Builder b = Claim.builder(tenant).gpus(gpus == null ? 1 : gpus).host(PodHostRequests.of(pod));
        if (memoryBytes == null) {
            if (core != null && core != 100) {
                throw BadRequestException.badValue(rf + "[" + QgpuAnnotations.GPU_CORE + "]", core,
                        "without " + QgpuAnnotations.GPU_MEMORY + " the pod gets whole GPUs (compute 100); set "
                                + QgpuAnnotations.GPU_MEMORY + " to share a GPU");
            }
            if (coreLimit != null && coreLimit != 100) {
                throw BadRequestException.badValue("Pod.metadata.annotations[" + QgpuAnnotations.GPU_CORE_LIMIT + "]", coreLimit,
                        "without " + QgpuAnnotations.GPU_MEMORY + " the pod gets whole GPUs (compute 100)");
            }
            b.exclusive();
        } else {
            int request = core == null ? 0 : core;
            int limit = coreLimit == null ? 100 : coreLimit;
            if (limit < Math.max(1, request)) {
                throw BadRequestException.badValue("Pod.metadata.annotations[" + QgpuAnnotations.GPU_CORE_LIMIT + "]", limit,
                        "must be at least the compute request " + QgpuAnnotations.GPU_CORE + " = " + request);
            }
            b.memoryBytes(memoryBytes).compute(request, limit);
        }
        if (pod.getSpec().getPriority() != null) {
            b.priorityWithinClass(pod.getSpec().getPriority());   // Kubernetes' pod priority orders tenants within a class
        }
        String pf = "Pod.metadata.annotations";
        if (annotations.containsKey(QgpuAnnotations.PRIORITY)) {
            b.priority(translate(() -> PriorityClass.fromName(pf + "[" + QgpuAnnotations.PRIORITY + "]",
                    annotations.get(QgpuAnnotations.PRIORITY).trim())));
        }
        Locality locality = Locality.of(label(annotations, QgpuAnnotations.AFFINITY),
                label(annotations, QgpuAnnotations.ANTI_AFFINITY), label(annotations, QgpuAnnotations.EXCLUSION));
        b.locality(locality);
        Selectors.Builder s = Selectors.builder();
        list(annotations, QgpuAnnotations.GPU_MODEL).forEach(s::includeModel);
        list(annotations, QgpuAnnotations.GPU_MODEL_EXCLUDE).forEach(s::excludeModel);
        list(annotations, QgpuAnnotations.GPU_UUID).forEach(s::includeUuid);
        list(annotations, QgpuAnnotations.GPU_UUID_EXCLUDE).forEach(s::excludeUuid);
        b.selectors(s.build());
        if (annotations.containsKey(QgpuAnnotations.NODE_POLICY)) {
            b.nodePolicy(translate(() -> PlacementPolicy.fromName(pf + "[" + QgpuAnnotations.NODE_POLICY + "]",
                    annotations.get(QgpuAnnotations.NODE_POLICY).trim())));
        }
        if (annotations.containsKey(QgpuAnnotations.GPU_POLICY)) {
            b.gpuPolicy(translate(() -> PlacementPolicy.fromName(pf + "[" + QgpuAnnotations.GPU_POLICY + "]",
                    annotations.get(QgpuAnnotations.GPU_POLICY).trim())));
        }
        Claim claim = translate(b::build);
        translate(() -> {
            rules.validate(claim);
            return claim;
        });
        return Optional.of(claim);
    }

    // ------------------------------------------------------------ helpers

    private static void noNulls(String field, List<Container> list) {
        for (int i = 0; i < list.size(); i++) {
            if (list.get(i) == null) {
                throw BadRequestException.badValue(field + "[" + i + "]", null, "must be a container");
            }
        }
    }

    private static <T> List<T> nullSafe(List<T> l) {
        return l == null ? List.of() : l;
    }

    private static Map<String, String> annotations(Pod pod) {
        Map<String, String> a = pod.getMetadata().getAnnotations();
        if (a == null) {
            return Map.of();
        }
        for (Map.Entry<String, String> e : a.entrySet()) {
            if (e.getValue() == null) {
                throw BadRequestException.badValue("Pod.metadata.annotations[" + e.getKey() + "]", null, "must be a string");
            }
        }
        return a;
    }

    private static void checkAnnotations(Map<String, String> annotations) {
        for (String key : annotations.keySet()) {
            if (key.startsWith(QgpuAnnotations.PREFIX) && !QgpuAnnotations.KNOWN_POD_KEYS.contains(key)) {
                throw BadRequestException.badValue("Pod.metadata.annotations[" + key + "]", annotations.get(key),
                        "unknown qgpu.io annotation; known: " + QgpuAnnotations.POD_INPUTS);
            }
        }
    }

    /** The qgpu.io entries of a container's limits and requests, by name. */
    private static Map<String, Quantity> qgpuResources(Container c) {
        Map<String, Quantity> out = new LinkedHashMap<>();
        ResourceRequirements r = c.getResources();
        if (r == null) {
            return out;
        }
        for (Map<String, Quantity> m : java.util.Arrays.asList(r.getLimits(), r.getRequests())) {
            if (m != null) {
                m.forEach((k, v) -> {
                    if (k.startsWith(QgpuAnnotations.PREFIX)) {
                        out.putIfAbsent(k, v);
                    }
                });
            }
        }
        return out;
    }

    /** Limits, with requests filling in; a request that differs from its limit is refused. */
    private static Map<String, Quantity> merged(String where, Container c) {
        Map<String, Quantity> limits = c.getResources().getLimits() == null ? Map.of() : c.getResources().getLimits();
        Map<String, Quantity> requests = c.getResources().getRequests() == null ? Map.of() : c.getResources().getRequests();
        Map<String, Quantity> out = new LinkedHashMap<>();
        for (Map.Entry<String, Quantity> e : limits.entrySet()) {
            if (e.getKey().startsWith(QgpuAnnotations.PREFIX)) {
                amount(where + ".resources.limits[" + e.getKey() + "]", e.getValue());
                out.put(e.getKey(), e.getValue());
            }
        }
        for (Map.Entry<String, Quantity> e : requests.entrySet()) {
            if (!e.getKey().startsWith(QgpuAnnotations.PREFIX)) {
                continue;
            }
            amount(where + ".resources.requests[" + e.getKey() + "]", e.getValue());
            Quantity lim = out.get(e.getKey());
            if (lim == null) {
                out.put(e.getKey(), e.getValue());
            } else if (amount(where + ".resources.requests[" + e.getKey() + "]", e.getValue())
                    .compareTo(amount(where + ".resources.limits[" + e.getKey() + "]", lim)) != 0) {
                throw BadRequestException.badValue(where + ".resources.requests[" + e.getKey() + "]", e.getValue().toString(),
                        "must equal the limit " + lim + " (extended resources cannot be overcommitted)");
            }
        }
        return out;
    }

    private static BigDecimal amount(String field, Quantity q) {
        if (q == null || q.getAmount() == null || q.getAmount().isBlank()) {
            throw BadRequestException.badValue(field, q == null ? null : q.toString(), "is not a quantity");
        }
        try {
            return Quantity.getAmountInBytes(q);
        } catch (RuntimeException e) {
            throw BadRequestException.badValue(field, q.toString(), "is not a quantity (" + e.getMessage() + ")");
        }
    }

    private static Integer wholeNumber(String field, Quantity q, int min, int max) {
        if (q == null) {
            return null;
        }
        String format = q.getFormat() == null ? "" : q.getFormat();
        if (!format.isEmpty()) {
            throw BadRequestException.badValue(field, q.toString(), "must be a plain whole number, without a unit suffix");
        }
        BigDecimal v = amount(field, q);
        if (v.signum() < 0 || v.stripTrailingZeros().scale() > 0 || v.compareTo(BigDecimal.valueOf(max)) > 0
                || v.compareTo(BigDecimal.valueOf(min)) < 0) {
            throw BadRequestException.badValue(field, q.toString(), "must be a whole number between " + min + " and " + max);
        }
        return v.intValueExact();
    }

    /** A plain number is GiB; a binary-suffixed quantity is bytes. */
    private static Long memory(String field, Quantity q) {
        if (q == null) {
            return null;
        }
        String format = q.getFormat() == null ? "" : q.getFormat();
        BigDecimal v = amount(field, q);
        BigDecimal bytes;
        if (format.isEmpty()) {
            bytes = v.multiply(BigDecimal.valueOf(GpuDevice.GIB));
        } else if (format.endsWith("i")) {
            bytes = v;
        } else {
            throw BadRequestException.badValue(field, q.toString(),
                    "must be a whole number of GiB (8) or a binary byte quantity (8Gi, 512Mi)");
        }
        if (bytes.compareTo(BigDecimal.valueOf(Long.MAX_VALUE)) > 0) {
            throw BadRequestException.badValue(field, q.toString(), "is too large: at most " + Long.MAX_VALUE / GpuDevice.GIB
                    + " GiB (" + Long.MAX_VALUE + " bytes)");
        }
        if (bytes.signum() <= 0 || bytes.stripTrailingZeros().scale() > 0) {
            throw BadRequestException.badValue(field, q.toString(), "must be a positive whole number of bytes");
        }
        return bytes.longValueExact();
    }

    private static int parseInt(String field, String s, int min, int max) {
        try {
            int v = Integer.parseInt(s.trim());
            if (v < min || v > max) {
                throw BadRequestException.badValue(field, s, "must be between " + min + " and " + max);
            }
            return v;
        } catch (NumberFormatException e) {
            throw BadRequestException.badValue(field, s, "must be a whole number between " + min + " and " + max);
        }
    }

    private static String label(Map<String, String> annotations, String key) {
        String v = annotations.get(key);
        if (v == null) {
            return null;
        }
        if (v.isBlank()) {
            throw BadRequestException.badValue("Pod.metadata.annotations[" + key + "]", v, "must not be blank");
        }
        return v.trim();
    }

    private static List<String> list(Map<String, String> annotations, String key) {
        String v = annotations.get(key);
        if (v == null) {
            return List.of();
        }
        List<String> out = new ArrayList<>();
        for (String part : v.split(",")) {
            if (part.isBlank()) {
                throw BadRequestException.badValue("Pod.metadata.annotations[" + key + "]", v,
                        "must be a comma-separated list without empty entries");
            }
            out.add(part.trim());
        }
        return out;
    }

    private static <T> T translate(java.util.function.Supplier<T> s) {
        try {
            return s.get();
        } catch (InvalidValueException e) {
            throw new BadRequestException(400, e.getMessage(), e);
        }
    }
}
