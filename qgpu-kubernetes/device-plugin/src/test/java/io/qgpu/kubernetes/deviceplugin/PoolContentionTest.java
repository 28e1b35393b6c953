package io.qgpu.kubernetes.deviceplugin;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.Topology;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementEngine;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The pool under contention, without sockets or disk: per round, eight threads allocate all 128 ids
 * of a 2-GPU node (64 tenants each) one id at a time while a ninth reads the device list and asks for preferred
 * allocations. Every allocation must be kept, on its home GPU, and the last save must hold all.
 *
 * <p>Shown to catch a seeded bug: with {@code synchronized} removed from
 * {@code VirtualDevicePool.allocate} this test failed in 5 of 5 runs at these settings (20 rounds):
 * a NullPointerException in the device list, or an ArrayIndexOutOfBounds from a map resized by two
 * threads at once, answered as INTERNAL.
 */
class PoolContentionTest {
    static final int ROUNDS = 20;
    static final int THREADS = 8;

    /** Keeps the last save in memory. */
    static final class MemoryStore implements AllocationStore {
        volatile List<Allocation> last = List.of();

        @Override
        public void save(String node, List<Allocation> allocations) {
            last = List.copyOf(allocations);
        }

        @Override
        public Optional<List<Allocation>> load(String node) {
            return Optional.of(last);
        }
    }

    static VirtualDevicePool pool(MemoryStore store) {
        List<GpuDevice> gpus = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            gpus.add(GpuDevice.builder("GPU-" + i).index(i).model("H100").memoryBytes(80 * GpuDevice.GIB).numaNode(i).build());
        }
        Node node = new Node("node-a", Map.of(), gpus, Topology.uniform(2, new GpuLink.NvLink(18)));
        // 64 tenants per GPU: 128 ids on two GPUs keeps the engine's share of each call small
        GranularityRules rules = GranularityRules.custom().maxTenantsPerGpu(64).memoryPerTenantSlotBytes(0).build();
        Ledger ledger = Ledger.create(rules, List.of(node));
        PlacementEngine engine = PlacementEngine.builder(ledger).policies(PlacementPolicy.BINPACK, PlacementPolicy.SPREAD).build();
        return new VirtualDevicePool(node, ledger, engine, PodDecisions.none(), store, GpuDevice.GIB);
    }

    @Test
    void concurrentAllocationsAreAllKept() throws Exception {
        ExecutorService exec = Executors.newFixedThreadPool(THREADS + 1);
        try {
            for (int round = 0; round < ROUNDS; round++) {
                MemoryStore store = new MemoryStore();
                VirtualDevicePool pool = pool(store);
                List<String> ids = pool.devices().stream().map(VirtualDevice::id).toList();
                assertEquals(128, ids.size());
                CountDownLatch go = new CountDownLatch(1);
                List<Future<?>> futures = new ArrayList<>();
                for (int t = 0; t < THREADS; t++) {
                    int me = t;
                    futures.add(exec.submit(() -> {
                        go.await();
                        for (int i = me; i < ids.size(); i += THREADS) {
                            pool.allocate(List.of(List.of(ids.get(i))));
                        }
                        return null;
                    }));
                }
                futures.add(exec.submit(() -> {
                    go.await();
                    for (int i = 0; i < 20; i++) {
                        pool.devices();
                        pool.preferred(ids.subList(64, 128), List.of(), 2);
                    }
                    return null;
                }));
                go.countDown();
                for (Future<?> f : futures) {
                    f.get(30, TimeUnit.SECONDS);
                }
                List<Allocation> held = pool.allocations();
                assertEquals(128, held.size(), "round " + round);
                for (Allocation a : held) {
                    String id = a.deviceIds().get(0);
                    assertEquals(VirtualDevice.homeOf(id), a.gpuOf().get(id), "round " + round);
                }
                assertEquals(new HashSet<>(held), new HashSet<>(store.last), "round " + round);
                assertEquals(128, store.last.size(), "round " + round);
            }
        } finally {
            exec.shutdownNow();
        }
    }
}
