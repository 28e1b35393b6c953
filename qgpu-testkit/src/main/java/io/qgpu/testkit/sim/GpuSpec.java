package io.qgpu.testkit.sim;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.Validate;
import io.qgpu.core.compute.ComputeEngine;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * One simulated GPU: its isolation policy (applied among offline tenants), how grants end, and its
 * tenants.
 *
 * <pre>{@code
 * GpuSpec gpu = GpuSpec.of("gpu0", IsolationPolicy.BURST_SHARE, List.of(infer, trainA, trainB));
 * }</pre>
 *
 * @param id      unique in the scenario
 * @param policy  the isolation policy among offline tenants
 * @param slicing how a grant ends
 * @param tenants its tenants, ids unique
 *
 * <p>Thread safety: immutable.
 */
public record GpuSpec(String id, IsolationPolicy policy, Slicing slicing, List<TenantSpec> tenants) {

    public GpuSpec {
        Validate.notBlank("gpu.id", id);
        String f = "gpus[" + id + "]";
        Validate.notNull(f + ".policy", policy);
        Validate.notNull(f + ".slicing", slicing);
        tenants = Validate.list(f + ".tenants", tenants);
        if (tenants.isEmpty()) {
            throw new InvalidValueException(f + ".tenants", tenants, "must not be empty");
        }
        Set<String> ids = new HashSet<>();
        int offlineRequests = 0;
        for (TenantSpec t : tenants) {
            if (!ids.add(t.id())) {
                throw new InvalidValueException(f + ".tenants[" + t.id() + "].id", t.id(), "is used twice");
            }
            if (!t.online()) {
                try {
                    ComputeEngine.shareFor(policy, t.requestPercent(), t.limitPercent());
                } catch (InvalidValueException e) {
                    throw new InvalidValueException(f + ".tenants[" + t.id() + "].request", t.requestPercent(),
                            e.rule() + " under " + policy.wireName());
                }
                offlineRequests += policy == IsolationPolicy.BEST_EFFORT ? 0 : t.requestPercent();
            }
        }
        if (offlineRequests > 100) {
            throw new InvalidValueException(f + ".tenants", offlineRequests + "%",
                    "the offline tenants' guaranteed requests on this GPU add up to more than 100%");
        }
    }

    public static GpuSpec of(String id, IsolationPolicy policy, List<TenantSpec> tenants) {
        return new GpuSpec(id, policy, Slicing.DRIVER, tenants);
    }

    public GpuSpec withSlicing(Slicing s) {
        return new GpuSpec(id, policy, s, tenants);
    }
}
