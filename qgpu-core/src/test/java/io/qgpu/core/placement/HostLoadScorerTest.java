package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.core.ledger.Ledger;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The opt-in host-load node scorer: its formula, and that it moves claims when registered. */
class HostLoadScorerTest {

    private static Node node(String name, long cpu, long memGiB) {
        return Node.builder(name).gpu(GpuDevice.builder("GPU-" + name).index(0).memoryGiB(16).build())
                .cpuMillis(cpu).hostMemoryGiB(memGiB).build();
    }

    private final Node busy = node("busy", 8000, 64);
    private final Node idle = node("idle", 8000, 64);
    private final Ledger ledger = Ledger.create(List.of(busy, idle));

    {
        // busy: 6 of 8 CPUs held by a host-only tenant; the GPUs of both nodes are empty (same GPU load)
        ledger.reserve(new Placement(Claim.builder("etl").hostOnly().cpuMillis(6000).build(), "busy", List.of()));
    }

    private static Claim claim(String id) {
        return Claim.builder(id).memoryGiB(2).compute(10, 100).cpuMillis(1000).hostMemoryGiB(8).build();
    }

    @Test
    void scoreIsThePolicyTermOfTheHostLoadTheClaimLeaves() {
        Claim c = claim("c");
        // busy: CPU (6000 + 1000) / 8000 = 0.875, memory 8/64 = 0.125 -> 0.875; idle: max(0.125, 0.125)
        assertEquals(0.875, HostLoadScorer.hostLoad(c, ledger.node("busy").orElseThrow()), 1e-12);
        assertEquals(0.125, HostLoadScorer.hostLoad(c, ledger.node("idle").orElseThrow()), 1e-12);
        assertEquals(0.875, HostLoadScorer.binpack().score(c, ledger.node("busy").orElseThrow(), ledger), 1e-12);
        assertEquals(0.125, HostLoadScorer.spread().score(c, ledger.node("busy").orElseThrow(), ledger), 1e-12);
        assertEquals(0.5, HostLoadScorer.spread().score(c, io.qgpu.api.NodeState.empty(Node.builder("u").build()), ledger));
        assertEquals(1.0, HostLoadScorer.hostLoad(c, io.qgpu.api.NodeState.empty(Node.builder("z").cpuMillis(0).build())));
        assertEquals(HostLoadScorer.spread(), HostLoadScorer.of(PlacementPolicy.SPREAD));
    }

    @Test
    void registeredItMovesTheClaimAndExplainSaysWhy() {
        // without it the built-in node score (GPU load, equal here) leaves the choice to cluster order: busy first
        assertEquals("busy", placed(PlacementEngine.create(ledger).place(claim("plain"))).nodeName());
        ledger.release("plain");
        PlacementEngine spread = PlacementEngine.builder(ledger).nodeScorer(HostLoadScorer.spread(), 1.0).build();
        assertEquals("idle", placed(spread.place(claim("spread"))).nodeName());
        ledger.release("spread");
        PlacementEngine binpack = PlacementEngine.builder(ledger).nodeScorer(HostLoadScorer.binpack(), 1.0).build();
        PlacementExplanation x = binpack.explain(claim("packed"));
        assertEquals("busy", x.chosen().orElseThrow().node());
        String why = x.chosen().orElseThrow().terms().stream().filter(t -> t.scorer().equals("host-binpack")).findFirst()
                .orElseThrow().why();
        assertTrue(why.contains("host load 0.875 after the claim (CPU 0.875, host memory 0.125); binpack"), why);
    }

    private static Placement placed(PlacementResult r) {
        return ((PlacementResult.Placed) r).placement();
    }
}
