package io.qgpu.core.gate;

import static io.qgpu.core.gate.FakeClock.MS;
import static io.qgpu.core.gate.FakeClock.S;
import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.api.IsolationPolicy;
import io.qgpu.core.preempt.TenantPhase;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Quota books and timer work seen from outside, on the manual clock: a tenant allowed the whole
 * window never has to yield, exhaustion is reported once per episode, usage reports keep their
 * schedule while nobody listens, a granted acquire leaves no timeout task behind, each failed
 * acquire carries its own cause, and closing the gate ends a checkpoint that blocks.
 */
@Timeout(60) // a hang guard only; no test depends on wall time for its verdict
class GateBooksAndTimersTest {

    private static final long T0 = 11 * S;

    private static Gate gate(GateConfig.Builder b) {
        return Gate.create("GPU-b", b.build());
    }

    @Test
    void aTenantAllowedTheWholeWindowNeverHasToYield() {
        FakeClock clock = new FakeClock(T0);
        try (Gate gate = gate(clock.config().policy(IsolationPolicy.ELASTIC).window(Duration.ofSeconds(10))
                .deadOwnerTimeout(Duration.ofHours(1)).usageReportInterval(Duration.ZERO))) {
            Tenant chat = gate.register(GateTenantSpec.online("chat").limit(100).build());
            Lease l = gate.tryAcquire(chat).orElseThrow();
            for (int i = 1; i <= 25; i++) {                  // 25 s: two and a half windows
                clock.at(T0 + i * S);
                assertFalse(l.shouldYield(), "at " + i + " s");
            }
            assertEquals(10 * S, gate.usage(chat).usageNanos());
            l.close();
            assertTrue(gate.tryAcquire(chat).isPresent());
        }
    }

    /**
     * A tenant allowed 100% has used the whole window (10 s of 10 s) and gone idle: it starts again
     * at once, since no limit below the window applies to it.
     */
    @Test
    void aTenantAllowedTheWholeWindowStartsAgainFromIdleAfterUsingAllOfIt() {
        FakeClock clock = new FakeClock(T0);
        try (Gate gate = gate(clock.config().policy(IsolationPolicy.ELASTIC).window(Duration.ofSeconds(10))
                .deadOwnerTimeout(Duration.ofHours(1)).usageReportInterval(Duration.ZERO))) {
            Tenant chat = gate.register(GateTenantSpec.online("chat").limit(100).build());
            Tenant other = gate.register(GateTenantSpec.online("other").build());
            Lease l = gate.tryAcquire(chat).orElseThrow();
            clock.at(T0 + 10 * S);
            l.close();
            gate.tryAcquire(other).orElseThrow().close();    // the gate takes note that chat went idle
            assertEquals(TenantPhase.IDLE, gate.preemptionState().phase("chat").orElseThrow());
            assertEquals(10 * S, gate.usage(chat).usageNanos());
            Lease again = gate.tryAcquire(chat).orElseThrow();
            clock.at(T0 + 11 * S);
            assertFalse(again.shouldYield());
            again.close();
        }
    }

    /**
     * A running lease keeps its permit to the exact limit when less than a minimum slice is left
     * and the gate re-computes the permits meanwhile (the minimum slice holds back a tenant that
     * starts from idle, not one that runs): 10% of a 10 s window, a 10 ms minimum slice, a pass at
     * 995 ms.
     */
    @Test
    void aRunningLeaseKeepsItsPermitToTheLimitWithLessThanAMinimumSliceLeft() {
        FakeClock clock = new FakeClock(T0);
        try (Gate gate = gate(clock.config().policy(IsolationPolicy.ELASTIC).window(Duration.ofSeconds(10))
                .minSlice(Duration.ofMillis(10)).deadOwnerTimeout(Duration.ofHours(1)).usageReportInterval(Duration.ZERO))) {
            Tenant chat = gate.register(GateTenantSpec.online("chat").limit(10).build());
            Tenant other = gate.register(GateTenantSpec.online("other").build());
            Lease l = gate.tryAcquire(chat).orElseThrow();
            clock.at(T0 + 995 * MS);
            gate.tryAcquire(other).orElseThrow().close();    // a pass over every tenant's permit
            assertFalse(l.shouldYield(), "5 ms are left of the 1 s limit");
            clock.at(T0 + S - 1);
            assertFalse(l.shouldYield());
            clock.at(T0 + S);
            assertTrue(l.shouldYield());
            l.close();
            assertEquals(S, gate.usage(chat).usageNanos());
        }
    }

    @Test
    void quotaExhaustionIsReportedOncePerEpisode() {
        FakeClock clock = new FakeClock(T0);
        try (Gate gate = gate(clock.config().policy(IsolationPolicy.ELASTIC).window(Duration.ofSeconds(10))
                .minSlice(Duration.ofMillis(1)).deadOwnerTimeout(Duration.ofHours(1)).usageReportInterval(Duration.ZERO))) {
            RecordingListener events = new RecordingListener();
            gate.addListener(events);
            Tenant chat = gate.register(GateTenantSpec.online("chat").limit(10).build());
            Lease l = gate.tryAcquire(chat).orElseThrow();
            clock.at(T0 + S);                                // the whole 10% used
            l.close();
            for (int i = 0; i < 3; i++) {
                assertTrue(gate.tryAcquire(chat).isEmpty());
                clock.at(T0 + S + (i + 1) * MS);
            }
            assertEquals(1, events.of(GateEvent.QuotaExhausted.class).size(), events.all().toString());
            clock.at(T0 + 10 * S + MS);                      // a slice fits again
            Lease again = gate.tryAcquire(chat).orElseThrow();
            clock.at(T0 + 12 * S);
            again.close();
            assertTrue(gate.tryAcquire(chat).isEmpty());     // a second episode
            assertEquals(2, events.of(GateEvent.QuotaExhausted.class).size());
        }
    }

    @Test
    void usageReportsKeepTheirScheduleWhileNobodyListens() {
        FakeClock clock = new FakeClock(T0);
        try (Gate gate = gate(clock.config().deadOwnerTimeout(Duration.ofHours(1))
                .usageReportInterval(Duration.ofSeconds(1)))) {
            gate.register(GateTenantSpec.offline("train").build());
            clock.at(T0 + 2 * S);                            // two report ticks with no listener
            RecordingListener events = new RecordingListener();
            gate.addListener(events);
            clock.at(T0 + 3 * S);
            assertEquals(1, events.of(GateEvent.UsageReport.class).size());
            assertEquals(T0 + 3 * S, events.of(GateEvent.UsageReport.class).get(0).atNanos());
        }
    }

    @Test
    void aGrantedAsyncAcquireLeavesNoTimeoutTaskAndEachFailureCarriesItsOwnCause() {
        FakeClock clock = new FakeClock(T0);
        Gate gate = gate(clock.config().deadOwnerTimeout(Duration.ofHours(1)).usageReportInterval(Duration.ZERO));
        Tenant chat = gate.register(GateTenantSpec.online("chat").build());
        Tenant train = gate.register(GateTenantSpec.offline("train").build());
        Lease on = gate.tryAcquire(chat).orElseThrow();
        int before = clock.timer.pending();
        CompletableFuture<Lease> second = gate.acquireAsync(chat);             // online runs together: at once
        assertTrue(second.isDone());
        CompletableFuture<Lease> timed = gate.acquireAsync(train, Duration.ofSeconds(5));
        assertEquals(before + 1, clock.timer.pending(), "the timeout task");
        second.join().close();
        on.close();
        clock.at(T0 + 200 * MS);                                                // release delay over: train runs
        Lease off = timed.join();
        assertEquals(before, clock.timer.pending(), "the granted acquire's timeout task was cancelled");
        off.close();

        Lease on2 = gate.tryAcquire(chat).orElseThrow();
        CompletableFuture<Lease> timesOut = gate.acquireAsync(train, Duration.ofMillis(10));
        clock.at(T0 + 210 * MS);
        assertInstanceOf(GateTimeoutException.class, assertThrows(CompletionException.class, timesOut::join).getCause());
        CompletableFuture<Lease> closed = gate.acquireAsync(train);
        gate.close();
        assertInstanceOf(GateClosedException.class, assertThrows(CompletionException.class, closed::join).getCause());
        on2.close();
    }

    @Test
    void closingTheGateEndsACheckpointThatBlocks() throws Exception {
        FakeClock clock = new FakeClock(T0);
        Gate gate = gate(clock.config().deadOwnerTimeout(Duration.ofHours(1)).usageReportInterval(Duration.ZERO));
        Tenant chat = gate.register(GateTenantSpec.online("chat").build());
        Tenant train = gate.register(GateTenantSpec.offline("train").build());
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        AtomicReference<Lease> lease = new AtomicReference<>();
        Thread worker = new Thread(() -> {
            try {
                Lease off = gate.acquire(train);
                lease.set(off);
                while (!off.shouldYield()) {
                    Thread.onSpinWait();
                }
                off.checkpoint();                        // parks: online runs
                outcome.set(new AssertionError("the checkpoint returned"));
            } catch (Throwable e) {
                outcome.set(e);
            }
        }, "blocked-checkpoint");
        worker.start();
        Await.until("train runs", () -> lease.get() != null);
        Lease on = gate.acquireAsync(chat).join();
        Await.blocked(worker);
        gate.close();
        worker.join();
        assertInstanceOf(GateClosedException.class, outcome.get());
        on.close();
    }
}
