package io.qgpu.core.ledger.internal;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GpuState;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Holding;
import io.qgpu.api.HostHolding;
import io.qgpu.api.HostState;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.Slice;
import io.qgpu.api.TopologyLevel;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.ReserveResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;

/**
 * Threads reserve and release claims with host resources (host-only claims and GPU claims asking for
 * CPU and host memory) on two small nodes whose CPU and host memory run out long before their GPUs,
 * while a watcher checks every node state it can see: the CPU and host memory reserved never exceed
 * what the node declares, and at the end each node holds exactly the host resources of the tenants
 * still reserved.
 *
 * <p>The same harness runs against a deliberately broken variant ({@link #brokenReserve}: the unfixed
 * path that checks the host resources on a node state read before, then installs the reservation
 * without re-validating it against the state it replaces). At the budget below the harness catches it:
 * {@link #theHarnessCatchesAReservationThatDoesNotRevalidate} caught it in the first round (of 20 allowed)
 * in each of 10 runs when it was written, on a 2-core machine shared with other builds.
 */
class HostContentionTest {

    private static final int THREADS = 4;
    private static final int OPS = 3_000;
    private static final long GIB = GpuDevice.GIB;

    private static Node node(String name) {
        Node.Builder b = Node.builder(name).defaultLink(new GpuLink.Pcie(TopologyLevel.HOSTBRIDGE))
                .cpuMillis(4000).hostMemoryGiB(8);
        for (int i = 0; i < 2; i++) {
            b.gpu(GpuDevice.builder(name + "-g" + i).index(i).model("Tesla T4").memoryGiB(16).build());
        }
        return b.build();
    }

    /** What the harness drives. */
    interface Target {
        ReserveResult reserve(Placement p);

        Optional<Placement> release(String tenantId);

        List<NodeState> nodes();
    }

    private static Target ledger(List<Node> nodes) {
        Ledger l = Ledger.create(nodes);
        return new Target() {
            public ReserveResult reserve(Placement p) {
                return l.reserve(p);
            }

            public Optional<Placement> release(String id) {
                return l.release(id);
            }

            public List<NodeState> nodes() {
                return l.nodes();
            }
        };
    }

    /** The deliberately broken variant: the real tenant table, but no re-validation at the commit. */
    private static Target broken(List<Node> nodes) {
        Structure s = SnapshotReplay.build(GranularityRules.ofDefaults(), nodes, List.of()).orThrow("test");
        return new Target() {
            public ReserveResult reserve(Placement p) {
                return s.tenants().reserve(p, q -> brokenReserve(s, q));
            }

            public Optional<Placement> release(String id) {
                return Reservations.release(s, id);
            }

            public List<NodeState> nodes() {
                return s.nodeStates();
            }
        };
    }

    /** Checks against the state read first, then blindly adds the holdings to whatever the node has now. */
    private static ReserveResult brokenReserve(Structure s, Placement p) {
        NodeSlot slot = s.slot(p.nodeName());
        NodeState seen = slot.get();
        if (Admission.reserve(seen, p, s.rules()) instanceof Admission.Rejected r) {
            return new ReserveResult.Refused(p.tenantId(), r.reasons());
        }
        Thread.yield();
        slot.update(cur -> {
            List<GpuState> gpus = new ArrayList<>(cur.gpus());
            for (Slice sl : p.slices()) {
                int pos = cur.node().positionOf(sl.gpuUuid());
                gpus.set(pos, gpus.get(pos).with(Holding.of(p, sl)));
            }
            return new NodeState(cur.node(), gpus, cur.host().with(HostHolding.of(p)));
        });
        return new ReserveResult.Reserved(p);
    }

    private static Placement randomPlacement(SplittableRandom rnd, List<Node> nodes, String id) {
        Node n = nodes.get(rnd.nextInt(nodes.size()));
        long cpu = 250L * (1 + rnd.nextInt(6));
        long mem = GIB * rnd.nextInt(3);
        if (rnd.nextBoolean()) {
            return new Placement(Claim.builder(id).hostOnly().cpuMillis(cpu).hostMemoryBytes(mem).build(), n.name(), List.of());
        }
        Claim c = Claim.builder(id).memoryGiB(1).compute(0, 100).cpuMillis(cpu).hostMemoryBytes(mem).build();
        GpuDevice g = n.gpus().get(rnd.nextInt(2));
        return new Placement(c, n.name(), List.of(new Slice(g.uuid(), GIB, 0, 100)));
    }

    /** The first host oversubscription or wrong end state seen, or null. */
    private static String run(Supplier<Target> make, long seed) throws Exception {
        List<Node> nodes = List.of(node("a"), node("b"));
        Target target = make.get();
        Map<String, Placement> held = new ConcurrentHashMap<>();
        CyclicBarrier start = new CyclicBarrier(THREADS + 1);
        CountDownLatch done = new CountDownLatch(THREADS);
        AtomicReference<String> violation = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicBoolean running = new AtomicBoolean(true);
        Thread watcher = new Thread(() -> {
            while (running.get() && violation.get() == null) {
                for (NodeState n : target.nodes()) {
                    String bad = oversubscribed(n);
                    if (bad != null) {
                        violation.compareAndSet(null, bad);
                    }
                }
            }
        });
        watcher.start();
        for (int t = 0; t < THREADS; t++) {
            int id = t;
            new Thread(() -> {
                SplittableRandom rnd = new SplittableRandom(seed * 31 + id);
                List<String> mine = new ArrayList<>();
                try {
                    start.await();
                    for (int i = 0; i < OPS && violation.get() == null; i++) {
                        if (!mine.isEmpty() && rnd.nextInt(3) == 0) {
                            String victim = mine.remove(rnd.nextInt(mine.size()));
                            held.remove(victim);
                            target.release(victim).orElseThrow(() -> new AssertionError("lost " + victim));
                        } else {
                            Placement p = randomPlacement(rnd, nodes, "w" + id + "-" + i);
                            if (target.reserve(p).reserved()) {
                                mine.add(p.tenantId());
                                held.put(p.tenantId(), p);
                            }
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                } finally {
                    done.countDown();
                }
            }).start();
        }
        start.await();
        done.await();
        running.set(false);
        watcher.join();
        if (failure.get() != null) {
            throw new AssertionError(failure.get());
        }
        if (violation.get() != null) {
            return violation.get();
        }
        for (NodeState n : target.nodes()) {
            String bad = oversubscribed(n);
            if (bad != null) {
                return bad;
            }
            long cpu = held.values().stream().filter(p -> p.nodeName().equals(n.name()))
                    .mapToLong(p -> p.claim().host().cpuMillis()).sum();
            long mem = held.values().stream().filter(p -> p.nodeName().equals(n.name()))
                    .mapToLong(p -> p.claim().host().memoryBytes()).sum();
            if (cpu != n.host().cpuMillisUsed() || mem != n.host().memoryBytesUsed()) {
                return n.name() + " holds " + n.host() + ", the tenants reserved there ask for " + cpu + "m, " + mem + " B";
            }
        }
        return null;
    }

    /** An independent check of one node state's host resources, from its holdings. */
    private static String oversubscribed(NodeState n) {
        HostState h = n.host();
        long cpu = h.holdings().stream().mapToLong(HostHolding::cpuMillis).sum();
        long mem = h.holdings().stream().mapToLong(HostHolding::memoryBytes).sum();
        long cpuCap = n.node().host().cpuMillis().getAsLong();
        long memCap = n.node().host().memoryBytes().getAsLong();
        if (cpu > cpuCap || mem > memCap) {
            return n.name() + " oversubscribed: cpu " + cpu + "/" + cpuCap + "m, host memory " + mem + "/" + memCap + " B";
        }
        return null;
    }

    @RepeatedTest(3)
    void theLedgerNeverOversubscribesHostResources() throws Exception {
        assertNull(run(() -> ledger(List.of(node("a"), node("b"))), 7));
    }

    @Test
    void theHarnessCatchesAReservationThatDoesNotRevalidate() throws Exception {
        String caught = null;
        int rounds = 0;
        while (caught == null && rounds < 20) {
            caught = run(() -> broken(List.of(node("a"), node("b"))), 100 + rounds);
            rounds++;
        }
        assertNotNull(caught, "the broken variant went unnoticed in " + rounds + " rounds");
    }
}
