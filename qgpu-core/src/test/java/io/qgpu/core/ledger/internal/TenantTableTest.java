package io.qgpu.core.ledger.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.Placement;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Slice;
import io.qgpu.core.ledger.ReserveResult;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The entry protocol on its own, with installers and removers that succeed, refuse, throw or
 * block, so that every path that settles an entry is taken. A hang is a failure: the timeout guard
 * only stops it (on the unfixed protocol an entry left pending made the reads spin forever).
 */
class TenantTableTest {

    private static final Duration HANG_GUARD = Duration.ofSeconds(10);

    /** Own threads: the common pool has one thread on a 2-core machine, which would serialize the races. */
    private final ExecutorService pool = Executors.newFixedThreadPool(3);

    @AfterEach
    void stop() {
        pool.shutdownNow();
    }

    private static Placement placement(String id, String node) {
        return new Placement(Claim.builder(id).memoryGiB(1).compute(5, 10).build(), node,
                List.of(new Slice(node + "-g0", 1L << 30, 5, 10)));
    }

    private static ReserveResult.Refused refusal(String id) {
        return new ReserveResult.Refused(id, List.of(Reason.of(ReasonCode.INSUFFICIENT_MEMORY, id, "full")));
    }

    @Test
    void aReservedEntryIsCommittedAndADuplicateIsRefusedNamingTheNode() {
        TenantTable t = new TenantTable();
        Placement p = placement("a", "n1");
        assertTrue(t.reserve(p, ReserveResult.Reserved::new).reserved());
        assertEquals(Optional.of(p), t.committed("a"));
        assertTrue(t.contains("a"));
        assertEquals(1, t.size());

        ReserveResult dup = t.reserve(placement("a", "n2"), x -> {
            throw new AssertionError("a duplicate must not be installed");
        });
        ReserveResult.Refused r = assertInstanceOf(ReserveResult.Refused.class, dup);
        assertEquals(ReasonCode.DUPLICATE_TENANT, r.reasons().get(0).code());
        assertTrue(r.summary().contains("already reserved on n1"), r.summary());
        assertEquals(Map.of("a", p), t.committed());
    }

    @Test
    void aRefusedReservationLeavesNoEntry() {
        TenantTable t = new TenantTable();
        ReserveResult r = t.reserve(placement("a", "n1"), x -> refusal("a"));
        assertFalse(r.reserved());
        assertFalse(t.contains("a"));
        assertEquals(0, t.size());
        assertEquals(Optional.empty(), t.committed("a"));
    }

    @Test
    void anInstallerThatThrowsLeavesNoEntryAndTheIdIsFreeAgain() {
        TenantTable t = new TenantTable();
        IllegalStateException boom = new IllegalStateException("boom");
        assertSame(boom, assertThrows(IllegalStateException.class,
                () -> t.reserve(placement("a", "n1"), x -> {
                    throw boom;
                })));
        assertTimeoutPreemptively(HANG_GUARD, () -> {
            assertFalse(t.contains("a"));
            assertEquals(Optional.empty(), t.committed("a"));
            assertEquals(Optional.empty(), t.release("a", x -> {
                throw new AssertionError("nothing to remove");
            }));
            assertTrue(t.reserve(placement("a", "n1"), ReserveResult.Reserved::new).reserved());
        });
    }

    @Test
    void releaseHandsThePlacementToTheRemoverOnceAndForgetsTheEntry() {
        TenantTable t = new TenantTable();
        Placement p = placement("a", "n1");
        t.reserve(p, ReserveResult.Reserved::new);
        AtomicInteger removed = new AtomicInteger();
        assertEquals(Optional.of(p), t.release("a", x -> {
            assertSame(p, x);
            removed.incrementAndGet();
        }));
        assertEquals(Optional.empty(), t.release("a", x -> removed.incrementAndGet()));
        assertEquals(1, removed.get());
        assertFalse(t.contains("a"));
        assertEquals(Optional.empty(), t.committed("a"));
    }

    @Test
    void aRemoverThatThrowsStillSettlesTheEntry() {
        TenantTable t = new TenantTable();
        t.reserve(placement("a", "n1"), ReserveResult.Reserved::new);
        assertThrows(IllegalStateException.class, () -> t.release("a", x -> {
            throw new IllegalStateException("boom");
        }));
        assertTimeoutPreemptively(HANG_GUARD, () -> {
            assertEquals(Optional.empty(), t.committed("a"));
            assertFalse(t.contains("a"));
        });
    }

    /** A reservation held inside its installer until {@link #decide()}; the installer then answers {@code outcome}. */
    private final class Held {
        final CountDownLatch decide = new CountDownLatch(1);
        final CompletableFuture<ReserveResult> result;

        Held(TenantTable t, String id, String node, Function<Placement, ReserveResult> outcome) throws InterruptedException {
            CountDownLatch installing = new CountDownLatch(1);
            result = CompletableFuture.supplyAsync(() -> t.reserve(placement(id, node), x -> {
                installing.countDown();
                await(decide);
                return outcome.apply(x);
            }), pool);
            assertTrue(installing.await(10, TimeUnit.SECONDS));
        }

        ReserveResult decide() throws Exception {
            decide.countDown();
            return result.get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aDuplicateWaitsForAPendingReservationAndRetriesWhenItIsRefused() throws Exception {
        TenantTable t = new TenantTable();
        Held first = new Held(t, "a", "n1", x -> refusal("a"));
        assertTrue(t.contains("a"), "the pending entry holds the id");
        CompletableFuture<ReserveResult> second = CompletableFuture.supplyAsync(() ->
                t.reserve(placement("a", "n2"), ReserveResult.Reserved::new), pool);
        assertFalse(first.decide().reserved());
        assertTrue(second.get(10, TimeUnit.SECONDS).reserved(), "retried after the pending one was refused");
        assertEquals("n2", t.committed("a").orElseThrow().nodeName());
    }

    @Test
    void aDuplicateOfAPendingReservationThatCommitsIsRefused() throws Exception {
        TenantTable t = new TenantTable();
        Held first = new Held(t, "a", "n1", ReserveResult.Reserved::new);
        CompletableFuture<Optional<Placement>> reader = CompletableFuture.supplyAsync(() -> t.committed("a"), pool);
        CompletableFuture<ReserveResult> second = CompletableFuture.supplyAsync(() ->
                t.reserve(placement("a", "n2"), ReserveResult.Reserved::new), pool);
        assertTrue(first.decide().reserved());
        assertFalse(second.get(10, TimeUnit.SECONDS).reserved());
        // the reader waited for the pending entry to settle: it sees the committed placement
        assertEquals("n1", reader.get(10, TimeUnit.SECONDS).orElseThrow().nodeName());
        assertEquals("n1", t.committed("a").orElseThrow().nodeName());
    }

    @Test
    void bulkReadsSkipUnsettledEntries() throws Exception {
        TenantTable t = new TenantTable();
        t.reserve(placement("b", "n1"), ReserveResult.Reserved::new);
        Held pending = new Held(t, "a", "n1", ReserveResult.Reserved::new);
        assertEquals(List.of("b"), List.copyOf(t.committed().keySet()));
        assertEquals(2, t.size(), "size counts every entry, settled or not");
        pending.decide();
        assertEquals(List.of("a", "b"), List.copyOf(t.committed().keySet()));
    }

    @Test
    void putCommittedAndForgetAreForStructuralChanges() {
        TenantTable t = new TenantTable();
        Placement p = placement("a", "n1");
        t.putCommitted(p);
        assertEquals(Optional.of(p), t.committed("a"));
        t.forget("a");
        assertFalse(t.contains("a"));
        assertEquals(Optional.empty(), t.committed("a"));
    }

    private static void await(CountDownLatch latch) {
        try {
            assertTrue(latch.await(10, TimeUnit.SECONDS));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
