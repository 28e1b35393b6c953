package io.qgpu.testkit.invariants;

import io.qgpu.api.HostCapacity;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.testkit.property.Describe;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The {@link Invariant#HOST} part of {@link PlacementInvariants}: per node, the CPU and host memory the
 * placements on it ask for, summed from scratch, against what the node declares.
 *
 * <p>Thread safety: stateless.
 */
final class HostInvariants {

    private HostInvariants() {
    }

    static void check(Map<String, Node> nodes, Collection<Placement> placements, List<Violation> out) {
        Map<String, long[]> used = new LinkedHashMap<>();
        Set<String> seen = new HashSet<>();
        for (Placement p : placements) {
            if (!seen.add(p.tenantId()) || !nodes.containsKey(p.nodeName())) {
                continue;   // reported as DUPLICATE_TENANT or TARGETS
            }
            long[] u = used.computeIfAbsent(p.nodeName(), k -> new long[2]);
            u[0] += p.claim().host().cpuMillis();
            u[1] += p.claim().host().memoryBytes();
        }
        for (Map.Entry<String, long[]> e : used.entrySet()) {
            HostCapacity cap = Objects.requireNonNull(nodes.get(e.getKey())).host(); // used: known nodes only
            long cpu = e.getValue()[0];
            long mem = e.getValue()[1];
            if (cap.cpuMillis().isPresent() && cpu > cap.cpuMillis().getAsLong()) {
                out.add(new Violation(Invariant.HOST, e.getKey(), "CPU " + cpu + " millicores reserved of "
                        + cap.cpuMillis().getAsLong()));
            }
            if (cap.memoryBytes().isPresent() && mem > cap.memoryBytes().getAsLong()) {
                out.add(new Violation(Invariant.HOST, e.getKey(), "host memory " + Describe.bytes(mem) + " reserved of "
                        + Describe.bytes(cap.memoryBytes().getAsLong())));
            }
        }
    }
}
