package io.qgpu.core.gate;

import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.core.gate.internal.GateInternals;
import io.qgpu.api.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The thread-safety claims of Gate, Lease, GateRegistry and ManualGateTimer, under contention. */
@Timeout(60) // a hang guard only; no test depends on wall time for its verdict
class GateContentionTest {

    private static Gate realGate(String gpu) {
        return Gate.create(gpu, GateConfig.custom().usageReportInterval(Duration.ZERO).build());
    }

    private static void runAll(int threads, ThrowingRunnable body) throws Exception {
        CyclicBarrier start = new CyclicBarrier(threads);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> ts = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(() -> {
                try {
                    start.await();
                    body.run();
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "contender-" + i);
            ts.add(t);
            t.start();
        }
        for (Thread t : ts) {
            t.join();
        }
        if (failure.get() != null) {
            throw new AssertionError(failure.get());
        }
    }

    interface ThrowingRunnable {
        void run() throws Exception;
    }

    @Test
    void fastPathUnderContentionKeepsExactCountsAndSaneUsage() throws Exception {
        try (Gate gate = realGate("GPU-c1")) {
            Tenant train = gate.register(GateTenantSpec.offline("train").build());
            gate.acquire(train).close();                    // the tenant now holds the token
            long t0 = System.nanoTime();
            runAll(8, () -> {
                for (int i = 0; i < 20_000; i++) {
                    try (Lease l = gate.acquire(train)) {
                        if ((i & 1023) == 0) {
                            l.checkpoint();
                        }
                    }
                }
            });
            long elapsed = System.nanoTime() - t0;
            TenantUsage u = gate.usage(train);
            assertEquals(0, u.openLeases());
            assertEquals(0, gate.waitingAcquires());
            assertTrue(u.totalLeaseNanos() <= elapsed, "busy " + u.totalLeaseNanos() + " > elapsed " + elapsed);
            assertTrue(u.usageNanos() <= u.windowNanos());
            assertEquals(List.of(), gate.preemptionState().invariantViolations());
        }
    }

    @Test
    void theFastPathTakesNoLock() throws Exception {
        try (Gate gate = realGate("GPU-c2")) {
            Tenant train = gate.register(GateTenantSpec.offline("train").build());
            Tenant chat = gate.register(GateTenantSpec.online("chat").build());
            gate.acquire(train).close();
            CountDownLatch locked = new CountDownLatch(1);
            CountDownLatch done = new CountDownLatch(1);
            Thread holder = new Thread(() -> {
                GateInternals.lock(gate).lock();
                try {
                    locked.countDown();
                    done.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    GateInternals.lock(gate).unlock();
                }
            }, "lock-holder");
            holder.start();
            locked.await();
            try {
                for (int i = 0; i < 1_000; i++) {       // would block forever if it needed the lock
                    try (Lease l = gate.acquire(train)) {
                        l.checkpoint();
                    }
                }
            } finally {
                done.countDown();
                holder.join();
            }
            gate.acquire(chat).close();
            gate.acquire(chat).close();
        }
    }

    @Test
    void concurrentClosesOfOneLeaseReleaseItOnce() throws Exception {
        try (Gate gate = realGate("GPU-c3")) {
            Tenant chat = gate.register(GateTenantSpec.online("chat").build());
            AtomicInteger releases = new AtomicInteger();
            gate.addListener(e -> {
                if (e instanceof GateEvent.LeaseReleased) {
                    releases.incrementAndGet();
                }
            });
            for (int round = 0; round < 200; round++) {
                Lease l = gate.acquire(chat);
                Lease other = gate.acquire(chat);
                runAll(4, l::close);
                assertEquals(1, gate.usage(chat).runningLeases());
                other.close();
                assertEquals(0, gate.openLeases());
            }
            assertEquals(400, releases.get());
        }
    }

    @Test
    void asyncGrantsRacingWithCancellationLeaveNoLease() throws Exception {
        try (Gate gate = Gate.create("GPU-c4", GateConfig.custom().releaseDelay(Duration.ZERO)
                .usageReportInterval(Duration.ZERO).build())) {
            Tenant chat = gate.register(GateTenantSpec.online("chat").build());
            Tenant train = gate.register(GateTenantSpec.offline("train").build());
            for (int round = 0; round < 300; round++) {
                Lease on = gate.acquire(chat);
                CompletableFuture<Lease> f = gate.acquireAsync(train);
                CyclicBarrier b = new CyclicBarrier(2);
                Thread canceller = new Thread(() -> {
                    try {
                        b.await();
                    } catch (Exception e) {
                        throw new AssertionError(e);
                    }
                    f.cancel(false);
                });
                canceller.start();
                b.await();
                on.close();                              // grants train's future, racing the cancel
                canceller.join();
                if (!f.isCancelled()) {
                    f.join().close();
                }
                Await.until("settled", () -> gate.openLeases() == 0 && gate.waitingAcquires() == 0);
            }
            assertEquals(0, GateInternals.waiterCount(gate));
        }
    }

    @Test
    void registryCreatesOneGatePerGpuUnderContention() throws Exception {
        try (GateRegistry r = GateRegistry.create(GateConfig.custom().usageReportInterval(Duration.ZERO).build())) {
            Set<Gate> seen = ConcurrentHashMap.newKeySet();
            runAll(8, () -> {
                for (int i = 0; i < 100; i++) {
                    seen.add(r.gate("GPU-" + (i % 3)));
                }
            });
            assertEquals(3, seen.size());
        }
    }

    @Test
    void manualTimerAcceptsTasksFromManyThreads() throws Exception {
        long[] now = {0};
        Ticker ticker = () -> now[0];
        ManualGateTimer timer = new ManualGateTimer(ticker);
        AtomicInteger ran = new AtomicInteger();
        runAll(8, () -> {
            for (int i = 0; i < 1_000; i++) {
                GateTimer.Task t = timer.schedule(i, ran::incrementAndGet);
                if (i % 10 == 0) {
                    t.cancel();
                }
            }
        });
        assertEquals(7_200, timer.pending());
        now[0] = 1_000;
        assertEquals(7_200, timer.runDue());
        assertEquals(7_200, ran.get());
    }
}
