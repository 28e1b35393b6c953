package io.qgpu.kubernetes.node.reconcile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class NodeTransactionTest {
    final List<String> log = new ArrayList<>();

    @Test
    void withoutACommitEveryStepIsUndoneNewestFirst() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> {
            try (NodeTransaction tx = NodeTransaction.begin("t")) {
                tx.undo("one", () -> log.add("undo one"));
                tx.undo("two", () -> log.add("undo two"));
                throw new IllegalStateException("step three failed");
            }
        });
        assertEquals("step three failed", e.getMessage());
        assertEquals(List.of("undo two", "undo one"), log);
    }

    @Test
    void aCommitKeepsEverything() {
        try (NodeTransaction tx = NodeTransaction.begin("t")) {
            tx.undo("one", () -> log.add("undo one"));
            tx.commit();
        }
        assertTrue(log.isEmpty());
    }

    @Test
    void anUndoThatFailsDoesNotStopTheOthersAndIsReportedAsSuppressed() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> {
            try (NodeTransaction tx = NodeTransaction.begin("t")) {
                tx.undo("one", () -> log.add("undo one"));
                tx.undo("two", () -> {
                    throw new IllegalArgumentException("disk gone");
                });
                tx.undo("three", () -> log.add("undo three"));
                throw new IllegalStateException("failed");
            }
        });
        assertEquals(List.of("undo three", "undo one"), log);
        assertEquals(1, e.getSuppressed().length);
        assertTrue(e.getSuppressed()[0] instanceof NodeTransaction.UndoFailedException);
        assertTrue(e.getSuppressed()[0].getMessage().contains("'two' failed: disk gone"), e.getSuppressed()[0].getMessage());
    }

    @Test
    void noStepAfterTheCommit() {
        NodeTransaction tx = NodeTransaction.begin("t");
        tx.commit();
        assertThrows(IllegalStateException.class, () -> tx.undo("late", () -> { }));
        tx.close();
    }
}
