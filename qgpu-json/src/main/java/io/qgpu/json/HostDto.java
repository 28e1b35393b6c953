package io.qgpu.json;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import io.qgpu.api.Claim;
import io.qgpu.api.HostCapacity;
import io.qgpu.api.HostRequest;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import java.util.OptionalLong;
import org.jspecify.annotations.Nullable;

/**
 * Host resources on the wire: {@code "host": {"cpuMillis": 4000, "memoryGiB": 16}} (or
 * {@code memoryBytes}), the same object for a node's capacity (a key left out: that resource is not
 * tracked on the node) and a claim's request (a key left out: 0).
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonPropertyOrder({"cpuMillis", "memoryBytes", "memoryGiB"})
record HostDto(@Nullable Long cpuMillis, @Nullable Long memoryBytes, @Nullable Long memoryGiB) {

    /** A node's capacity; null when nothing is tracked. */
    static @Nullable HostDto of(HostCapacity c) {
        if (c.isUntracked()) {
            return null;
        }
        return new HostDto(boxed(c.cpuMillis()), boxed(c.memoryBytes()), null);
    }

    /** A claim's request; null when it asks for none. */
    static @Nullable HostDto of(HostRequest r) {
        if (r.isNone()) {
            return null;
        }
        return new HostDto(r.cpuMillis() == 0 ? null : r.cpuMillis(), r.memoryBytes() == 0 ? null : r.memoryBytes(), null);
    }

    private static @Nullable Long boxed(OptionalLong v) {
        return v.isPresent() ? v.getAsLong() : null;
    }

    /** Declares on the node builder what this capacity declares; {@code f} names the node in errors. */
    void applyTo(Node.Builder b, String f) {
        if (cpuMillis != null) {
            b.cpuMillis(cpuMillis);
        }
        if (memoryBytes != null || memoryGiB != null) {
            b.hostMemoryBytes(Dto.memory(f + ".host.memoryBytes", memoryBytes, memoryGiB, false));
        }
    }

    /** Sets the request on the claim builder; {@code f} names the claim in errors. */
    void applyTo(Claim.Builder b, String f) {
        b.cpuMillis(cpuMillis == null ? 0 : cpuMillis);
        b.hostMemoryBytes(Dto.memory(f + ".host.memoryBytes", memoryBytes, memoryGiB, false));
    }

    /**
     * A host-only tenant already on a node (listed under the node's {@code hostTenants}; tenants with
     * GPUs are listed on their GPUs, with their host resources).
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"tenant", "priority", "host"})
    record HostTenantDto(@Nullable String tenant, @Nullable String priority, @Nullable HostDto host) {
        static HostTenantDto of(Placement p) {
            return new HostTenantDto(p.tenantId(), p.claim().priority().wireName(), HostDto.of(p.claim().host()));
        }

        Placement toModel(String f, String node) {
            String t = Dto.required(f + ".tenant", tenant);
            Claim.Builder b = Claim.builder(t).hostOnly();
            Dto.required(f + ".host", host).applyTo(b, "claim[" + t + "]");
            if (priority != null) {
                b.priority(PriorityClass.fromName(f + ".priority", priority));
            }
            return new Placement(b.build(), node, java.util.List.of());
        }
    }
}
