package io.qgpu.core.gate;

import static io.qgpu.core.gate.FakeClock.MS;
import static io.qgpu.core.gate.FakeClock.S;
import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A lease object stands for one acquire only, although the gate keeps the lease's state in a slot
 * that the owner thread's next lease uses again (so that an uncontended acquire + close allocates
 * nothing the JIT cannot remove). An old lease object of a slot, whatever is done with it and from
 * whichever thread, must never close, park or resume the lease now in its slot.
 *
 * <p>The three tests of old lease objects fail on a deliberately broken gate whose slot state ignores
 * the acquire stamp (the old lease object acts on whatever lease holds its slot now): the two on one
 * thread on every run, the cross-thread test with pooled threads in 250 of its 500 rounds on every run (a slot whose
 * lease was ended early is not used again, so every other round meets a fresh slot).
 */
@Timeout(300) // a hang guard only; no test depends on wall time for its verdict (60 s was reached by the spin-started races on a 2-core machine at load 20+)
class GateLeaseStampTest {

    private FakeClock clock;
    private Gate gate;
    private Tenant chat;
    private Tenant train;

    @BeforeEach
    void setUp() {
        clock = new FakeClock(3 * S);
        gate = Gate.create("GPU-s", clock.config().usageReportInterval(Duration.ZERO).releaseDelay(Duration.ZERO)
                .build());
        chat = gate.register(GateTenantSpec.online("chat").build());
        train = gate.register(GateTenantSpec.offline("train").build());
    }

    @AfterEach
    void tearDown() {
        gate.close();
    }

    /** An old lease object, with a later lease of its thread parked and then resumed in its slot. */
    @Test
    void anOldLeaseCannotParkResumeOrCloseTheLeaseInItsSlot() throws Exception {
        Lease first = gate.acquire(train);
        first.close();
        Lease second = gate.acquire(train);                  // same thread: takes first's slot
        assertTrue(first.isClosed());
        assertTrue(first.shouldYield(), "a closed lease may never go on");
        assertThrows(GateStateException.class, first::checkpoint);
        assertThrows(GateStateException.class, first::checkpointAsync);
        assertFalse(second.isClosed());
        assertFalse(second.shouldYield());

        CompletableFuture<Lease> online = gate.acquireAsync(chat);
        assertTrue(second.shouldYield(), "online work claimed the GPU");
        assertTrue(first.shouldYield());
        CompletableFuture<Lease> resumed = second.checkpointAsync(); // second parks
        Lease on = online.join();
        assertEquals(1, gate.usage(train).parkedLeases());
        assertThrows(GateStateException.class, first::checkpointAsync, "an old lease asked to resume");
        first.close();
        Thread other = new Thread(first::close, "old-closer");
        other.start();
        other.join();
        assertEquals(1, gate.usage(train).parkedLeases(), "an old close ended the parked lease in its slot");
        assertFalse(second.isClosed());

        clock.advance(10 * MS);
        on.close();                                          // release delay 0: train resumes
        assertSame(second, resumed.join());
        assertEquals(1, train.runningLeases());
        first.close();
        assertFalse(second.isClosed(), "an old close ended the resumed lease in its slot");
        clock.advance(7 * MS);
        second.close();
        assertEquals(0, gate.openLeases());
        assertEquals(7 * MS, gate.usage(train).totalLeaseNanos(), "the resumed lease's time was lost");
    }

    /** Nested leases of one thread: each closes once, and a slot passed on is not the one still open. */
    @Test
    void nestedLeasesOfOneThreadEachEndOnce() throws Exception {
        Lease outer = gate.acquire(train);
        Lease inner = gate.acquire(train);
        assertEquals(2, train.runningLeases());
        inner.close();
        Lease next = gate.acquire(train);                    // takes inner's slot
        inner.close();
        outer.close();
        outer.close();
        assertTrue(outer.isClosed());
        assertFalse(next.isClosed(), "a second close of another lease ended this one");
        assertEquals(1, train.runningLeases());
        Lease fourth = gate.acquire(train);                  // takes outer's slot
        outer.close();
        inner.close();
        assertEquals(2, train.runningLeases());
        clock.advance(4 * MS);
        next.close();
        fourth.close();
        assertEquals(0, gate.openLeases());
        assertEquals(4 * MS, gate.usage(train).totalLeaseNanos());
    }

    /**
     * A lease that another thread closed is not used again by the owner, however late the owner
     * closes it too; the owner's next lease works normally.
     */
    @Test
    void aLeaseClosedByAnotherThreadStaysClosedForItsOwner() throws Exception {
        Lease l = gate.acquire(train);
        clock.advance(3 * MS);
        Thread other = new Thread(l::close, "closer");
        other.start();
        other.join();
        assertTrue(l.isClosed());
        assertEquals(0, train.runningLeases());
        clock.advance(50 * MS);
        l.close();                                           // the owner closes too: nothing happens
        assertEquals(0, train.runningLeases());
        Lease again = gate.acquire(train);
        l.close();
        assertFalse(again.isClosed());
        clock.advance(2 * MS);
        again.close();
        assertEquals(5 * MS, gate.usage(train).totalLeaseNanos());
        assertEquals(0, gate.openLeases());
    }

    /**
     * A pooled thread acquires and closes leases in a loop; in each round, while the current lease is
     * open, another pooled thread closes the owner's previous (closed) lease object, which refers to
     * the slot of the current one. The two threads take turns by a handshake (no timing involved),
     * so every round tests a cross-thread close of an old lease object against a live lease in its
     * slot: no current lease may end before its owner closes it, and every lease's time counts.
     */
    @Test
    void oldLeasesClosedFromAnotherPooledThreadNeverEndTheCurrentOne() throws Exception {
        int rounds = 500;
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            AtomicReference<Lease> old = new AtomicReference<>();
            AtomicInteger go = new AtomicInteger(-1);
            AtomicInteger ack = new AtomicInteger(-1);
            Future<?> closer = pool.submit(() -> {
                for (int i = 0; i < rounds; i++) {
                    while (go.get() < i) {
                        Thread.onSpinWait();
                    }
                    Lease o = old.get();
                    if (o != null) {
                        o.close();
                    }
                    ack.set(i);
                }
            });
            Future<Integer> owner = pool.submit(() -> {
                int endedEarly = 0;
                for (int i = 0; i < rounds; i++) {
                    Lease l = gate.acquire(train);
                    clock.advance(20);
                    go.set(i);                               // the closer closes the old lease now
                    while (ack.get() < i) {
                        Thread.onSpinWait();
                    }
                    if (l.isClosed()) {
                        endedEarly++;
                    }
                    l.close();
                    old.set(l);
                }
                return endedEarly;
            });
            assertEquals(0, owner.get(), "current leases ended by a close of an old lease object");
            closer.get();
        } finally {
            pool.shutdownNow();
        }
        assertEquals(0, gate.openLeases());
        assertEquals(rounds * 20L, gate.usage(train).totalLeaseNanos(), "lease time lost");
    }

    /**
     * The owner thread and another thread close the same lease at the same instant, both released by
     * a spin on one counter (no lock). The lease opened its tenant's busy period on the lock-free path,
     * so the owner's close clears the opener bit of the tenant's word while the other thread's close,
     * under the gate's lock, tries to clear the same bit: whichever is first ends the lease, exactly
     * once. Every round: no close throws, the count is back at 0 and the lease's time counts once.
     *
     * <p>Against a broken gate whose lock-side stop writes the lease's state without clearing the bit
     * (so both closes lower the count), this test failed on each of 3 runs (the other thread's close
     * threw "running lease count would go below 0", in round 1, 1 and 8; and again, after its
     * handshake moved into {@link SpinRounds}, in round 3, 4 and 5).
     */
    @Test
    void theOwnerAndAnotherThreadClosingTheSameLeaseAtOnceEndItOnce() throws Exception {
        int rounds = 20_000;
        SpinRounds.run(rounds, new SpinRounds.Round<Lease>() {
            @Override
            public Lease prepare(int round) throws InterruptedException {
                Lease l = gate.acquire(train);
                clock.advance(20);
                return l;
            }

            @Override
            public void owner(Lease l) {
                l.close();
            }

            @Override
            public void other(Lease l) {
                l.close();
            }

            @Override
            public void check(int round, Lease l) {
                assertTrue(l.isClosed());
                assertEquals(0, train.runningLeases(), "round " + round);
            }
        });
        assertEquals(0, gate.openLeases());
        assertEquals(rounds * 20L, gate.usage(train).totalLeaseNanos(), "lease time counted once per lease");
    }

    /**
     * The owner closes its lease while another thread calls {@code checkpointAsync()} on it with the
     * permit revoked (an online acquire waits), both released by a spin on one counter. Whichever comes
     * first, the checkpoint's future fails (the lease is closed: before the park, or while parked) and
     * nothing stays counted: the tenant runs no lease and has none parked, and the online acquire gets
     * the GPU.
     *
     * <p>Before the fix the checkpoint read the lease's state twice under the gate's lock; an owner's
     * close between the two reads made it take the closed lease for parked and register it to resume,
     * with a future that nothing completed. This test failed on each of 3 runs of that code, in round
     * 21, 190 and 528 (after its handshake moved into {@link SpinRounds}: 850, 128 and 128).
     */
    @Test
    void aCheckpointFromAnotherThreadRacingTheOwnersCloseLeavesNothingBehind() throws Exception {
        final class Race {
            final Lease lease;
            final CompletableFuture<Lease> online;
            volatile CompletableFuture<Lease> checkpoint;

            Race(Lease lease, CompletableFuture<Lease> online) {
                this.lease = lease;
                this.online = online;
            }
        }
        SpinRounds.run(2_000, new SpinRounds.Round<Race>() {
            @Override
            public Race prepare(int round) throws InterruptedException {
                Lease l = gate.acquire(train);
                clock.advance(20);
                CompletableFuture<Lease> online = gate.acquireAsync(chat);   // revokes train's permit
                assertFalse(online.isDone(), "round " + round);
                return new Race(l, online);
            }

            @Override
            public void owner(Race r) {
                r.lease.close();
            }

            @Override
            public void other(Race r) {
                try {
                    r.checkpoint = r.lease.checkpointAsync();
                } catch (GateStateException e) {
                    r.checkpoint = CompletableFuture.failedFuture(e);
                }
            }

            @Override
            public void check(int round, Race r) {
                assertTrue(r.checkpoint.isCompletedExceptionally(), "round " + round + ": checkpoint " + r.checkpoint);
                assertEquals(0, train.runningLeases(), "round " + round);
                assertEquals(0, gate.usage(train).parkedLeases(), "round " + round);
                assertTrue(r.online.isDone(), "round " + round + ": the online acquire still waits");
                clock.advance(20);
                r.online.join().close();
            }
        });
        assertEquals(0, gate.openLeases());
    }

    /**
     * A thread blocked in {@code checkpoint()} of a lease that another thread then closes wakes, when
     * the tenant may run again, to a closed lease: it fails, and the tenant's running count stays at 0.
     * Before the fix nothing woke it (the close did not signal, and the tenant, with nothing left to
     * run, was never granted again): this test found the worker still blocked after 20 s. Woken
     * without the second part of the fix (a resume checks that the lease is still parked), its retry
     * would take the closed lease for parked and count it as running once the GPU is free.
     */
    @Test
    void aCheckpointWaitingOnALeaseThatAnotherThreadClosesFailsAndCountsNothing() throws Exception {
        Lease l = gate.acquire(train);
        CompletableFuture<Lease> online = gate.acquireAsync(chat);
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        Thread worker = new Thread(() -> {
            try {
                l.checkpoint();                                // parks for the online work
                outcome.set(new AssertionError("the checkpoint returned"));
            } catch (Throwable e) {
                outcome.set(e);
            }
        }, "checkpoints");
        worker.start();
        Await.until("the lease parks", () -> gate.usage(train).parkedLeases() == 1);
        Await.blocked(worker);
        l.close();                                             // from this thread: the lease was parked
        assertTrue(l.isClosed());
        clock.advance(5 * MS);
        online.join().close();                                 // train may run again: the worker wakes
        worker.join(20_000);
        assertFalse(worker.isAlive());
        assertInstanceOf(GateStateException.class, outcome.get());
        assertEquals(0, train.runningLeases());
        assertEquals(0, gate.usage(train).parkedLeases());
        assertEquals(0, gate.openLeases());
    }
}
