package io.qgpu.core.placement;

import io.qgpu.core.internal.NodeFeed;
import static io.qgpu.core.placement.Nodes.claim;
import static io.qgpu.core.placement.Nodes.on;
import static io.qgpu.core.placement.Nodes.t4;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Node;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.core.ledger.Ledger;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The engine's index follows changes that other parties make directly on the ledger (not through
 * the engine), through the ledger's change feed. With a shortlist of one, the node ranked first by
 * the index's keys is the only one whose GPUs are searched, so a stale key changes the answer.
 */
class EngineFollowsLedgerTest {

    private final Node a = t4("a", 1);
    private final Node b = t4("b", 1);
    private final Node c = t4("c", 1);
    private final Ledger ledger = Ledger.create(List.of(a, b, c));
    private final PlacementEngine engine = PlacementEngine.builder(ledger)
            .config(PlacementConfig.builder().nodePolicy(PlacementPolicy.BINPACK).gpuPolicy(PlacementPolicy.BINPACK)
                    .shortlist(1).build())
            .build();

    private String place(String id) {
        PlacementResult r = engine.place(claim(id, 1, 5, 50));
        return assertInstanceOf(PlacementResult.Placed.class, r, () -> r.toString()).placement().nodeName();
    }

    @Test
    void followsReservationsAndReleasesMadeDirectlyOnTheLedger() {
        // the engine indexes every node (all empty: ties go to cluster order)
        assertEquals("a", place("probe"));
        engine.release("probe");

        // another party fills c: binpack must now prefer c
        assertTrue(ledger.reserve(on(claim("other-c", 8, 30, 100), c, 0)).reserved());
        assertEquals("c", place("x"));

        // another party frees c and fills b further than c is now
        ledger.release("other-c");
        assertTrue(ledger.reserve(on(claim("other-b", 12, 50, 100), b, 0)).reserved());
        assertEquals("b", place("y"));
    }

    @Test
    void followsChangesAfterTheFeedOverflowed() {
        assertEquals("a", place("probe"));
        engine.release("probe");
        for (int i = 0; i < NodeFeed.CAPACITY / 2 + 1; i++) {
            assertTrue(ledger.reserve(on(claim("churn", 1, 5, 50), b, 0)).reserved());
            ledger.release("churn");
        }
        assertTrue(ledger.reserve(on(claim("other-c", 10, 40, 100), c, 0)).reserved());
        assertEquals("c", place("x"));
    }

    @Test
    void followsStructuralChanges() {
        assertEquals("a", place("probe"));
        engine.release("probe");
        ledger.removeNode("a");
        Node d = t4("d", 1);
        ledger.addNode(d);
        assertTrue(ledger.reserve(on(claim("other-d", 10, 40, 100), d, 0)).reserved());
        assertEquals("d", place("x"));
    }
}
