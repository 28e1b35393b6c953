package io.qgpu.core.gate;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Validate;

/**
 * What a tenant of a {@link Gate} asks for: its name, its priority class and its compute quota in
 * percent of the GPU. The GPU's isolation policy interprets the quota (see
 * {@link io.qgpu.core.compute.ComputeEngine#shareFor}): under {@code elastic} {@code request} is
 * guaranteed and {@code limit} is the most the tenant may use in the sliding window; under
 * {@code fixed-share} the request is also the limit; under {@code burst-share} and
 * {@code best-effort} there is no limit below 100%.
 *
 * <p>An offline tenant's request is guaranteed among the offline tenants only: it is its share of
 * the GPU time that online work leaves. It is no floor against online work, which preempts offline
 * work whenever it runs; when offline work resumes is the release rule's choice
 * ({@link GateConfig.Builder#releasePolicy}): under the default fixed 100 ms delay, online requests
 * that come less than 100 ms apart leave offline tenants no time at all.
 *
 * <pre>{@code
 * GateTenantSpec chat = GateTenantSpec.online("chat").request(20).limit(60).build();
 * GateTenantSpec train = GateTenantSpec.offline("train").request(30).build();   // limit 100
 * }</pre>
 *
 * @param name           unique within the gate, not blank
 * @param priority       {@link PriorityClass#ONLINE} preempts {@link PriorityClass#OFFLINE}
 * @param requestPercent guaranteed share, 0..limitPercent (an offline tenant's: of the time online work leaves)
 * @param limitPercent   maximum share, 1..100
 *
 * <p>Thread safety: immutable.
 */
public record GateTenantSpec(String name, PriorityClass priority, int requestPercent, int limitPercent) {

    public GateTenantSpec {
        Validate.notBlank("tenantSpec.name", name);
        Validate.notNull("tenantSpec.priority", priority);
        Validate.between("tenantSpec.limitPercent", limitPercent, 1, 100);
        Validate.between("tenantSpec.requestPercent", requestPercent, 0, 100);
        if (requestPercent > limitPercent) {
            throw new InvalidValueException("tenantSpec.requestPercent", requestPercent,
                    "must be at most limitPercent (" + limitPercent + ")");
        }
    }

    /** A builder for an online (latency-sensitive) tenant: request 0, limit 100 unless set. */
    public static Builder online(String name) {
        return new Builder(name, PriorityClass.ONLINE);
    }

    /** A builder for an offline (throughput) tenant: request 0, limit 100 unless set. */
    public static Builder offline(String name) {
        return new Builder(name, PriorityClass.OFFLINE);
    }

    /** A builder for a tenant of the given class. */
    public static Builder builder(String name, PriorityClass priority) {
        return new Builder(name, priority);
    }

    /** Fail-fast builder: each setter checks its own value, {@link #build()} the combination. */
    public static final class Builder {
        private final String name;
        private final PriorityClass priority;
        private int request;
        private int limit = 100;

        private Builder(String name, PriorityClass priority) {
            this.name = Validate.notBlank("tenantSpec.name", name);
            this.priority = Validate.notNull("tenantSpec.priority", priority);
        }

        /** Guaranteed share in percent, 0..100. */
        public Builder request(int percent) {
            this.request = Validate.between("tenantSpec.requestPercent", percent, 0, 100);
            return this;
        }

        /** Maximum share in percent, 1..100. */
        public Builder limit(int percent) {
            this.limit = Validate.between("tenantSpec.limitPercent", percent, 1, 100);
            return this;
        }

        public GateTenantSpec build() {
            return new GateTenantSpec(name, priority, request, limit);
        }
    }
}
