package io.qgpu.core.gate;

import static io.qgpu.core.gate.FakeClock.MS;
import static io.qgpu.core.gate.FakeClock.S;
import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.core.gate.internal.GateInternals;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The gate's own books after each path that changes them: the count of waiters (blocked acquires
 * plus parked leases), open and parked leases, and the timer work left behind. Every path must
 * leave them exactly as the public snapshots say.
 */
@Timeout(60) // a hang guard only; no test depends on wall time for its verdict
class GateBooksTest {

    private static final long T0 = 7 * S;
    private FakeClock clock;
    private Gate gate;
    private Tenant chat;
    private Tenant train;

    @BeforeEach
    void setUp() {
        clock = new FakeClock(T0);
        gate = Gate.create("GPU-b", clock.config().usageReportInterval(Duration.ofMillis(10))
                .deadOwnerTimeout(Duration.ofMillis(500)).build());
        chat = gate.register(GateTenantSpec.online("chat").build());
        train = gate.register(GateTenantSpec.offline("train").build());
    }

    private void assertBooks(int open, int waiting, int waiterCount) {
        assertEquals(open, gate.openLeases(), "open leases");
        assertEquals(waiting, gate.waitingAcquires(), "waiting acquires");
        assertEquals(waiterCount, GateInternals.waiterCount(gate), "waiters (blocked acquires + parked leases)");
    }

    @Test
    void closingAParkedLeaseFailsItsCheckpointAndSettlesTheBooks() {
        Lease off = gate.acquireAsync(train).join();
        CompletableFuture<Lease> on = gate.acquireAsync(chat);
        CompletableFuture<Lease> resumed = off.checkpointAsync();
        assertBooks(2, 0, 1);
        assertEquals(1, gate.usage(train).parkedLeases());
        off.close();
        GateStateException e = assertInstanceOf(GateStateException.class,
                assertThrows(CompletionException.class, resumed::join).getCause());
        assertTrue(e.getMessage().contains("closed while waiting to resume"), e.getMessage());
        assertBooks(1, 0, 0);
        assertEquals(0, gate.usage(train).parkedLeases());
        off.close();
        assertBooks(1, 0, 0);
        on.join().close();
        assertBooks(0, 0, 0);
        clock.advance(S);
        assertEquals(0, train.runningLeases());
    }

    @Test
    void aForeignCloseOfARunningLeaseCountsOnce() throws Exception {
        Lease off = gate.acquire(train);
        Thread closer = new Thread(off::close, "closer");
        closer.start();
        closer.join();
        assertBooks(0, 0, 0);
        assertTrue(off.isClosed());
        Lease again = gate.acquire(train);          // the tenant is not held off by a stale count
        assertEquals(1, train.runningLeases());
        again.close();
        assertBooks(0, 0, 0);
    }

    @Test
    void waitersThatGiveUpLeaveNoCount() {
        Lease on = gate.acquireAsync(chat).join();
        CompletableFuture<Lease> cancelled = gate.acquireAsync(train);
        CompletableFuture<Lease> timed = gate.acquireAsync(train, Duration.ofMillis(30));
        assertBooks(1, 2, 2);
        cancelled.cancel(false);
        assertBooks(1, 1, 1);
        clock.advance(30 * MS);
        assertInstanceOf(GateTimeoutException.class, assertThrows(CompletionException.class, timed::join).getCause());
        assertBooks(1, 0, 0);
        assertTrue(gate.tryAcquire(train).isEmpty(), "online runs: offline may not start");
        assertBooks(1, 0, 0);
        on.close();
        clock.advance(S);
        Lease t = gate.tryAcquire(train).orElseThrow();
        assertBooks(1, 0, 0);
        t.close();
        assertBooks(0, 0, 0);
    }

    @Test
    void closingTheGateLeavesNoTimerWorkAndFailsEveryFuture() {
        Lease off = gate.acquireAsync(train).join();
        CompletableFuture<Lease> on = gate.acquireAsync(chat, Duration.ofHours(1));
        CompletableFuture<Lease> resumed = off.checkpointAsync();
        Lease online = on.join();
        CompletableFuture<Lease> waiting = gate.acquireAsync(train, Duration.ofHours(1));
        assertFalse(resumed.isDone());
        assertFalse(waiting.isDone());
        assertTrue(clock.timer.pending() > 0);
        gate.close();
        assertEquals(0, clock.timer.pending(), "timer work left after close");
        assertInstanceOf(GateClosedException.class, assertThrows(CompletionException.class, resumed::join).getCause());
        assertInstanceOf(GateClosedException.class, assertThrows(CompletionException.class, waiting::join).getCause());
        assertEquals(0, gate.waitingAcquires());
        online.close();
        off.close();
        assertEquals(0, gate.openLeases());
        gate.close();
        assertEquals(0, clock.timer.pending());
    }

    @Test
    void aReclaimCountsParkedAndRunningLeasesOut() throws Exception {
        Thread owner = new Thread(() -> {
            try {
                Lease a = gate.acquire(train);
                gate.acquire(train);                  // two running leases, never closed
                assertFalse(a.isClosed());
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }, "dies-running");
        owner.start();
        owner.join();
        assertBooks(2, 0, 0);
        clock.advance(10 * MS);
        assertEquals(0, gate.reclaimDeadOwners());
        clock.advance(600 * MS);
        assertEquals(2, gate.reclaimDeadOwners());
        assertBooks(0, 0, 0);
        assertEquals(0, train.runningLeases());
        assertEquals(0, gate.reclaimDeadOwners());
    }
}
