package io.qgpu.kubernetes.deviceplugin;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerPreferredAllocationRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DevicePluginGrpc;
import io.qgpu.kubernetes.deviceplugin.v1beta1.PreferredAllocationRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.RegisterRequest;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Eight kubelet connections allocate all 128 ids of a dgx-h100 at once, one id per call, while a
 * ninth asks for preferred allocations: every allocation is kept, each id on its home GPU, and the
 * state file holds exactly what the pool holds.
 *
 * <p>This end-to-end run (gRPC threads, fsync per save) overlaps the pool's critical sections too
 * little to catch a missing lock: with {@code synchronized} removed from
 * {@code VirtualDevicePool.allocate} it passed 5 of 5 runs. {@link PoolContentionTest} is the one
 * that catches that bug (5 of 5 runs).
 */
class ContentionTest extends PluginTestBase {

    @Test
    void concurrentAllocationsAreAllKeptAndSaved() throws Exception {
        DevicePlugin plugin = start("dgx-h100");
        RegisterRequest r = kubelet.awaitRegistration();
        List<String> ids = plugin.pool().devices().stream().map(VirtualDevice::id).toList();
        assertEquals(128, ids.size());
        int threads = 8;
        ExecutorService pool = Executors.newFixedThreadPool(threads + 1);
        CountDownLatch go = new CountDownLatch(1);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int me = t;
                DevicePluginGrpc.DevicePluginBlockingStub stub = stub(r);
                futures.add(pool.submit(() -> {
                    go.await();
                    for (int i = me; i < ids.size(); i += threads) {
                        RestartTest.allocate(stub, ids.get(i));
                    }
                    return null;
                }));
            }
            DevicePluginGrpc.DevicePluginBlockingStub asker = stub(r);
            futures.add(pool.submit(() -> {
                go.await();
                for (int i = 0; i < 50; i++) {
                    asker.getPreferredAllocation(PreferredAllocationRequest.newBuilder().addContainerRequests(
                            ContainerPreferredAllocationRequest.newBuilder().addAllAvailableDeviceIDs(ids)
                                    .setAllocationSize(2)).build());
                }
                return null;
            }));
            go.countDown();
            for (Future<?> f : futures) {
                f.get(FakeKubelet.TIMEOUT_SECONDS, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        List<Allocation> held = plugin.pool().allocations();
        assertEquals(128, held.size());
        assertEquals(new HashSet<>(ids), held.stream().flatMap(a -> a.deviceIds().stream()).collect(Collectors.toSet()));
        for (Allocation a : held) {
            String id = a.deviceIds().get(0);
            assertEquals(VirtualDevice.homeOf(id), a.gpuOf().get(id), id);
        }
        Map<String, Long> perGpu = held.stream().collect(Collectors.groupingBy(a -> a.gpus().get(0), Collectors.counting()));
        assertEquals(8, perGpu.size());
        perGpu.values().forEach(n -> assertEquals(16L, n));
        List<Allocation> saved = new StateFile(state).load("node-a").orElseThrow();
        assertEquals(new HashSet<>(held), new HashSet<>(saved));
        assertEquals(held.size(), saved.size());
    }
}
