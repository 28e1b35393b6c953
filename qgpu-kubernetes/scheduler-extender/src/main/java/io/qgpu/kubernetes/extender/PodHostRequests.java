package io.qgpu.kubernetes.extender;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Quantity;
import io.qgpu.api.HostRequest;
import java.math.BigDecimal;
import java.util.List;
import java.util.Map;

/**
 * The CPU and memory a pod requests, as the kube-scheduler counts them, for the claim's
 * {@link HostRequest}: CPU in millicores ({@code 500m} = 500, {@code 2} = 2000) and memory in bytes
 * ({@code 4Gi}, {@code 512M}), read with fabric8's {@link Quantity}.
 *
 * <pre>{@code
 * // containers: a {requests: {cpu: 500m, memory: 1Gi}}, b {limits: {cpu: "1", memory: 2Gi}}
 * HostRequest r = PodHostRequests.of(pod);   // cpuMillis 1500, memoryBytes 3 GiB
 * }</pre>
 *
 * <p>Rules, those of the scheduler's effective pod request: a container's request of a resource is
 * its {@code requests} entry, or its {@code limits} entry when it gives no request (Kubernetes
 * defaults the request to the limit); the pod's request is the larger of the sum over its regular
 * containers (plus its restartable init containers, the sidecars) and the largest need of the init
 * phase (each init container plus the sidecars started before it), plus {@code spec.overhead}. A
 * quantity that is negative, not a quantity, or finer than a millicore or a byte is refused with a
 * {@link BadRequestException} (400) naming the field and the value.
 *
 * <p>Thread safety: stateless.
 */
public final class PodHostRequests {
    static final String CPU = "cpu";
    static final String MEMORY = "memory";
    private static final BigDecimal THOUSAND = BigDecimal.valueOf(1000);

    private PodHostRequests() {
    }

    /** The pod's effective CPU and memory request; {@link HostRequest#none()} when it requests neither. */
    public static HostRequest of(Pod pod) {
        PodSpec spec = pod.getSpec();
        if (spec == null) {
            return HostRequest.none();
        }
        return new HostRequest(effective(spec, CPU), effective(spec, MEMORY));
    }

    private static long effective(PodSpec spec, String resource) {
        long containers = 0;
        List<Container> regular = spec.getContainers() == null ? List.of() : spec.getContainers();
        for (int i = 0; i < regular.size(); i++) {
            containers = Math.addExact(containers, request("Pod.spec.containers[" + i + "]", regular.get(i), resource));
        }
        long sidecars = 0;
        long initPhase = 0;
        List<Container> init = spec.getInitContainers() == null ? List.of() : spec.getInitContainers();
        for (int i = 0; i < init.size(); i++) {
            Container c = init.get(i);
            long r = request("Pod.spec.initContainers[" + i + "]", c, resource);
            if ("Always".equals(c.getRestartPolicy())) {
                sidecars = Math.addExact(sidecars, r);
                initPhase = Math.max(initPhase, sidecars);
            } else {
                initPhase = Math.max(initPhase, Math.addExact(sidecars, r));
            }
        }
        long total = Math.max(Math.addExact(containers, sidecars), initPhase);
        Map<String, Quantity> overhead = spec.getOverhead();
        if (overhead != null && overhead.get(resource) != null) {
            total = Math.addExact(total, amount("Pod.spec.overhead[" + resource + "]", overhead.get(resource), resource));
        }
        return total;
    }

    private static long request(String where, Container c, String resource) {
        if (c == null || c.getResources() == null) {
            return 0;
        }
        Map<String, Quantity> requests = c.getResources().getRequests();
        if (requests != null && requests.get(resource) != null) {
            return amount(where + ".resources.requests[" + resource + "]", requests.get(resource), resource);
        }
        Map<String, Quantity> limits = c.getResources().getLimits();
        if (limits != null && limits.get(resource) != null) {
            return amount(where + ".resources.limits[" + resource + "]", limits.get(resource), resource);
        }
        return 0;
    }

    /** CPU in millicores or memory in bytes, exactly. */
    private static long amount(String field, Quantity q, String resource) {
        BigDecimal v;
        try {
            if (q.getAmount() == null || q.getAmount().isBlank()) {
                throw new ArithmeticException("no amount");
            }
            v = Quantity.getAmountInBytes(q);
        } catch (RuntimeException e) {
            throw BadRequestException.badValue(field, q.toString(), "is not a Kubernetes quantity");
        }
        boolean cpu = resource.equals(CPU);
        BigDecimal units = cpu ? v.multiply(THOUSAND) : v;
        if (units.signum() < 0) {
            throw BadRequestException.badValue(field, q.toString(), "must not be negative");
        }
        if (units.stripTrailingZeros().scale() > 0) {
            throw BadRequestException.badValue(field, q.toString(), cpu ? "must be a whole number of millicores (1m at the finest)"
                    : "must be a whole number of bytes");
        }
        if (units.compareTo(BigDecimal.valueOf(Long.MAX_VALUE)) > 0) {
            throw BadRequestException.badValue(field, q.toString(), "is too large");
        }
        return units.longValueExact();
    }
}
