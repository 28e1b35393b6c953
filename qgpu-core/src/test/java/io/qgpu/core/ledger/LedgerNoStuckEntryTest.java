package io.qgpu.core.ledger;

import static io.qgpu.core.ledger.Fixtures.t4Node;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.mockito.Mockito.spy;
import static org.mockito.Mockito.when;

import io.qgpu.api.Claim;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * A reservation that fails with an exception half-way (here: a placement whose slices cannot be
 * read, injected with a Mockito spy) leaves no entry behind: the exception reaches the caller, the
 * tenant id is free again, and no reader waits for an entry that will never settle.
 *
 * <p>Seeded bug: before {@code reserve} resolved its entry in a {@code finally}, the entry stayed
 * pending and every read of that tenant spun forever; against that code this test failed on its
 * timeout guard (the first read, {@code placement("t")}, never returned). The guard only stops a
 * hang; the assertions are exact.
 */
class LedgerNoStuckEntryTest {

    private static final Duration HANG_GUARD = Duration.ofSeconds(10);

    @Test
    void anExceptionInsideReserveLeavesTheTenantFreeAndReadersDoNotWait() {
        Node node = t4Node("n", 1);
        Ledger ledger = Ledger.create(List.of(node));
        Placement good = Fixtures.on(Claim.builder("t").memoryGiB(6).compute(40, 100).build(), node, 0);
        Placement broken = spy(good);
        IllegalStateException injected = new IllegalStateException("injected");
        when(broken.slices()).thenThrow(injected);

        IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> ledger.reserve(broken));
        assertSame(injected, thrown);

        assertTimeoutPreemptively(HANG_GUARD, () -> {
            assertEquals(Optional.empty(), ledger.placement("t"));
            assertEquals(Optional.empty(), ledger.release("t"));
            assertEquals(0, ledger.size());
            assertEquals(List.of(), ledger.placements());
            assertEquals(0, ledger.node("n").orElseThrow().gpu(0).memoryUsed());
            assertTrue(ledger.reserve(good).reserved(), "the id is free again");
            assertEquals(Optional.of(good), ledger.placement("t"));
        });
    }
}
