package io.qgpu.testkit.property;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuLink;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Slice;
import io.qgpu.api.Validate;
import io.qgpu.testkit.invariants.SchedulerUnderTest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.Function;

/**
 * A seeded stream of mixed 1-, 2-, 4- and 8-GPU claims with releases, for judging how well a
 * scheduler keeps well-connected GPU sets available over time: it counts how many of the
 * multi-GPU claims it places get a fully NVLink-connected set (every pair of the set NVLink).
 *
 * <p>The stream, for one seed: {@code steps} events; while more than {@code 3/4} of the cluster's
 * GPUs are held, an event is a release with probability 0.7 (else 0.3); a release frees a held
 * tenant chosen uniformly; an arrival asks for 1, 2, 4 or 8 whole GPUs (exclusive) with
 * probabilities 0.4, 0.3, 0.2, 0.1, and a third of the one-GPU arrivals are instead shared
 * slices (8 GiB, compute 20/100). The same seed gives the same stream of claims for every
 * scheduler (releases pick among the tenants that scheduler holds, so streams diverge only as the
 * schedulers' choices do).
 *
 * <pre>{@code
 * TopologyStream.Counts c = TopologyStream.run(nodes -> myAdapter(nodes), cluster, 42, 2000);
 * c.nvlinkedMulti();   // multi-GPU claims placed on a fully NVLinked set
 * }</pre>
 *
 * <p>Thread safety: stateless; each run uses its own scheduler.
 */
public final class TopologyStream {

    private TopologyStream() {
    }

    /**
     * What one run saw.
     *
     * @param arrivals       claims offered
     * @param placed         claims placed
     * @param placedMulti    multi-GPU claims placed
     * @param nvlinkedMulti  multi-GPU claims placed on a set whose every pair is NVLink
     */
    public record Counts(int arrivals, int placed, int placedMulti, int nvlinkedMulti) {
        /** The sum of two runs. */
        public Counts plus(Counts o) {
            return new Counts(arrivals + o.arrivals, placed + o.placed, placedMulti + o.placedMulti,
                    nvlinkedMulti + o.nvlinkedMulti);
        }
    }

    /** Runs the stream of {@code seed} for {@code steps} events on a fresh scheduler over {@code nodes}. */
    public static Counts run(Function<List<Node>, SchedulerUnderTest> factory, List<Node> nodes, long seed, int steps) {
        Validate.notNull("topologyStream.factory", factory);
        Validate.list("topologyStream.nodes", nodes);
        Validate.atLeast("topologyStream.steps", steps, 1);
        SchedulerUnderTest s = factory.apply(nodes);
        Map<String, Node> byName = new HashMap<>();
        int capacity = 0;
        for (Node n : nodes) {
            byName.put(n.name(), n);
            capacity += n.gpus().size();
        }
        SplittableRandom claims = new SplittableRandom(seed);
        SplittableRandom releases = new SplittableRandom(seed ^ 0x5DEECE66DL);
        List<Held> held = new ArrayList<>();
        int heldGpus = 0;
        int arrivals = 0;
        int placed = 0;
        int placedMulti = 0;
        int nvlinked = 0;
        for (int step = 0; step < steps; step++) {
            double pRelease = heldGpus * 4 > capacity * 3 ? 0.7 : 0.3;
            if (!held.isEmpty() && releases.nextDouble() < pRelease) {
                Held t = held.remove(releases.nextInt(held.size()));
                s.release(t.tenant());
                heldGpus -= t.gpus();
                continue;
            }
            Claim c = nextClaim(claims, "t" + step);
            arrivals++;
            PlacementResult r = s.place(c);
            if (!(r instanceof PlacementResult.Placed p)) {
                continue;
            }
            placed++;
            held.add(new Held(c.tenantId(), c.gpuCount()));
            heldGpus += c.gpuCount();
            if (c.gpuCount() > 1) {
                placedMulti++;
                Node node = byName.get(p.placement().nodeName());
                if (node == null) {
                    throw new IllegalStateException("the scheduler placed " + c.tenantId() + " on node "
                            + p.placement().nodeName() + ", which is not in the cluster");
                }
                if (fullyNvLinked(node, p.placement())) {
                    nvlinked++;
                }
            }
        }
        return new Counts(arrivals, placed, placedMulti, nvlinked);
    }

    /** Runs seeds {@code first .. first + count - 1} and adds their counts. */
    public static Counts runSeeds(Function<List<Node>, SchedulerUnderTest> factory, List<Node> nodes, long first,
                                  int count, int steps) {
        Counts sum = new Counts(0, 0, 0, 0);
        for (int i = 0; i < count; i++) {
            sum = sum.plus(run(factory, nodes, first + i, steps));
        }
        return sum;
    }

    /** A tenant the scheduler holds, and how many GPUs it asked for. */
    private record Held(String tenant, int gpus) {
    }

    private static Claim nextClaim(SplittableRandom r, String tenant) {
        double u = r.nextDouble();
        int gpus = u < 0.4 ? 1 : u < 0.7 ? 2 : u < 0.9 ? 4 : 8;
        boolean shared = gpus == 1 && r.nextInt(3) == 0;
        Claim.Builder b = Claim.builder(tenant).gpus(gpus).priority(PriorityClass.OFFLINE);
        return shared ? b.memoryGiB(8).compute(20, 100).build() : b.exclusive().build();
    }

    /** Whether every pair of the placement's GPUs is NVLink on {@code node}. */
    public static boolean fullyNvLinked(Node node, Placement p) {
        List<Slice> slices = p.slices();
        for (int a = 0; a < slices.size(); a++) {
            for (int b = a + 1; b < slices.size(); b++) {
                GpuLink l = node.topology().link(node.positionOf(slices.get(a).gpuUuid()),
                        node.positionOf(slices.get(b).gpuUuid()));
                if (!(l instanceof GpuLink.NvLink)) {
                    return false;
                }
            }
        }
        return true;
    }
}
