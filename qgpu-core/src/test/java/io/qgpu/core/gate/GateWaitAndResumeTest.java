package io.qgpu.core.gate;

import static io.qgpu.core.gate.DeadThreads.onDeadThread;
import static io.qgpu.core.gate.FakeClock.MS;
import static io.qgpu.core.gate.FakeClock.S;
import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.core.gate.internal.GateInternals;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.core.preempt.GpuMode;
import io.qgpu.core.preempt.TenantPhase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Waiting for the GPU and coming back to it, on the manual clock: a blocking acquire with a zero
 * timeout, the dead-owner pass of a blocking acquire, the timeout tasks acquires leave behind (none),
 * an online acquire that gives up, a checkpoint at the end of a permit whose window has freed time,
 * and a blocking checkpoint that hands out events.
 * Threads are used only where the API blocks; each is awaited on its state, never on wall time.
 */
@Timeout(60) // a hang guard only; no test depends on wall time for its verdict
class GateWaitAndResumeTest {

    private static final long T0 = 9 * S;
    private final GateFixture f = new GateFixture("GPU-w", T0,
            b -> b.deadOwnerTimeout(Duration.ofMillis(500)).preemptionBound(Duration.ofSeconds(1)));

    @AfterEach
    void tearDown() {
        f.gate.close();
    }

    /**
     * A zero timeout leaves no time to wait: the acquire gets what {@code tryAcquire} would. With
     * nothing else running, the offline and then the online tenant get their lease, although neither
     * was running before (they once timed out: the timeout was checked before the engines heard of
     * the acquire); an online acquire does not preempt running offline work for it, and times out.
     */
    @Test
    void aBlockingAcquireWithAZeroTimeoutGetsAFreeGpuAndPreemptsNothing() throws Exception {
        Lease off = f.gate.acquire(f.train, Duration.ZERO);
        assertEquals(1, f.train.runningLeases());
        assertThrows(GateTimeoutException.class, () -> f.gate.acquire(f.chat, Duration.ZERO));
        assertFalse(off.shouldYield(), "not preempted");
        assertEquals(GpuMode.OFFLINE, f.gate.mode());
        assertEquals(List.of(new GateEvent.AcquireAbandoned("GPU-w", "chat", T0, 0, GateEvent.Abandon.TIMEOUT)),
                f.events.of(GateEvent.AcquireAbandoned.class));
        off.close();
        f.clock.advance(MS);
        Lease on = f.gate.acquire(f.chat, Duration.ZERO);
        assertEquals(1, f.chat.runningLeases());
        on.close();
        assertEquals(1, f.events.of(GateEvent.AcquireAbandoned.class).size());
        assertEquals(0, f.gate.waitingAcquires());
        assertEquals(0, GateInternals.waiterCount(f.gate));
    }

    /**
     * A blocking acquire makes a dead-owner pass before it waits: the offline lease of a thread dead
     * for the dead-owner timeout is reclaimed, and the online acquire (zero timeout) gets the GPU at
     * once. The timer is kept late ({@code jump}) so that only the acquire's pass runs.
     */
    @Test
    void aBlockingAcquireReclaimsADeadOwnersLeaseBeforeItWaits() throws Exception {
        onDeadThread("dies-holding-train", () -> f.gate.acquire(f.train));
        assertEquals(0, f.gate.reclaimDeadOwners(), "seen dead");
        f.clock.jump(T0 + 500 * MS);
        Lease on = f.gate.acquire(f.chat, Duration.ZERO);
        assertEquals(List.of(1), f.events.of(GateEvent.LeaseReclaimed.class).stream()
                .map(GateEvent.LeaseReclaimed::leases).toList());
        assertEquals(0, f.train.runningLeases());
        assertEquals(1, f.chat.runningLeases());
        on.close();
    }

    /**
     * A timeout task lives only as long as its acquire waits: a blocking acquire granted after a
     * wait and an async acquire cancelled while it waits leave no task on the gate's timer (a
     * shared timer would otherwise keep the gate and the waiter until the timeout).
     */
    @Test
    void acquiresThatEndBeforeTheirTimeoutLeaveNoTimerTask() throws Exception {
        int idle = f.clock.timer.pending();                     // the dead-owner pass
        Lease on = f.gate.acquire(f.chat);
        CompletableFuture<Lease> cancelled = f.gate.acquireAsync(f.train, Duration.ofSeconds(5));
        assertEquals(idle + 1, f.clock.timer.pending());
        assertTrue(cancelled.cancel(false));
        assertEquals(idle, f.clock.timer.pending(), "the cancelled acquire's timeout task is gone");
        assertEquals(GateEvent.Abandon.CANCELLED,
                f.events.of(GateEvent.AcquireAbandoned.class).get(0).reason());

        AtomicReference<Lease> got = new AtomicReference<>();
        Thread waiter = new Thread(() -> {
            try {
                got.set(f.gate.acquire(f.train, Duration.ofSeconds(5)));
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }, "waits-with-timeout");
        waiter.start();
        Await.until("the acquire waits", () -> f.gate.waitingAcquires() == 1);
        Await.blocked(waiter);
        on.close();
        f.clock.advance(100 * MS);                               // the release delay: train runs
        waiter.join();
        assertEquals(1, f.train.runningLeases());
        assertEquals(idle, f.clock.timer.pending(), "the granted acquire's timeout task is gone");
        got.get().close();
    }

    /**
     * An online acquire that gives up (its timeout passes while the offline lease it preempts has
     * not yet reached a checkpoint) is withdrawn from the preemption machine at once: the online
     * tenant is idle again, not left waiting until the gate's next timer call.
     */
    @Test
    void anOnlineAcquireThatTimesOutIsWithdrawnAtOnce() throws Exception {
        Lease off = f.gate.tryAcquire(f.train).orElseThrow();
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        Thread online = new Thread(() -> {
            try {
                f.gate.acquire(f.chat, Duration.ofMillis(10)).close();
            } catch (Throwable e) {
                outcome.set(e);
            }
        }, "gives-up");
        online.start();
        Await.until("the acquire waits", () -> f.gate.waitingAcquires() == 1);
        Await.blocked(online);
        assertEquals(TenantPhase.WAITING, phase("chat"));
        f.clock.advance(10 * MS);                                // the timeout passes
        online.join();
        assertInstanceOf(GateTimeoutException.class, outcome.get());
        assertEquals(TenantPhase.IDLE, phase("chat"));
        assertEquals(0, f.gate.waitingAcquires());
        assertEquals(0, GateInternals.waiterCount(f.gate));
        off.close();
    }

    /**
     * The preemption machine's view of a preempted offline tenant ({@link Gate#preemptionState()}):
     * with its lease parked at a checkpoint it is SUSPENDED until online work is done and then runs
     * again; preempted once more, with its lease closed instead of parked, it is IDLE at once.
     */
    @Test
    void aPreemptedTenantIsSuspendedWithAParkedLeaseAndIdleWithNone() {
        Lease off = f.gate.tryAcquire(f.train).orElseThrow();
        CompletableFuture<Lease> online = f.gate.acquireAsync(f.chat);
        assertEquals(TenantPhase.SUSPENDING, phase("train"));
        CompletableFuture<Lease> resumed = off.checkpointAsync();
        assertEquals(TenantPhase.SUSPENDED, phase("train"));
        online.join().close();
        f.clock.advance(100 * MS);                               // the release delay: train resumes
        assertSame(off, resumed.join());
        assertEquals(TenantPhase.RUNNING, phase("train"));

        CompletableFuture<Lease> again = f.gate.acquireAsync(f.chat);
        assertEquals(TenantPhase.SUSPENDING, phase("train"));
        off.close();
        assertEquals(TenantPhase.IDLE, phase("train"), "nothing left to resume");
        again.join().close();
        assertEquals(0, f.gate.openLeases());
    }

    private TenantPhase phase(String tenant) {
        return f.gate.preemptionState().phase(tenant).orElseThrow();
    }

    /**
     * A lease whose permit ends at its tenant's limit goes on through a checkpoint, without being
     * suspended, when older use has left the window meanwhile: 10% of a 10 s window, 500 ms used
     * at the start, a lease from 9.6 s gets a permit to 10.1 s, when 100 ms more have left the window.
     */
    @Test
    void aCheckpointAtTheLimitGoesOnWhenTheWindowHasFreedTime() throws Exception {
        FakeClock c = new FakeClock(T0);
        try (Gate g = Gate.create("GPU-q", c.config().policy(IsolationPolicy.ELASTIC).window(Duration.ofSeconds(10))
                .usageReportInterval(Duration.ZERO).deadOwnerTimeout(Duration.ofHours(1)).build())) {
            RecordingListener ev = new RecordingListener();
            g.addListener(ev);
            Tenant t = g.register(GateTenantSpec.online("chat").limit(10).build());
            Lease first = g.tryAcquire(t).orElseThrow();
            c.at(T0 + 500 * MS);
            first.close();
            c.at(T0 + 9_600 * MS);
            Lease l = g.tryAcquire(t).orElseThrow();
            c.at(T0 + 10_100 * MS - 1);
            assertFalse(l.shouldYield());
            c.at(T0 + 10_100 * MS);
            assertTrue(l.shouldYield(), "the permit ends at the limit as counted at the acquire");
            l.checkpoint();
            assertFalse(l.shouldYield(), "100 ms left the window: the lease goes on");
            assertEquals(List.of(), ev.of(GateEvent.Suspended.class));
            c.at(T0 + 10_200 * MS);
            assertTrue(l.shouldYield());
            assertEquals(900 * MS, g.usage(t).usageNanos());
            l.close();
        }
    }

    /**
     * A blocking checkpoint parks at the end of its token grant, and hands out the events it
     * collected before it waits; a listener of its suspension cancels the other offline tenant's
     * pending acquire, whose lease the gate then closes, so the token comes back at once. The
     * checkpoint sees this without another wake-up: it returns with its lease running, and its
     * thread never blocks (the wake-up of that change was given while the thread ran the listener).
     * Seeded bug: with the re-check after handing out events removed (the thread waits at once),
     * this test failed in 1 of 1 run, and mutation testing detects that mutant.
     */
    @Test
    void aBlockingCheckpointSeesWhatItsOwnListenersChanged() throws Exception {
        Tenant batch = f.gate.register(GateTenantSpec.offline("batch").build());
        AtomicReference<CompletableFuture<Lease>> other = new AtomicReference<>();
        f.gate.addListener(e -> {
            if (e instanceof GateEvent.Suspended s && s.tenant().equals("train")) {
                other.get().cancel(false);
            }
        });
        AtomicBoolean grantEnded = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicReference<Lease> lease = new AtomicReference<>();
        Thread worker = new Thread(() -> {
            try {
                Lease l = f.gate.acquire(f.train);
                lease.set(l);
                while (!grantEnded.get()) {                    // runnable, so that only the checkpoint can block
                    Thread.onSpinWait();
                }
                l.checkpoint();
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "checkpoints");
        worker.start();
        Await.until("train runs", () -> lease.get() != null);
        other.set(f.gate.acquireAsync(batch));
        f.clock.at(T0 + 250 * MS);                               // train's grant ends: batch's turn
        assertTrue(lease.get().shouldYield());
        grantEnded.set(true);
        Await.blocked(worker);                                 // returns once it ended, or if it waits
        assertFalse(worker.isAlive(), "the checkpoint waited for a wake-up that was already given");
        assertNull(failure.get());
        assertTrue(other.get().isCancelled());
        assertEquals(1, f.train.runningLeases(), "train runs again");
        assertEquals(0, batch.runningLeases(), "the cancelled acquire left no lease");
        assertEquals(List.of(new GateEvent.Suspended("GPU-w", "train", T0 + 250 * MS,
                GateEvent.SuspendReason.GRANT_ENDED)), f.events.of(GateEvent.Suspended.class));
        assertEquals(T0 + 250 * MS, f.events.of(GateEvent.Resumed.class).get(0).atNanos());
        lease.get().close();
        assertEquals(0, f.gate.openLeases());
    }
}
