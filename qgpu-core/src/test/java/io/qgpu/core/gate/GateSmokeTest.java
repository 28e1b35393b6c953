package io.qgpu.core.gate;

import static io.qgpu.core.gate.FakeClock.MS;
import static io.qgpu.core.gate.FakeClock.S;
import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.core.preempt.GpuMode;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60) // a hang guard only; no test depends on wall time for its verdict
class GateSmokeTest {

    @Test
    void onlineAndOfflineBasics() throws Exception {
        FakeClock clock = new FakeClock(1_000 * S);
        Gate gate = Gate.create("GPU-1", clock.config().build());
        Tenant chat = gate.register(GateTenantSpec.online("chat").build());
        Tenant train = gate.register(GateTenantSpec.offline("train").build());

        Lease off = gate.acquire(train);
        assertEquals(GpuMode.OFFLINE, gate.mode());
        clock.advance(10 * MS);
        off.checkpoint();
        CompletableFuture<Lease> on = gate.acquireAsync(chat);
        assertFalse(on.isDone());
        assertEquals(GpuMode.PREEMPTING, gate.mode());
        assertTrue(off.shouldYield());
        clock.advance(100_000);
        Thread worker = new Thread(() -> {
            try {
                off.checkpoint();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "offline-worker");
        java.util.concurrent.atomic.AtomicReference<Throwable> err = new java.util.concurrent.atomic.AtomicReference<>();
        worker.setUncaughtExceptionHandler((th, e) -> err.set(e));
        worker.start();
        Await.until("worker parked or died", () -> !worker.isAlive() || worker.getState() == Thread.State.WAITING);
        if (err.get() != null) {
            throw new AssertionError(err.get());
        }
        assertTrue(on.isDone(), () -> gate.preemptionState() + " usage " + gate.usage() + " worker " + worker.getState());
        assertEquals(GpuMode.ONLINE, gate.mode());
        Lease onLease = on.join();
        clock.advance(5 * MS);
        onLease.close();
        assertEquals(GpuMode.RELEASING, gate.mode());
        clock.advance(100 * MS - 1);
        assertEquals(GpuMode.RELEASING, gate.mode());
        assertTrue(worker.isAlive());
        clock.advance(1);
        assertEquals(GpuMode.OFFLINE, gate.mode());
        worker.join();
        off.close();
        off.close();
        assertEquals(0, gate.openLeases());
        TenantUsage u = gate.usage(train);
        assertEquals(10 * MS + 100_000, u.usageNanos());
        assertEquals(5 * MS, gate.usage(chat).usageNanos());
        gate.close();
    }
}
