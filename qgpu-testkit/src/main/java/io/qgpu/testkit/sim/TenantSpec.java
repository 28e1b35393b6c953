package io.qgpu.testkit.sim;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Validate;
import java.time.Duration;

/**
 * One simulated tenant of a GPU.
 *
 * <pre>{@code
 * TenantSpec infer = TenantSpec.online("infer", new Workload.OpenLoop(20, Dist.exponential(Duration.ofMillis(10))));
 * TenantSpec train = TenantSpec.offline("train", busy)
 *         .withShare(30, 100)                                         // request 30%, limit 100%
 *         .withActive(Duration.ofSeconds(10), Duration.ofSeconds(40))
 *         .withSuspendLatency(Dist.uniform(Duration.ofNanos(20_000), Duration.ofNanos(300_000)));
 * }</pre>
 *
 * @param id               unique in the scenario
 * @param priority         online (preempts) or offline (shares by the GPU's policy)
 * @param requestPercent   guaranteed compute (offline tenants; read by the GPU's policy)
 * @param limitPercent     maximum compute (offline tenants; read by the GPU's policy)
 * @param workload         what it runs
 * @param suspendLatency   time an offline tenant needs to confirm a suspension
 * @param activeFromNanos  when its workload starts
 * @param activeUntilNanos when its workload stops producing work ({@link Long#MAX_VALUE}: never)
 *
 * <p>Thread safety: immutable.
 */
public record TenantSpec(String id, PriorityClass priority, int requestPercent, int limitPercent, Workload workload,
                         Dist suspendLatency, long activeFromNanos, long activeUntilNanos) {

    /** 50 us: a driver-level suspension. */
    public static final Dist DEFAULT_SUSPEND_LATENCY = new Dist.Constant(50_000);

    public TenantSpec {
        Validate.notBlank("tenant.id", id);
        String f = "tenants[" + id + "]";
        Validate.notNull(f + ".priority", priority);
        Validate.between(f + ".request", requestPercent, 0, 100);
        Validate.between(f + ".limit", limitPercent, Math.max(1, requestPercent), 100);
        Validate.notNull(f + ".workload", workload);
        Validate.notNull(f + ".suspendLatency", suspendLatency);
        Validate.atLeast(f + ".from", activeFromNanos, 0);
        if (activeUntilNanos <= activeFromNanos) {
            throw new InvalidValueException(f + ".until", io.qgpu.core.time.Durations.format(activeUntilNanos),
                    "must be after from (" + io.qgpu.core.time.Durations.format(activeFromNanos) + ")");
        }
    }

    public static TenantSpec online(String id, Workload workload) {
        return new TenantSpec(id, PriorityClass.ONLINE, 0, 100, workload, DEFAULT_SUSPEND_LATENCY, 0, Long.MAX_VALUE);
    }

    public static TenantSpec offline(String id, Workload workload) {
        return new TenantSpec(id, PriorityClass.OFFLINE, 0, 100, workload, DEFAULT_SUSPEND_LATENCY, 0, Long.MAX_VALUE);
    }

    public TenantSpec withShare(int request, int limit) {
        return new TenantSpec(id, priority, request, limit, workload, suspendLatency, activeFromNanos, activeUntilNanos);
    }

    public TenantSpec withActive(Duration from, Duration until) {
        return new TenantSpec(id, priority, requestPercent, limitPercent, workload, suspendLatency,
                from.toNanos(), until == null ? Long.MAX_VALUE : until.toNanos());
    }

    public TenantSpec withSuspendLatency(Dist latency) {
        return new TenantSpec(id, priority, requestPercent, limitPercent, workload, latency, activeFromNanos, activeUntilNanos);
    }

    public boolean online() {
        return priority == PriorityClass.ONLINE;
    }
}
