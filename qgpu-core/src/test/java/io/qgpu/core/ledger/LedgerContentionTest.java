package io.qgpu.core.ledger;

import static io.qgpu.core.ledger.Fixtures.t4Node;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuState;
import io.qgpu.api.Holding;
import io.qgpu.api.Locality;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.RepeatedTest;

/**
 * Many threads reserve and release on a few small nodes (so they collide), while a watcher checks
 * every node state it can see. No oversubscription at any point; the end state equals what the
 * successful operations add up to.
 */
class LedgerContentionTest {

    private static final int THREADS = 8;
    private static final int OPS = 4_000;

    @RepeatedTest(3)
    void neverOversubscribesAndEndsWhereTheSuccessfulOperationsLead() throws Exception {
        List<Node> nodes = List.of(t4Node("a", 2), t4Node("b", 2));
        Ledger ledger = Ledger.create(nodes);
        Map<String, Placement> held = new ConcurrentHashMap<>();
        CyclicBarrier start = new CyclicBarrier(THREADS + 1);
        CountDownLatch done = new CountDownLatch(THREADS);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicBoolean running = new AtomicBoolean(true);

        Thread watcher = new Thread(() -> {
            while (running.get()) {
                for (NodeState n : ledger.nodes()) {
                    String bad = violation(n, ledger);
                    if (bad != null) {
                        failure.compareAndSet(null, new AssertionError(bad));
                    }
                }
            }
        });
        watcher.start();
        for (int t = 0; t < THREADS; t++) {
            int id = t;
            Thread worker = new Thread(() -> {
                SplittableRandom rnd = new SplittableRandom(42L * (id + 1));
                List<String> mine = new ArrayList<>();
                try {
                    start.await();
                    for (int i = 0; i < OPS; i++) {
                        if (!mine.isEmpty() && rnd.nextInt(3) == 0) {
                            String victim = mine.remove(rnd.nextInt(mine.size()));
                            Placement p = ledger.release(victim).orElseThrow(() -> new AssertionError("lost " + victim));
                            held.remove(victim, p);
                            // a second release is a no-op
                            if (ledger.release(victim).isPresent()) {
                                throw new AssertionError("double release of " + victim);
                            }
                        } else {
                            Placement p = randomPlacement(rnd, nodes, "w" + id + "-" + i, id);
                            if (ledger.reserve(p).reserved()) {
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
            });
            worker.start();
        }
        start.await();
        done.await();
        running.set(false);
        watcher.join();
        if (failure.get() != null) {
            fail(failure.get());
        }
        // the final state is exactly the replay of what is still held
        assertEquals(held.size(), ledger.size());
        Ledger replay = Ledger.create(nodes);
        held.values().stream().sorted((x, y) -> x.tenantId().compareTo(y.tenantId()))
                .forEach(p -> assertTrue(replay.reserve(p).reserved(), "replay of " + p.tenantId()));
        assertEquals(replay.snapshot(), ledger.snapshot());
        for (NodeState n : ledger.nodes()) {
            Map<String, Long> mem = new HashMap<>();
            for (Placement p : held.values()) {
                if (p.nodeName().equals(n.name())) {
                    p.slices().forEach(s -> mem.merge(s.gpuUuid(), s.memoryBytes(), Long::sum));
                }
            }
            for (GpuState g : n.gpus()) {
                assertEquals(mem.getOrDefault(g.uuid(), 0L), g.memoryUsed(), g.uuid());
            }
        }
    }

    private static Placement randomPlacement(SplittableRandom rnd, List<Node> nodes, String id, int thread) {
        Node node = nodes.get(rnd.nextInt(nodes.size()));
        int gpus = 1 + rnd.nextInt(2);
        int req = 5 * rnd.nextInt(11);
        Claim.Builder b = Claim.builder(id).gpus(gpus).memoryGiB(1 + rnd.nextInt(6)).compute(req, Math.max(req, 5) + 5 * rnd.nextInt(3))
                .priority(rnd.nextBoolean() ? PriorityClass.ONLINE : PriorityClass.OFFLINE);
        if (rnd.nextInt(8) == 0) {
            b.locality(Locality.none().withAntiAffinity("anti" + rnd.nextInt(2)));
        } else if (rnd.nextInt(8) == 0) {
            b.locality(Locality.none().withAffinity("aff" + thread));
        }
        Claim c = b.build();
        int first = rnd.nextInt(node.gpus().size() - gpus + 1);
        int[] pos = new int[gpus];
        for (int i = 0; i < gpus; i++) {
            pos[i] = first + i;
        }
        return Fixtures.on(c, node, pos);
    }

    /** An independent check of one node state: capacity, tenants and anti-affinity. */
    private static String violation(NodeState n, Ledger ledger) {
        for (GpuState g : n.gpus()) {
            long mem = 0;
            int on = 0;
            int off = 0;
            java.util.Set<String> anti = new java.util.HashSet<>();
            for (Holding h : g.holdings()) {
                mem += h.memoryBytes();
                if (h.priority() == PriorityClass.ONLINE) {
                    on += h.computeRequest();
                } else {
                    off += h.computeRequest();
                }
                if (h.locality().antiAffinity().isPresent() && !anti.add(h.locality().antiAffinity().get())) {
                    return g.uuid() + " anti-affinity broken";
                }
            }
            if (mem > g.device().memoryBytes()) {
                return g.uuid() + " memory " + mem;
            }
            if (on > 100 || off > 100) {
                return g.uuid() + " compute " + on + "/" + off;
            }
            if (g.tenants() > ledger.rules().maxTenants(g.device())) {
                return g.uuid() + " tenants " + g.tenants();
            }
        }
        return null;
    }
}
