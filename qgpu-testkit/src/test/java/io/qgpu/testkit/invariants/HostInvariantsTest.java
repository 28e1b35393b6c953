package io.qgpu.testkit.invariants;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.HostCapacity;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The oracle's host-resource invariant, on its own. */
class HostInvariantsTest {

    private static Placement hostOnly(String id, String node, long cpu, long memGiB) {
        return new Placement(Claim.builder(id).hostOnly().cpuMillis(cpu).hostMemoryGiB(memGiB).build(), node, List.of());
    }

    @Test
    void cpuAndHostMemoryAreSummedPerNodeAgainstWhatItDeclares() {
        Node declared = Node.builder("d").host(HostCapacity.of(4000, 8 * GpuDevice.GIB)).build();
        Node cpuOnly = Node.builder("c").cpuMillis(1000).build();
        Node untracked = Node.builder("u").build();
        List<Node> nodes = List.of(declared, cpuOnly, untracked);
        GranularityRules r = GranularityRules.ofDefaults();
        assertEquals(List.of(), PlacementInvariants.check(r, nodes, List.of(hostOnly("a", "d", 2000, 4), hostOnly("b", "d", 2000, 4),
                hostOnly("c", "c", 1000, 500), hostOnly("x", "u", 1_000_000, 1000))), "exactly full, and untracked resources");
        List<Violation> v = PlacementInvariants.check(r, nodes, List.of(hostOnly("a", "d", 2000, 4), hostOnly("b", "d", 2500, 5),
                hostOnly("c", "c", 1001, 0)));
        assertEquals(List.of(new Violation(Invariant.HOST, "d", "CPU 4500 millicores reserved of 4000"),
                new Violation(Invariant.HOST, "d", "host memory 9 GiB reserved of 8 GiB"),
                new Violation(Invariant.HOST, "c", "CPU 1001 millicores reserved of 1000")), v);
    }
}
