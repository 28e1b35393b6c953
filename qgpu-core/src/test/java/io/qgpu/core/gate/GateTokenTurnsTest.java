package io.qgpu.core.gate;

import static io.qgpu.core.gate.FakeClock.MS;
import static io.qgpu.core.gate.FakeClock.S;
import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.api.IsolationPolicy;
import io.qgpu.core.preempt.GpuMode;
import io.qgpu.core.preempt.TenantPhase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Offline tenants taking turns with the GPU token (default token settings: a grant of 250 ms while
 * another offline tenant waits), on the manual clock: exact turn times, the reason a lease is
 * suspended, what a withdrawn or unregistered tenant leaves behind, and the gate's timer task (one at a time).
 * Written to pin down behaviour of the bridge to the engines that mutation testing found unchecked.
 */
@Timeout(60) // a hang guard only; no test depends on wall time for its verdict
class GateTokenTurnsTest {

    private static final long T0 = 7 * S;
    private static final long GRANT = 250 * MS;
    private FakeClock clock;
    private Gate gate;
    private Tenant a;
    private Tenant b;
    private RecordingListener events;

    @BeforeEach
    void setUp() {
        clock = new FakeClock(T0);
        gate = Gate.create("GPU-t", clock.config().usageReportInterval(Duration.ZERO).build());
        a = gate.register(GateTenantSpec.offline("a").build());
        b = gate.register(GateTenantSpec.offline("b").build());
        events = new RecordingListener();
        gate.addListener(events);
    }

    @AfterEach
    void tearDown() {
        gate.close();
    }

    @Test
    void offlineTenantsTakeTurnsWhenTheGrantEndsAndTheSuspensionSaysWhy() {
        clock.advance(3 * S);                                // the grant starts when the lease does, not at creation
        long start = T0 + 3 * S;
        Lease la = gate.tryAcquire(a).orElseThrow();
        CompletableFuture<Lease> fb = gate.acquireAsync(b);
        assertFalse(fb.isDone());
        assertEquals(TenantPhase.READY, gate.preemptionState().phase("b").orElseThrow());
        assertTrue(gate.tryAcquire(b).isEmpty(), "the token is a's");

        clock.at(start + GRANT - 1);
        assertFalse(la.shouldYield());
        clock.at(start + GRANT);
        assertTrue(la.shouldYield(), "a's grant ended and b waits");
        CompletableFuture<Lease> pa = la.checkpointAsync();
        assertFalse(pa.isDone());
        Lease lb = fb.join();
        assertEquals(List.of(new GateEvent.Suspended("GPU-t", "a", start + GRANT, GateEvent.SuspendReason.GRANT_ENDED)),
                events.of(GateEvent.Suspended.class));
        assertEquals(new GateEvent.LeaseGranted("GPU-t", "b", start + GRANT, GRANT),
                events.of(GateEvent.LeaseGranted.class).get(1));

        clock.at(start + 2 * GRANT - 1);
        assertFalse(lb.shouldYield());
        clock.at(start + 2 * GRANT);
        assertTrue(lb.shouldYield(), "b's grant ended and a waits at its checkpoint");
        CompletableFuture<Lease> pb = lb.checkpointAsync();
        assertFalse(pb.isDone());
        assertTrue(pa.isDone(), "a runs again");
        assertEquals(new GateEvent.Suspended("GPU-t", "b", start + 2 * GRANT, GateEvent.SuspendReason.GRANT_ENDED),
                events.of(GateEvent.Suspended.class).get(1));
        assertEquals(List.of(new GateEvent.Resumed("GPU-t", "a", start + 2 * GRANT, GRANT)),
                events.of(GateEvent.Resumed.class));
        la.close();
        assertTrue(pb.isDone(), "a closed: b resumes at once");
        lb.close();
        assertEquals(GRANT, gate.usage(a).usageNanos());
        assertEquals(GRANT, gate.usage(b).usageNanos());
        assertEquals(List.of(), gate.preemptionState().invariantViolations());
    }

    @Test
    void anAcquireThatTimesOutWithdrawsItsClaimOnTheToken() {
        Lease la = gate.tryAcquire(a).orElseThrow();
        CompletableFuture<Lease> fb = gate.acquireAsync(b, Duration.ofMillis(100));
        clock.at(T0 + 100 * MS);
        assertInstanceOf(GateTimeoutException.class, assertThrows(CompletionException.class, fb::join).getCause());
        assertEquals(TenantPhase.IDLE, gate.preemptionState().phase("b").orElseThrow());
        clock.at(T0 + 10 * GRANT);
        assertFalse(la.shouldYield(), "nobody else wants the token: a keeps it past its grant");
        la.close();
        assertEquals(List.of(new GateEvent.LeaseGranted("GPU-t", "a", T0, 0)), events.of(GateEvent.LeaseGranted.class));
        Lease again = gate.tryAcquire(b).orElseThrow();
        clock.at(T0 + 10 * GRANT + GRANT);
        assertFalse(again.shouldYield());
        again.close();
    }

    @Test
    void anOfflineTenantUnregisteredAndRegisteredAgainGetsTheToken() {
        gate.unregister(b);
        Lease la = gate.tryAcquire(a).orElseThrow();
        clock.at(T0 + 2 * GRANT);
        assertFalse(la.shouldYield(), "b is gone: nobody waits for a's token");
        Tenant b2 = gate.register(GateTenantSpec.offline("b").build());
        CompletableFuture<Lease> fb = gate.acquireAsync(b2);
        clock.at(T0 + 3 * GRANT);
        assertTrue(la.shouldYield(), "the new b waits: a's grant is over");
        CompletableFuture<Lease> pa = la.checkpointAsync();
        assertTrue(fb.isDone());
        fb.join().close();
        assertTrue(pa.isDone());
        la.close();
    }

    @Test
    void unregisteringATenantRightAfterItsLastCloseHandsTheTokenOn() {
        Lease la = gate.tryAcquire(a).orElseThrow();
        clock.at(T0 + 30 * MS);
        la.close();                                     // the owner's fast path: nobody waits, no pump
        gate.unregister(a);
        Lease lb = gate.tryAcquire(b).orElseThrow();
        assertEquals(List.of("b"), gate.tenants().stream().map(Tenant::name).toList());
        clock.at(T0 + 10 * GRANT);
        assertFalse(lb.shouldYield());
        lb.close();
        assertEquals(List.of(), gate.preemptionState().invariantViolations());
    }

    @Test
    void theGateKeepsOneTimerTaskAndCancelsTheOneAnEarlierDeadlineReplaces() {
        FakeClock c = new FakeClock(T0);
        try (Gate g = Gate.create("GPU-1", c.config().policy(IsolationPolicy.ELASTIC).window(Duration.ofSeconds(10))
                .deadOwnerTimeout(Duration.ofHours(1)).usageReportInterval(Duration.ZERO).build())) {
            Tenant chat = g.register(GateTenantSpec.online("chat").build());
            Tenant train = g.register(GateTenantSpec.offline("train").limit(10).build());
            Lease t = g.tryAcquire(train).orElseThrow();
            c.at(T0 + S);                                   // train used its 10% of 10 s
            CompletableFuture<Lease> parked = t.checkpointAsync();
            assertFalse(parked.isDone());
            int tasks = c.timer.pending();              // the quota wake, and the dead-owner check
            long quotaWake = c.timer.nextAt();
            assertTrue(quotaWake > T0 + 10 * S, "waits for the window to slide: " + quotaWake);
            Lease on = g.tryAcquire(chat).orElseThrow();
            c.at(T0 + 2 * S);
            on.close();                                     // the release delay ends long before the quota wait
            assertEquals(tasks, c.timer.pending(), "the earlier deadline replaced the later task");
            assertTrue(c.timer.nextAt() < quotaWake);
            assertEquals(GpuMode.RELEASING, g.mode());
            c.at(quotaWake);
            assertTrue(parked.isDone(), "the quota wait is still honoured");
            t.close();
        }
    }
}
