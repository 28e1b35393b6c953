package io.qgpu.nvml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.GpuLink;
import io.qgpu.nvml.discovery.NvmlDiscovery;
import io.qgpu.nvml.discovery.NvmlInventory;
import io.qgpu.nvml.internal.FakeNvml;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Many threads open and close sessions and call into the fake library at once: every call gets a
 * right answer or a clean "session closed", and the init reference count ends where it started.
 */
class NvmlContentionTest extends FakeNvmlTestBase {
    private static final int THREADS = 16;
    private static final int ROUNDS = 60;

    @Test
    void concurrentSessionsAndCalls() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        CountDownLatch start = new CountDownLatch(1);
        Set<String> uuids = ConcurrentHashMap.newKeySet();
        List<Future<Integer>> results = new ArrayList<>();
        try (Nvml shared = open()) {
            String expectedName = shared.device(0).name();
            for (int t = 0; t < THREADS; t++) {
                int id = t;
                results.add(pool.submit(() -> {
                    start.await();
                    int calls = 0;
                    for (int r = 0; r < ROUNDS; r++) {
                        // half the threads open their own short sessions, the rest share one
                        Nvml nvml = id % 2 == 0 ? open() : shared;
                        try {
                            int gpu = (id + r) % 8;
                            NvmlDevice d = nvml.device(gpu);
                            uuids.add(d.uuid());
                            assertEquals(expectedName, d.name());
                            assertEquals(gpu, d.index());
                            assertEquals(80L << 30, d.memory().total());
                            assertEquals(18, d.nvLinks().size());
                            assertEquals(gpu < 4 ? 0 : 1, d.numaNode());
                            calls += 6;
                        } finally {
                            if (nvml != shared) {
                                nvml.close();
                            }
                        }
                    }
                    return calls;
                }));
            }
            start.countDown();
            int total = 0;
            for (Future<Integer> f : results) {
                total += f.get(2, TimeUnit.MINUTES);
            }
            assertEquals(THREADS * ROUNDS * 6, total);
            assertEquals(8, uuids.size());
            assertEquals(1, FAKE.fake_nvml_init_count(), "only the shared session is left");
            assertEquals(FAKE.fake_nvml_init_calls() - 1, FAKE.fake_nvml_shutdown_calls(),
                    "every init but the shared one's was shut down");
        } finally {
            pool.shutdownNow();
        }
        assertEquals(0, FAKE.fake_nvml_init_count());
        assertEquals(FAKE.fake_nvml_init_calls(), FAKE.fake_nvml_shutdown_calls());
    }

    /**
     * No session outlives a round, so the reference count crosses zero all the time: a thread whose
     * open raced with another's last close must still find NVML initialized (the fake answers
     * UNINITIALIZED otherwise), and inits and shutdowns must pair up.
     */
    @Test
    void sessionsComingAndGoingNeverSeeAnUninitializedNvml() throws Exception {
        int threads = 8;
        int rounds = 400;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Integer>> results = new ArrayList<>();
        try {
            for (int t = 0; t < threads; t++) {
                results.add(pool.submit(() -> {
                    start.await();
                    int ok = 0;
                    for (int r = 0; r < rounds; r++) {
                        try (Nvml nvml = open()) {
                            assertEquals(8, nvml.deviceCount());
                            ok++;
                        }
                    }
                    return ok;
                }));
            }
            start.countDown();
            for (Future<Integer> f : results) {
                assertEquals(rounds, f.get(2, TimeUnit.MINUTES));
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(0, FAKE.fake_nvml_init_count());
        assertEquals(FAKE.fake_nvml_init_calls(), FAKE.fake_nvml_shutdown_calls());
        assertTrue(FAKE.fake_nvml_init_calls() >= 1);
    }

    @Test
    void closeRacingWithCallsNeverLeaksAnInit() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            for (int round = 0; round < 40; round++) {
                Nvml nvml = open();
                CountDownLatch go = new CountDownLatch(1);
                List<Future<String>> calls = new ArrayList<>();
                for (int t = 0; t < 7; t++) {
                    int gpu = t;
                    calls.add(pool.submit(() -> {
                        go.await();
                        try {
                            return nvml.device(gpu).uuid();
                        } catch (NvmlException e) {
                            assertEquals(NvmlReturn.UNINITIALIZED, e.result(), e.getMessage());
                            return "closed";
                        }
                    }));
                }
                calls.add(pool.submit(() -> {
                    go.await();
                    nvml.close();
                    return "closer";
                }));
                go.countDown();
                for (Future<String> f : calls) {
                    String s = f.get(1, TimeUnit.MINUTES);
                    assertTrue(s.startsWith("GPU-") || s.equals("closed") || s.equals("closer"), s);
                }
                assertEquals(0, FAKE.fake_nvml_init_count());
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void concurrentDiscoveriesAgree() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try (Nvml nvml = Nvml.builder().libraryPath(FakeNvml.path()).open()) {
            NvmlDiscovery discovery = NvmlDiscovery.builder().session(nvml).build();
            List<Future<NvmlInventory>> all = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                all.add(pool.submit(() -> discovery.inventory("n")));
            }
            NvmlInventory first = all.get(0).get(1, TimeUnit.MINUTES);
            assertEquals(new GpuLink.NvLink(18, io.qgpu.api.TopologyLevel.SYSTEM, true), first.link(2, 6));
            for (Future<NvmlInventory> f : all) {
                assertEquals(first, f.get(1, TimeUnit.MINUTES));
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
