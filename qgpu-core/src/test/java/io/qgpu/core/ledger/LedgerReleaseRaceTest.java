package io.qgpu.core.ledger;

import static io.qgpu.core.ledger.Fixtures.t4Node;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Two threads release the same tenant at the same instant, released by a spin on a shared round
 * number (not a lock, so that both reach {@code release} within a few nanoseconds). Exactly one of
 * them gets the placement; the other is told "nothing held", and a caller told that must afterwards
 * see the tenant gone: its memory free on the node and no placement for its id.
 *
 * <p>Seeded bug: before the fix, the loser of the entry's status compare-and-set returned "nothing
 * held" before the winner had taken the slices off the node. Against that code this test failed in
 * each of 4 runs on a loaded 2-core machine: 177 of 40,000 rounds, then 1,753, 794 and 1,192 of
 * 10,000 rounds were stale, the first at round 3 to 642. The number of rounds is
 * {@code qgpu.ledger.releaseRounds} (default {@value #DEFAULT_ROUNDS}).
 */
class LedgerReleaseRaceTest {

    static final int DEFAULT_ROUNDS = 20_000;
    private static final int ROUNDS = Integer.getInteger("qgpu.ledger.releaseRounds", DEFAULT_ROUNDS);

    @Test
    void aReleaseToldNothingIsHeldSeesTheTenantGone() throws Exception {
        Node node = t4Node("n", 1);
        Ledger ledger = Ledger.create(List.of(node));
        Placement p = Fixtures.on(Claim.builder("t").memoryGiB(6).compute(40, 100).build(), node, 0);

        AtomicInteger round = new AtomicInteger();     // the spin start: both threads wait for it
        AtomicInteger finished = new AtomicInteger();  // rounds the other thread has finished
        AtomicInteger wins = new AtomicInteger();
        AtomicInteger stale = new AtomicInteger();
        AtomicReference<String> firstStale = new AtomicReference<>();

        Thread other = new Thread(() -> {
            for (int r = 1; r <= ROUNDS; r++) {
                while (round.get() < r) {
                    Thread.onSpinWait();
                }
                releaseAndCheck(ledger, r, wins, stale, firstStale);
                finished.set(r);
            }
        }, "releaser-2");
        other.setDaemon(true);
        other.start();

        for (int r = 1; r <= ROUNDS; r++) {
            assertTrue(ledger.reserve(p).reserved(), "round " + r + ": reserve");
            round.set(r);
            releaseAndCheck(ledger, r, wins, stale, firstStale);
            int spins = 0;
            while (finished.get() < r) {
                if (++spins % 1_000 == 0) {
                    Thread.yield(); // two cores shared with others: let the other thread run
                }
                Thread.onSpinWait();
            }
        }
        other.join();

        assertEquals(0, stale.get(), () -> stale.get() + " of " + ROUNDS
                + " rounds: a release that returned empty still saw the tenant; first: " + firstStale.get());
        assertEquals(ROUNDS, wins.get(), "exactly one release per round returns the placement");
        assertEquals(0, ledger.node("n").orElseThrow().gpu(0).memoryUsed());
    }

    private static void releaseAndCheck(Ledger ledger, int r, AtomicInteger wins, AtomicInteger stale,
                                        AtomicReference<String> firstStale) {
        Optional<Placement> got = ledger.release("t");
        if (got.isPresent()) {
            wins.incrementAndGet();
            return;
        }
        long used = ledger.node("n").orElseThrow().gpu(0).memoryUsed();
        boolean held = ledger.placement("t").isPresent();
        if (used != 0 || held) {
            stale.incrementAndGet();
            firstStale.compareAndSet(null, "round " + r + ": memoryUsed " + used + ", placement present " + held);
        }
    }
}
