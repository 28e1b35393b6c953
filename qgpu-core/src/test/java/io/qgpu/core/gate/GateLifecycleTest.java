package io.qgpu.core.gate;

import static io.qgpu.core.gate.FakeClock.MS;
import static io.qgpu.core.gate.FakeClock.S;
import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.core.gate.internal.GateInternals;
import io.qgpu.api.InvalidValueException;
import io.qgpu.core.preempt.GpuMode;
import io.qgpu.core.preempt.TenantPhase;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Lease lifecycle: timeouts, interrupts, cancellation, double close, dead owners, closing, validation. */
@Timeout(60) // a hang guard only; no test depends on wall time for its verdict
class GateLifecycleTest {

    private static final long T0 = 3 * S;
    private FakeClock clock;
    private Gate gate;
    private RecordingListener events;
    private Tenant chat;
    private Tenant train;

    @BeforeEach
    void setUp() {
        clock = new FakeClock(T0);
        gate = Gate.create("GPU-l", clock.config().usageReportInterval(Duration.ZERO)
                .deadOwnerTimeout(Duration.ofMillis(500)).build());
        events = new RecordingListener();
        gate.addListener(events);
        chat = gate.register(GateTenantSpec.online("chat").build());
        train = gate.register(GateTenantSpec.offline("train").build());
    }

    private void assertNoLeaseLeft() {
        assertEquals(0, gate.openLeases());
        assertEquals(0, gate.waitingAcquires());
        assertEquals(0, GateInternals.waiterCount(gate), "waiter count");
    }

    @Test
    void closingTwiceIsSafe() throws Exception {
        Lease l = gate.acquire(chat);
        l.close();
        l.close();
        assertTrue(l.isClosed());
        assertNoLeaseLeft();
        assertEquals(1, events.of(GateEvent.LeaseReleased.class).size());
        assertThrows(GateStateException.class, l::checkpoint);
    }

    @Test
    void everyAcquireGetsItsOwnLeaseObject() throws Exception {
        Lease a = gate.acquire(chat);
        Lease nested = gate.acquire(chat);
        assertNotSame(a, nested, "an open lease is never handed out twice");
        nested.close();
        a.close();
        Lease b = gate.acquire(chat);
        assertNotSame(a, b, "a closed lease is never handed out again");
        assertNotSame(nested, b);
        assertTrue(a.isClosed());
        assertFalse(b.isClosed());
        b.close();
        assertNoLeaseLeft();
    }

    @Test
    void timedOutAcquireLeavesNothingBehind() throws Exception {
        Lease on = gate.acquire(chat);                 // offline must wait for online
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try (Lease l = gate.acquire(train, Duration.ofMillis(50))) {
                fail("got " + l);
            } catch (Throwable e) {
                thrown.set(e);
            }
        }, "timeout");
        t.start();
        Await.until("train waits", () -> gate.waitingAcquires() == 1);
        clock.at(T0 + 50 * MS - 1);
        assertTrue(t.isAlive());
        clock.at(T0 + 50 * MS);
        t.join();
        assertInstanceOf(GateTimeoutException.class, thrown.get());
        assertEquals(Duration.ofMillis(50), ((GateTimeoutException) thrown.get()).timeout());
        on.close();
        assertNoLeaseLeft();
        GateEvent.AcquireAbandoned a = events.of(GateEvent.AcquireAbandoned.class).get(0);
        assertEquals(GateEvent.Abandon.TIMEOUT, a.reason());
        assertEquals(50 * MS, a.waitedNanos());
        clock.at(T0 + 200 * MS);                       // release delay over: train must not run
        assertEquals(TenantPhase.IDLE, gate.preemptionState().phase("train").orElseThrow());
        assertEquals(0, gate.usage(train).usageNanos());
    }

    @Test
    void zeroTimeoutFailsAtOnceUnlessTheLeaseIsFree() throws Exception {
        Lease on = gate.acquire(chat);
        assertThrows(GateTimeoutException.class, () -> gate.acquire(train, Duration.ZERO));
        gate.acquire(chat, Duration.ZERO).close();
        on.close();
        assertNoLeaseLeft();
        assertThrows(InvalidValueException.class, () -> gate.acquire(chat, Duration.ofMillis(-1)));
    }

    @Test
    void interruptedAcquireLeavesNothingBehind() throws Exception {
        Lease on = gate.acquire(chat);
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try (Lease l = gate.acquire(train)) {
                fail("got " + l);
            } catch (Throwable e) {
                thrown.set(e);
            }
        }, "interrupted");
        t.start();
        Await.until("train waits", () -> gate.waitingAcquires() == 1);
        t.interrupt();
        t.join();
        assertInstanceOf(InterruptedException.class, thrown.get());
        on.close();
        assertNoLeaseLeft();
        assertEquals(GateEvent.Abandon.INTERRUPTED, events.of(GateEvent.AcquireAbandoned.class).get(0).reason());
    }

    @Test
    void anInterruptedThreadDoesNotEnterTheSlowPath() {
        Lease on = gate.tryAcquire(chat).orElseThrow();
        Thread.currentThread().interrupt();
        assertThrows(InterruptedException.class, () -> gate.acquire(train));
        assertFalse(Thread.interrupted());
        on.close();
        assertNoLeaseLeft();
    }

    @Test
    void cancelledAsyncAcquireLeavesNothingBehind() {
        Lease on = gate.tryAcquire(chat).orElseThrow();
        CompletableFuture<Lease> f = gate.acquireAsync(train);
        assertEquals(1, gate.waitingAcquires());
        assertTrue(f.cancel(true));
        assertEquals(0, gate.waitingAcquires());
        on.close();
        clock.at(T0 + S);
        assertNoLeaseLeft();
        assertThrows(CancellationException.class, f::join);
        assertEquals(GateEvent.Abandon.CANCELLED, events.of(GateEvent.AcquireAbandoned.class).get(0).reason());
    }

    @Test
    void asyncTimeoutFailsTheFuture() {
        Lease on = gate.tryAcquire(chat).orElseThrow();
        CompletableFuture<Lease> f = gate.acquireAsync(train, Duration.ofMillis(20));
        clock.at(T0 + 20 * MS);
        CompletionException e = assertThrows(CompletionException.class, f::join);
        assertInstanceOf(GateTimeoutException.class, e.getCause());
        on.close();
        assertNoLeaseLeft();
    }

    @Test
    void aGrantThatRacesWithCancellationIsClosed() throws Exception {
        // the listener cancels the future while the gate hands the lease out: the lease must be closed
        Lease on = gate.tryAcquire(chat).orElseThrow();
        CompletableFuture<Lease> f = gate.acquireAsync(train);
        gate.addListener(e -> {
            if (e instanceof GateEvent.ModeChanged m && m.to() == GpuMode.OFFLINE) {
                f.cancel(false);
            }
        });
        on.close();
        clock.at(T0 + 100 * MS);        // release delay: offline mode, train's grant is handed out
        assertTrue(f.isCancelled());
        assertNoLeaseLeft();
    }

    @Test
    void leasesOfADeadThreadAreReclaimedAfterTheTimeout() throws Exception {
        AtomicReference<Lease> leaked = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                leaked.set(gate.acquire(train));    // never closed
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }, "leaker");
        t.start();
        t.join();
        assertEquals(1, gate.openLeases());
        clock.at(T0 + 10 * MS);
        assertEquals(0, gate.reclaimDeadOwners(), "first seen dead now");
        clock.at(T0 + 510 * MS - 1);
        assertEquals(0, gate.reclaimDeadOwners());
        assertEquals(1, gate.openLeases());
        clock.at(T0 + 510 * MS);                // the timer's reclaim pass (every 250 ms) or this call
        gate.reclaimDeadOwners();
        assertNoLeaseLeft();
        GateEvent.LeaseReclaimed r = events.of(GateEvent.LeaseReclaimed.class).get(0);
        assertEquals("leaker", r.ownerThread());
        assertEquals(1, r.leases());
        // the dead thread's lease object is void now
        leaked.get().close();
        assertNoLeaseLeft();
        assertThrows(GateStateException.class, () -> leaked.get().checkpoint());
        // and the GPU is free for online work at once
        assertTrue(gate.tryAcquire(chat).isPresent());
    }

    @Test
    void theTimerReclaimsWithoutAnyCall() throws Exception {
        Thread t = new Thread(() -> {
            try {
                gate.acquire(chat);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }, "leaker2");
        t.start();
        t.join();
        clock.at(T0 + 2 * S);
        assertNoLeaseLeft();
        assertEquals(1, events.of(GateEvent.LeaseReclaimed.class).size());
    }

    @Test
    void anAcquireThatWaitsRunsAReclaimPassToo() throws Exception {
        // a gate whose timer is never cranked: only acquires can find the dead owner
        FakeClock frozenTimer = new FakeClock(T0);
        Gate g = Gate.create("GPU-r", GateConfig.custom().ticker(frozenTimer).timer(frozenTimer.timer)
                .deadOwnerTimeout(Duration.ofMillis(500)).usageReportInterval(Duration.ZERO).build());
        Tenant online = g.register(GateTenantSpec.online("online").build());
        Tenant offline = g.register(GateTenantSpec.offline("offline").build());
        Thread t = new Thread(() -> {
            try {
                g.acquire(online);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }, "dies-holding-online");
        t.start();
        t.join();
        frozenTimer.jump(T0 + 300 * MS);
        CompletableFuture<Lease> first = g.acquireAsync(offline);   // notes the dead owner
        assertFalse(first.isDone());
        first.cancel(false);
        frozenTimer.jump(T0 + 900 * MS);
        CompletableFuture<Lease> second = g.acquireAsync(offline);  // 600 ms later: reclaims
        assertEquals(0, g.usage(online).openLeases());
        assertFalse(second.isDone(), "the release delay runs from the reclaim");
        frozenTimer.at(T0 + 2 * S);                                  // now the timer runs
        assertTrue(second.isDone());
        second.join().close();
        assertEquals(0, g.openLeases());
        g.close();
    }

    @Test
    void leasesOfALiveThreadAreNeverReclaimed() throws Exception {
        Lease mine = gate.acquire(train);
        clock.at(T0 + 10 * S);
        assertEquals(0, gate.reclaimDeadOwners());
        assertEquals(1, gate.openLeases());
        mine.close();
        assertNoLeaseLeft();
    }

    @Test
    void aLeaseMayBeClosedByAnotherThread() throws Exception {
        Lease mine = gate.acquire(train);
        Thread other = new Thread(mine::close, "closer");
        other.start();
        other.join();
        assertNoLeaseLeft();
        clock.at(T0 + 10 * S);
        gate.reclaimDeadOwners();           // the closer is dead, the owner alive: nothing to do
        assertEquals(0, events.of(GateEvent.LeaseReclaimed.class).size());
        mine.close();
        assertNoLeaseLeft();
    }

    @Test
    void closingTheGateWakesWaitersAndFailsLaterCalls() throws Exception {
        Lease on = gate.acquire(chat);
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                gate.acquire(train);
            } catch (Throwable e) {
                thrown.set(e);
            }
        }, "waiter");
        t.start();
        Await.until("train waits", () -> gate.waitingAcquires() == 1);
        CompletableFuture<Lease> f = gate.acquireAsync(train);
        gate.close();
        gate.close();
        t.join();
        assertInstanceOf(GateClosedException.class, thrown.get());
        assertInstanceOf(GateClosedException.class, assertThrows(CompletionException.class, f::join).getCause());
        assertThrows(GateClosedException.class, () -> gate.acquire(chat));
        assertThrows(GateClosedException.class, () -> gate.register(GateTenantSpec.online("x").build()));
        on.close();
        assertTrue(gate.isClosed());
    }

    @Test
    void misuseGetsTypedErrors() throws Exception {
        Gate other = Gate.create("GPU-other", clock.config().build());
        Tenant foreign = other.register(GateTenantSpec.online("chat").build());
        GateStateException e = assertThrows(GateStateException.class, () -> gate.acquire(foreign));
        assertEquals("chat", e.tenant());
        assertThrows(GateStateException.class, () -> gate.register(GateTenantSpec.online("chat").build()));
        Lease l = gate.acquire(chat);
        assertThrows(GateStateException.class, () -> gate.unregister(chat));
        l.close();
        gate.unregister(chat);
        assertThrows(GateStateException.class, () -> gate.acquire(chat));
        assertThrows(GateStateException.class, () -> gate.usage(chat));
        Tenant again = gate.register(GateTenantSpec.online("chat").build());
        gate.acquire(again).close();
        assertEquals(2, gate.tenants().size());
        other.close();
        InvalidValueException v = assertThrows(InvalidValueException.class,
                () -> GateTenantSpec.online("a").request(50).limit(40).build());
        assertEquals("tenantSpec.requestPercent", v.field());
        v = assertThrows(InvalidValueException.class, () -> GateTenantSpec.offline(" "));
        assertEquals("tenantSpec.name", v.field());
        v = assertThrows(InvalidValueException.class, () -> GateTenantSpec.offline("a").limit(0));
        assertEquals("tenantSpec.limitPercent", v.field());
        v = assertThrows(InvalidValueException.class, () -> GateConfig.custom().minSlice(Duration.ofMillis(-1)));
        assertEquals("gateConfig.minSlice", v.field());
        v = assertThrows(InvalidValueException.class, () -> GateConfig.custom().window(Duration.ofSeconds(1))
                .minSlice(Duration.ofSeconds(2)).build());
        assertEquals("gateConfig.minSlice", v.field());
        v = assertThrows(InvalidValueException.class, () -> GateConfig.custom().releaseDelay(Duration.ofMillis(-5)));
        assertEquals("gateConfig.releaseDelay", v.field());
        v = assertThrows(InvalidValueException.class, () -> GateConfig.custom().usageReportInterval(Duration.ofSeconds(-1)));
        assertEquals("gateConfig.usageReportInterval", v.field());
        v = assertThrows(InvalidValueException.class, () -> Gate.create("", GateConfig.ofDefaults()));
        assertEquals("gate.gpu", v.field());
        v = assertThrows(InvalidValueException.class, () -> gate.acquire(null));
        assertEquals("gate.tenant", v.field());
    }

    @Test
    void registryKeepsOneGatePerGpu() {
        try (GateRegistry r = GateRegistry.create(clock.config().build())) {
            Gate a = r.gate("GPU-a");
            assertSame(a, r.gate("GPU-a"));
            assertNotSame(a, r.gate("GPU-b"));
            assertEquals(2, r.gates().size());
            r.close();
            assertTrue(a.isClosed());
            assertThrows(GateClosedException.class, () -> r.gate("GPU-c"));
        }
        assertThrows(UnsupportedOperationException.class, () -> GateRegistry.shared().close());
        assertThrows(InvalidValueException.class, () -> GateRegistry.create(uuid -> null).gate("GPU-x"));
    }
}
