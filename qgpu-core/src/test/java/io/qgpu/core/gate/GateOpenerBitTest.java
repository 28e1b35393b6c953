package io.qgpu.core.gate;

import static io.qgpu.core.gate.FakeClock.MS;
import static io.qgpu.core.gate.FakeClock.S;
import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The lease that opens its tenant's busy period on the lock-free path closes through the opener bit
 * of the tenant's word (see docs/gate.md, Fast path and threads). What its close must do besides
 * lowering the count, each seen through the public API: mark the lease closed also when later
 * leases still run, tell the engines that the tenant went idle, and settle the owner thread's books
 * so that a dead owner has nothing left to reclaim; and a reclaimed opener lease reads as closed once
 * closed. Manual clock, no sleeps.
 *
 * <p>Written against the mutants PIT left alive in the first mutation run after the opener bit came
 * in; each test fails on its mutant (checked by hand): the close's "closed" test made strict
 * ({@code left > 0}), the opener's "went idle" answer replaced by "not idle", the owner's books not
 * settled on close, and a reclaimed lease's slot left as it was.
 */
@Timeout(60) // a hang guard only
class GateOpenerBitTest {

    private FakeClock clock;
    private Gate gate;
    private Tenant chat;
    private Tenant train;

    @BeforeEach
    void setUp() throws InterruptedException {
        clock = new FakeClock(3 * S);
        gate = Gate.create("GPU-o", clock.config().usageReportInterval(Duration.ZERO).releaseDelay(Duration.ZERO)
                .deadOwnerTimeout(Duration.ofMillis(500)).build());
        chat = gate.register(GateTenantSpec.online("chat").build());
        train = gate.register(GateTenantSpec.offline("train").build());
        gate.acquire(train).close();   // train holds the token: its next leases take the lock-free path
    }

    @AfterEach
    void tearDown() {
        gate.close();
    }

    @Test
    void theOpenerClosedWhileALaterLeaseRunsIsClosedAndTheLaterOneCountsOn() throws InterruptedException {
        Lease opener = gate.acquire(train);
        clock.advance(2 * MS);
        Lease later = gate.acquire(train);
        clock.advance(3 * MS);
        opener.close();
        assertTrue(opener.isClosed());
        assertFalse(later.isClosed());
        assertEquals(1, train.runningLeases());
        clock.advance(4 * MS);
        later.close();
        assertEquals(0, train.runningLeases());
        assertEquals(9 * MS, gate.usage(train).totalLeaseNanos(), "one busy period, opener's start to the later's end");
        opener.close();   // again: nothing
        assertEquals(0, gate.openLeases());
    }

    @Test
    void closingTheOpenerWakesAWaitingOnlineAcquireAtOnce() throws InterruptedException {
        Lease l = gate.acquire(train);
        clock.advance(MS);
        CompletableFuture<Lease> online = gate.acquireAsync(chat);
        assertFalse(online.isDone());
        l.close();                                   // nothing else happens before the check
        assertTrue(online.isDone(), "the tenant went idle and the online acquire was not told");
        online.join().close();
    }

    @Test
    void aThreadThatClosedItsOpenerLeasesAndDiedLeavesNothingToReclaim() throws Exception {
        DeadThreads.onDeadThread("closes-and-dies", () -> {
            for (int i = 0; i < 3; i++) {
                gate.acquire(train).close();
            }
        });
        assertEquals(0, gate.reclaimDeadOwners(), "first pass: seen dead");
        clock.advance(500 * MS);
        assertEquals(0, gate.reclaimDeadOwners());
        assertEquals(0, train.runningLeases());
        try (Lease l = gate.acquire(train)) {
            assertEquals(1, train.runningLeases());
        }
    }

    @Test
    void aReclaimedOpenerLeaseReadsClosedOnceClosed() throws Exception {
        AtomicReference<Lease> kept = new AtomicReference<>();
        DeadThreads.onDeadThread("dies-holding-one",
                () -> kept.set(gate.acquire(train)));   // opens the period, never closed by its thread
        assertEquals(0, gate.reclaimDeadOwners(), "first pass: seen dead");
        clock.advance(500 * MS);
        gate.reclaimDeadOwners();
        assertEquals(0, train.runningLeases());
        Lease l = kept.get();
        l.close();
        assertTrue(l.isClosed());
        assertEquals(0, train.runningLeases());
        try (Lease next = gate.acquire(train)) {     // the tenant's next period opens normally
            clock.advance(MS);
        }
        assertEquals(0, train.runningLeases());
        assertEquals(0, gate.openLeases());
    }
}
