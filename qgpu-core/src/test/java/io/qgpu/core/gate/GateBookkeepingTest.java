package io.qgpu.core.gate;

import static io.qgpu.core.gate.DeadThreads.onDeadThread;
import static io.qgpu.core.gate.FakeClock.MS;
import static io.qgpu.core.gate.FakeClock.S;
import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.core.gate.internal.GateInternals;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Exact figures the gate reports (event times and waits, error messages, counts after close and
 * reclaim) and the release of its lock by every read, on the manual clock. Written to pin down
 * behaviour that mutation testing found unchecked.
 */
@Timeout(60) // a hang guard only; no test depends on wall time for its verdict
class GateBookkeepingTest {

    private static final long T0 = 5 * S;
    private FakeClock clock;
    private Gate gate;
    private Tenant chat;
    private Tenant train;
    private RecordingListener events;

    @BeforeEach
    void setUp() {
        GateFixture f = new GateFixture("GPU-k", T0, b -> b.deadOwnerTimeout(Duration.ofMillis(500)));
        clock = f.clock;
        gate = f.gate;
        chat = f.chat;
        train = f.train;
        events = f.events;
    }

    @AfterEach
    void tearDown() {
        gate.close();
    }

    @Test
    void grantsReleasesAndAbandonsCarryTheirExactTimes() throws Exception {
        Lease off = gate.tryAcquire(train).orElseThrow();
        assertEquals(List.of(new GateEvent.LeaseGranted("GPU-k", "train", T0, 0)),
                events.of(GateEvent.LeaseGranted.class));
        clock.advance(5 * MS);
        Thread closer = new Thread(off::close, "closer");
        closer.start();
        closer.join();
        assertEquals(List.of(new GateEvent.LeaseReleased("GPU-k", "train", T0 + 5 * MS, 5 * MS)),
                events.of(GateEvent.LeaseReleased.class), "a close by another thread reports the time held");
        events.clear();

        Lease on = gate.acquire(chat);                        // online runs
        Lease second = gate.acquireAsync(chat).join();        // the fast path of an async acquire
        assertEquals(2, events.of(GateEvent.LeaseGranted.class).size());
        assertEquals(new GateEvent.LeaseGranted("GPU-k", "chat", T0 + 5 * MS, 0),
                events.of(GateEvent.LeaseGranted.class).get(1));
        second.close();
        events.clear();

        CompletableFuture<Lease> late = gate.acquireAsync(train, Duration.ofMillis(50));
        clock.advance(50 * MS);
        assertInstanceOf(GateTimeoutException.class, assertThrows(CompletionException.class, late::join).getCause());
        assertEquals(List.of(new GateEvent.AcquireAbandoned("GPU-k", "train", T0 + 55 * MS, 50 * MS,
                GateEvent.Abandon.TIMEOUT)), events.of(GateEvent.AcquireAbandoned.class));
        events.clear();

        AtomicReference<Throwable> outcome = new AtomicReference<>();
        Thread waiter = new Thread(() -> {
            try {
                gate.acquire(train, Duration.ofMillis(30)).close();
            } catch (Throwable e) {
                outcome.set(e);
            }
        }, "sync-waiter");
        waiter.start();
        Await.until("the acquire waits", () -> gate.waitingAcquires() == 1);
        Await.blocked(waiter);
        clock.advance(30 * MS);
        waiter.join();
        assertInstanceOf(GateTimeoutException.class, outcome.get());
        assertEquals(List.of(new GateEvent.AcquireAbandoned("GPU-k", "train", T0 + 85 * MS, 30 * MS,
                GateEvent.Abandon.TIMEOUT)), events.of(GateEvent.AcquireAbandoned.class));
        on.close();
        assertEquals(0, gate.openLeases());
    }

    @Test
    void aGrantAfterAWaitReportsTheWait() throws Exception {
        Lease on = gate.acquire(chat);
        AtomicReference<Lease> got = new AtomicReference<>();
        Thread waiter = new Thread(() -> {
            try {
                got.set(gate.acquire(train));
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }, "waits-for-online");
        waiter.start();
        Await.until("the acquire waits", () -> gate.waitingAcquires() == 1);
        Await.blocked(waiter);
        clock.advance(20 * MS);
        on.close();
        clock.advance(S);                                     // offline may run after the release delay
        waiter.join();
        List<GateEvent.LeaseGranted> granted = events.of(GateEvent.LeaseGranted.class);
        GateEvent.LeaseGranted g = granted.get(granted.size() - 1);
        assertEquals("train", g.tenant());
        assertEquals(g.atNanos() - T0, g.waitedNanos(), "waited from the acquire to the grant");
        assertTrue(g.waitedNanos() >= 20 * MS);
        got.get().close();
    }

    @Test
    void unregisterNamesTheOpenAndParkedLeases() {
        Lease off = gate.acquireAsync(train).join();
        CompletableFuture<Lease> online = gate.acquireAsync(chat);
        CompletableFuture<Lease> parked = off.checkpointAsync();       // off parks for online
        Lease on = online.join();
        GateStateException e = assertThrows(GateStateException.class, () -> gate.unregister(train));
        assertTrue(e.getMessage().contains("has 1 open leases and 0 waiting acquires"), e.getMessage());
        on.close();
        off.close();
        assertTrue(parked.isCompletedExceptionally());
    }

    @Test
    void closeFailsAsyncWaitersAndLeavesNoCount() throws Exception {
        assertFalse(gate.isClosed());
        Lease on = gate.acquire(chat);
        CompletableFuture<Lease> a = gate.acquireAsync(train);
        CompletableFuture<Lease> b = gate.acquireAsync(train, Duration.ofSeconds(1));
        assertEquals(2, gate.waitingAcquires());
        assertEquals(2, GateInternals.waiterCount(gate));
        gate.close();
        assertTrue(gate.isClosed());
        assertInstanceOf(GateClosedException.class, assertThrows(CompletionException.class, a::join).getCause());
        assertInstanceOf(GateClosedException.class, assertThrows(CompletionException.class, b::join).getCause());
        assertEquals(0, gate.waitingAcquires());
        assertEquals(0, GateInternals.waiterCount(gate));
        on.close();
    }

    @Test
    void everyReadReleasesTheLock() throws Exception {
        gate.usage(train);
        gate.usage();
        gate.correctionFactor();
        gate.tenants();
        gate.preemptionState();
        CompletableFuture<Integer> other = CompletableFuture.supplyAsync(() -> gate.openLeases() + gate.waitingAcquires());
        assertEquals(0, other.get(10, TimeUnit.SECONDS), "a read left the gate's lock held");
    }

    @Test
    void removingAListenerKeepsTheOthersInOrder() {
        List<String> got = new ArrayList<>();
        GateListener a = leaseEvents(got, "a");
        GateListener b = leaseEvents(got, "b");
        GateListener c = leaseEvents(got, "c");
        gate.removeListener(events);
        gate.addListener(a);
        gate.addListener(b);
        gate.addListener(c);
        gate.removeListener(b);
        gate.tryAcquire(train).orElseThrow().close();
        assertEquals(List.of("a", "c", "a", "c"), got, "granted and released, to a and c");
        got.clear();
        gate.removeListener(a);
        gate.tryAcquire(train).orElseThrow().close();
        assertEquals(List.of("c", "c"), got);
        gate.removeListener(c);
        assertFalse(gate.hasListeners());
    }

    private static GateListener leaseEvents(List<String> into, String name) {
        return e -> {
            if (e instanceof GateEvent.LeaseGranted || e instanceof GateEvent.LeaseReleased) {
                into.add(name);
            }
        };
    }

    /** A dead owner is reclaimed exactly when it has been seen dead for the dead-owner timeout. */
    @Test
    void aDeadOwnerIsReclaimedAtTheTimeoutNotBefore() throws Exception {
        AtomicReference<Lease> kept = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                gate.acquire(train).close();                   // one closed by its owner
                kept.set(gate.acquire(train));
                gate.acquire(train);                           // two more, neither closed by it
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }, "dies-holding-two");
        t.start();
        t.join();
        kept.get().close();                                    // one closed by this thread
        assertEquals(0, gate.reclaimDeadOwners(), "first pass: seen dead");
        clock.advance(500 * MS - 1);                           // the timer's passes run too
        gate.reclaimDeadOwners();
        assertEquals(1, train.runningLeases(), "reclaimed before the timeout");
        assertEquals(List.of(), events.of(GateEvent.LeaseReclaimed.class));
        clock.advance(1);
        gate.reclaimDeadOwners();
        assertEquals(0, train.runningLeases(), "not reclaimed at the timeout");
        assertEquals(List.of(1), events.of(GateEvent.LeaseReclaimed.class).stream().map(GateEvent.LeaseReclaimed::leases)
                .toList(), "the one lease still open, not the one closed elsewhere");
        assertEquals(0, gate.reclaimDeadOwners());
    }

    /**
     * A thread parks one of its two leases, closes it while parked, and dies holding the other: the
     * reclaim takes exactly the one still open and leaves no parked count behind.
     */
    @Test
    void aDeadOwnersParkedAndClosedLeaseIsNotReclaimedAgain() throws Exception {
        java.util.concurrent.CountDownLatch acquired = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch onlineWaits = new java.util.concurrent.CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                gate.acquire(train);                           // kept open until the thread dies
                Lease parked = gate.acquire(train);
                acquired.countDown();
                onlineWaits.await();
                CompletableFuture<Lease> f = parked.checkpointAsync();
                assertFalse(f.isDone(), "online work waits: the lease parks");
                parked.close();                                // closed by its owner while parked
                assertTrue(f.isCompletedExceptionally());
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "parks-then-dies");
        t.start();
        acquired.await();
        CompletableFuture<Lease> online = gate.acquireAsync(chat);
        onlineWaits.countDown();
        t.join();
        assertNull(failure.get());
        assertEquals(1, train.runningLeases());
        assertEquals(0, gate.usage(train).parkedLeases());
        gate.reclaimDeadOwners();                              // seen dead
        clock.advance(500 * MS);
        gate.reclaimDeadOwners();
        assertEquals(List.of(1), events.of(GateEvent.LeaseReclaimed.class).stream().map(GateEvent.LeaseReclaimed::leases)
                .toList());
        assertEquals(0, train.runningLeases());
        assertEquals(0, gate.usage(train).parkedLeases());
        online.join().close();
        assertEquals(0, gate.openLeases());
    }

    /**
     * An acquire that waits makes a reclaim pass once a reclaim interval (half the dead-owner
     * timeout, 250 ms here) has passed since the last pass, not sooner; the pass notes when the
     * owner was first seen dead, which fixes when its lease is reclaimed. The timer is kept late
     * ({@code jump}) so that only these passes run.
     */
    @Test
    void aWaitingAcquirePassesOncePerReclaimInterval() throws Exception {
        onDeadThread("dies-holding-one", () -> gate.acquire(train));
        clock.jump(T0 + 250 * MS - 1);
        CompletableFuture<Lease> early = gate.acquireAsync(chat);   // too soon for a pass
        assertFalse(early.isDone(), "online work waits for the offline lease");
        clock.jump(T0 + 250 * MS);
        CompletableFuture<Lease> late = gate.acquireAsync(chat);    // a pass: seen dead now
        clock.jump(T0 + 750 * MS - 1);
        assertEquals(0, gate.reclaimDeadOwners(), "dead for less than the timeout since the waiting pass");
        assertFalse(early.isDone());
        clock.jump(T0 + 750 * MS);
        assertEquals(1, gate.reclaimDeadOwners(), "dead for the timeout since the waiting pass");
        assertEquals(0, train.runningLeases());
        assertTrue(early.isDone(), "the reclaim hands the GPU to the waiting online work at once");
        early.join().close();
        late.join().close();
        assertEquals(0, gate.openLeases());
    }

    /**
     * A thread uses a tenant and dies; the lease a live thread then takes of the same tenant is its
     * own, so no reclaim pass ever takes it, however long the first thread has been dead.
     */
    @Test
    void aLiveThreadsLeaseIsNotReclaimedWhenTheTenantsPreviousUserDied() throws Exception {
        onDeadThread("used-chat-first", () -> gate.tryAcquire(chat).orElseThrow().close());
        Lease mine = gate.tryAcquire(chat).orElseThrow();
        assertEquals(0, gate.reclaimDeadOwners());
        clock.advance(500 * MS);
        assertEquals(0, gate.reclaimDeadOwners());
        clock.advance(S);
        assertEquals(0, gate.reclaimDeadOwners());
        assertEquals(List.of(), events.of(GateEvent.LeaseReclaimed.class));
        assertEquals(1, chat.runningLeases(), "the live thread's lease still runs");
        mine.close();
        assertEquals(0, gate.openLeases());
        assertTrue(mine.isClosed());
    }

    /**
     * A lease handed to another thread outlives its owner: once the owner was reclaimed, a
     * checkpoint of the lease from the other thread fails, saying why, and the lease reads as closed.
     */
    @Test
    void aCheckpointOfAReclaimedLeaseFailsFromAnyThread() throws Exception {
        AtomicReference<Lease> orphan = new AtomicReference<>();
        onDeadThread("hands-over-and-dies", () -> orphan.set(gate.acquire(train)));
        gate.reclaimDeadOwners();                              // seen dead
        clock.advance(500 * MS);
        assertEquals(1, events.of(GateEvent.LeaseReclaimed.class).size());
        GateStateException e = assertThrows(GateStateException.class, orphan.get()::checkpoint);
        assertTrue(e.getMessage().contains("reclaimed after its owner thread died"), e.getMessage());
        assertTrue(orphan.get().isClosed());
        assertEquals(0, gate.openLeases());
    }

    /**
     * Another thread blocks in a checkpoint of a lease whose owner died (online work preempted it);
     * when the lease is reclaimed, the blocked checkpoint wakes and fails, rather than waiting until
     * the gate closes (it once did: nothing woke it; without the fix this test failed in 1 of 1 run,
     * on its 20 s hang guard).
     */
    @Test
    void aCheckpointBlockedOnALeaseThatIsReclaimedWakesAndFails() throws Exception {
        AtomicReference<Lease> orphan = new AtomicReference<>();
        onDeadThread("hands-over-and-dies", () -> orphan.set(gate.acquire(train)));
        CompletableFuture<Lease> online = gate.acquireAsync(chat);
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        Thread other = new Thread(() -> {
            try {
                orphan.get().checkpoint();                     // parks for the online work
                outcome.set(new AssertionError("the checkpoint returned"));
            } catch (Throwable e) {
                outcome.set(e);
            }
        }, "checkpoints-an-orphan");
        other.start();
        Await.until("the lease parks", () -> gate.usage(train).parkedLeases() == 1);
        Await.blocked(other);
        Lease on = online.join();                              // kept running: nothing else wakes the checkpoint
        assertEquals(0, gate.reclaimDeadOwners(), "seen dead");
        clock.jump(T0 + 500 * MS);                             // the timer is late: only this pass runs
        assertEquals(1, gate.reclaimDeadOwners());
        Await.until("the blocked checkpoint ends", () -> !other.isAlive());
        GateStateException e = assertInstanceOf(GateStateException.class, outcome.get());
        assertTrue(e.getMessage().contains("reclaimed after its owner thread died"), e.getMessage());
        assertTrue(orphan.get().isClosed());
        assertEquals(0, train.runningLeases() + gate.usage(train).parkedLeases());
        assertEquals(0, GateInternals.waiterCount(gate));
        on.close();
        assertEquals(0, gate.openLeases());
    }

    /** A dead thread that closed every lease it took has nothing to reclaim, then or later. */
    @Test
    void aDeadOwnerWithNoOpenLeaseIsNeverReported() throws Exception {
        onDeadThread("closes-all", () -> gate.acquire(train).close());
        assertEquals(0, gate.reclaimDeadOwners());
        clock.advance(500 * MS);
        assertEquals(0, gate.reclaimDeadOwners());
        clock.advance(500 * MS);
        assertEquals(0, gate.reclaimDeadOwners());
        assertEquals(List.of(), events.of(GateEvent.LeaseReclaimed.class));
    }

    /**
     * A thread parks its lease for online work and dies before it resumes: the reclaim fails the
     * checkpoint's future, takes the parked lease out of the books (no waiter, no parked lease
     * left), and the offline tenant runs nothing when the online work finishes.
     */
    @Test
    void aDeadOwnersParkedLeaseIsReclaimedOutOfTheBooks() throws Exception {
        AtomicReference<CompletableFuture<Lease>> online = new AtomicReference<>();
        CompletableFuture<Lease> resumed = parkedOnADeadThread("parks-and-dies", online);
        assertFalse(resumed.isDone(), "parked while online work runs");
        Lease on = online.get().join();
        assertEquals(1, gate.usage(train).parkedLeases());
        assertEquals(1, GateInternals.waiterCount(gate), "the parked lease");
        gate.reclaimDeadOwners();                              // seen dead
        clock.advance(500 * MS);
        gate.reclaimDeadOwners();
        assertEquals(List.of(1), events.of(GateEvent.LeaseReclaimed.class).stream().map(GateEvent.LeaseReclaimed::leases)
                .toList());
        ExecutionException failed = assertThrows(ExecutionException.class, () -> resumed.get(0, TimeUnit.SECONDS));
        assertInstanceOf(GateStateException.class, failed.getCause());
        assertEquals(0, gate.usage(train).parkedLeases());
        assertEquals(0, GateInternals.waiterCount(gate), "no waiter left");
        on.close();
        assertEquals(0, train.runningLeases(), "the reclaimed lease does not resume");
        assertEquals(0, gate.openLeases());
        assertEquals(0, GateInternals.waiterCount(gate));
    }

    /**
     * A thread's lease parks (online work comes), resumes when the online work is done, and the
     * thread dies holding it: the books count no waiter once it resumed, and the reclaim takes it as
     * the running lease it is.
     */
    @Test
    void aResumedLeaseOfADeadThreadIsReclaimedAsRunning() throws Exception {
        AtomicReference<CompletableFuture<Lease>> online = new AtomicReference<>();
        CompletableFuture<Lease> resumed = parkedOnADeadThread("resumes-then-dies", online);
        assertFalse(resumed.isDone());
        assertEquals(1, GateInternals.waiterCount(gate), "the parked lease");
        online.get().join().close();
        clock.advance(100 * MS);                               // the release delay: train resumes
        assertTrue(resumed.isDone());
        assertEquals(1, train.runningLeases());
        assertEquals(0, gate.usage(train).parkedLeases());
        assertEquals(0, GateInternals.waiterCount(gate), "nothing waits once the lease resumed");
        gate.reclaimDeadOwners();                              // seen dead
        clock.advance(500 * MS);
        gate.reclaimDeadOwners();
        assertEquals(List.of(1), events.of(GateEvent.LeaseReclaimed.class).stream()
                .map(GateEvent.LeaseReclaimed::leases).toList());
        assertEquals(0, train.runningLeases(), "the running lease was reclaimed");
        assertEquals(0, gate.usage(train).parkedLeases());
        assertEquals(0, GateInternals.waiterCount(gate));
        assertEquals(0, gate.openLeases());
    }

    /**
     * A thread takes an offline lease and dies with it parked at an async checkpoint for online work
     * (whose acquire goes into {@code online}); returns the checkpoint's future.
     */
    private CompletableFuture<Lease> parkedOnADeadThread(String name, AtomicReference<CompletableFuture<Lease>> online)
            throws InterruptedException {
        java.util.concurrent.CountDownLatch acquired = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch onlineWaits = new java.util.concurrent.CountDownLatch(1);
        AtomicReference<CompletableFuture<Lease>> resumed = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                Lease l = gate.acquire(train);
                acquired.countDown();
                onlineWaits.await();
                resumed.set(l.checkpointAsync());              // parks; the thread then dies
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }, name);
        t.start();
        acquired.await();
        online.set(gate.acquireAsync(chat));
        onlineWaits.countDown();
        t.join();
        return resumed.get();
    }

    /** Closing one gate of a registry leaves the shared timer running for the others. */
    @Test
    void aRegistrysTimerOutlivesOneOfItsGates() throws Exception {
        GateRegistry registry = GateRegistry.create(GateConfig.custom().usageReportInterval(Duration.ZERO).build());
        try {
            Gate a = registry.gate("GPU-a");
            Gate b = registry.gate("GPU-b");
            assertTrue(registry.remove("GPU-a"));
            assertTrue(a.isClosed());
            Tenant on = b.register(GateTenantSpec.online("on").build());
            Tenant off = b.register(GateTenantSpec.offline("off").build());
            Lease busy = b.acquire(on);
            CompletableFuture<Lease> w = b.acquireAsync(off, Duration.ofMillis(20));
            ExecutionException e = assertThrows(ExecutionException.class, () -> w.get(30, TimeUnit.SECONDS));
            assertInstanceOf(GateTimeoutException.class, e.getCause(), "the shared timer fired the timeout");
            busy.close();
        } finally {
            registry.close();
        }
    }

    /** A gate that started its own timer thread stops it on close. */
    @Test
    void aStandaloneGateStopsItsTimerThreadOnClose() throws Exception {
        java.util.Set<Thread> before = new java.util.HashSet<>(Thread.getAllStackTraces().keySet());
        Gate own = Gate.create("GPU-own", GateConfig.custom().build());
        List<Thread> started = new ArrayList<>();
        for (Thread th : Thread.getAllStackTraces().keySet()) {
            if (!before.contains(th) && th.getName().startsWith("qgpu-gate-timer-")) {
                started.add(th);
            }
        }
        assertEquals(1, started.size(), "timer threads started: " + started);
        assertTrue(started.get(0).isDaemon(), "the timer thread must not keep the JVM alive");
        own.close();
        started.get(0).join(10_000);                            // a hang guard; the verdict is isAlive
        assertFalse(started.get(0).isAlive());
    }
}
