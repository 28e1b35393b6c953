package io.qgpu.benchmarks;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Slice;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.ReserveResult;
import io.qgpu.core.placement.PlacementEngine;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A full cluster and its backlog, for the refusal and retry benchmarks: {@code nodes} x 8 GPUs of
 * the scheduling pass's cluster (half DGX-1V, half DGX H100), filled by a seeded stream, and the
 * claims of {@link SchedulingPassBenchmark#claims}'s mix that no longer fit.
 *
 * <p>Fill ({@link #fill}): 20% of the nodes are held whole (every GPU exclusively); on each GPU of the
 * others, shared 1-GPU slices of 1..8 GiB and 0..20% guaranteed compute (online or offline) are
 * reserved until the first one that does not fit. Then claims of the mix (seed {@code seed}, tenant
 * ids {@code pending-0, ...}) are placed by the engine, in order, until {@code pending} of them were
 * refused: those are the backlog; the ones that fitted stay placed and fill the cluster further.
 */
final class FullCluster {
    final List<Node> nodes;
    final Ledger ledger;
    final PlacementEngine engine;
    /** The refused claims, in submission order. */
    final List<Claim> pending;
    /** Tenants holding room (fill and placed claims), in the order they were reserved. */
    final List<String> holders;

    private FullCluster(List<Node> nodes, Ledger ledger, PlacementEngine engine, List<Claim> pending, List<String> holders) {
        this.nodes = nodes;
        this.ledger = ledger;
        this.engine = engine;
        this.pending = pending;
        this.holders = holders;
    }

    static FullCluster build(int nodeCount, int pendingCount, long seed) {
        List<Node> nodes = SchedulingPassBenchmark.cluster(nodeCount);
        Ledger ledger = Ledger.create(GranularityRules.ofDefaults(), nodes);
        List<String> holders = new ArrayList<>();
        fill(ledger, nodes, new SplittableRandom(seed), holders);
        PlacementEngine engine = PlacementEngine.create(ledger);
        List<Claim> pending = new ArrayList<>(pendingCount);
        SplittableRandom rnd = new SplittableRandom(seed + 1);
        for (int i = 0; pending.size() < pendingCount; i++) {
            Claim c = SchedulingPassBenchmark.claim(rnd, "pending-" + i);
            if (engine.place(c) instanceof PlacementResult.Placed) {
                holders.add(c.tenantId());
            } else {
                pending.add(c);
            }
            if (i > 50 * pendingCount + 1_000_000) {
                throw new IllegalStateException("the cluster does not fill up: " + pending.size() + " refused of " + i);
            }
        }
        return new FullCluster(nodes, ledger, engine, pending, holders);
    }

    private static void fill(Ledger ledger, List<Node> nodes, SplittableRandom rnd, List<String> holders) {
        int t = 0;
        for (Node n : nodes) {
            boolean whole = rnd.nextInt(10) < 2;
            for (GpuDevice g : n.gpus()) {
                if (whole) {
                    Claim c = Claim.builder("fill-" + t++).exclusive().build();
                    ledger.reserve(new Placement(c, n.name(), List.of(new Slice(g.uuid(), g.memoryBytes(), 100, 100))));
                    holders.add(c.tenantId());
                    continue;
                }
                while (true) {
                    long gib = 1 + rnd.nextInt(8);
                    int req = 5 * rnd.nextInt(5);
                    Claim c = Claim.builder("fill-" + t++).memoryGiB(gib).compute(req, 100)
                            .priority(rnd.nextBoolean() ? PriorityClass.ONLINE : PriorityClass.OFFLINE).build();
                    ReserveResult r = ledger.reserve(new Placement(c, n.name(),
                            List.of(new Slice(g.uuid(), gib * GpuDevice.GIB, req, 100))));
                    if (!(r instanceof ReserveResult.Reserved)) {
                        break;
                    }
                    holders.add(c.tenantId());
                }
            }
        }
    }
}
