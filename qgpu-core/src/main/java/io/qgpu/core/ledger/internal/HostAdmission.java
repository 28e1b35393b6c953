package io.qgpu.core.ledger.internal;

import io.qgpu.api.Claim;
import io.qgpu.api.HostHolding;
import io.qgpu.api.HostRequest;
import io.qgpu.api.HostState;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/**
 * The ledger's host-resource rule as pure functions: a node takes a claim's CPU and host memory when,
 * for each resource the node declares ({@link io.qgpu.api.HostCapacity}), the free amount covers the
 * request; a resource the node does not declare is not tracked there and never refuses a claim. The
 * sum of the reservations of a tracked resource never exceeds its capacity.
 *
 * <p>Thread safety: stateless.
 */
public final class HostAdmission {

    private HostAdmission() {
    }

    /** Reasons the node's host resources cannot take the claim's; empty when they can. */
    public static List<Reason> check(NodeState state, Claim claim) {
        HostRequest r = claim.host();
        if (r.isNone()) {
            return List.of();
        }
        List<Reason> reasons = new ArrayList<>(0);
        OptionalLong cpu = state.cpuMillisFree();
        if (cpu.isPresent() && r.cpuMillis() > cpu.getAsLong()) {
            reasons.add(new Reason(ReasonCode.INSUFFICIENT_CPU, state.name(), r.cpuMillis(),
                    cpu.getAsLong(), "CPU on the node"));
        }
        OptionalLong mem = state.hostMemoryFree();
        if (mem.isPresent() && r.memoryBytes() > mem.getAsLong()) {
            reasons.add(new Reason(ReasonCode.INSUFFICIENT_HOST_MEMORY, state.name(), r.memoryBytes(),
                    mem.getAsLong(), "host memory on the node"));
        }
        return reasons;
    }

    /** Whether {@link #check} would answer empty, without building reasons (the placement hot loop). */
    public static boolean fits(long cpuFree, long memFree, HostRequest r) {
        return r.cpuMillis() <= cpuFree && r.memoryBytes() <= memFree;
    }

    /** {@code host} with the placement's host resources added (the same state when it asks for none). */
    public static HostState with(HostState host, Placement placement) {
        return placement.claim().host().isNone() ? host : host.with(HostHolding.of(placement));
    }
}
