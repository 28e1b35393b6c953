package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Two updates of sibling nodes at once, in a controlled schedule (no sleeps, no timing): the first
 * update is stopped inside its first rewrite of the shared parent, after it has read both children,
 * until the second update has finished or is blocked; then both finish. Afterwards every entry must
 * be the combination of its children ({@link RoomTree#consistent}). The tree serialises its updates,
 * so the second waits for the first and the tree is exact. The same schedule on a tree that updates
 * without the lock ({@code locked = false}) lets the second update finish in between, and the first
 * then writes the parent from the child it read before: {@link #aTreeWithoutTheLockIsCaught} shows
 * the test catches it, every time.
 */
class RoomTreeContentionTest {

    private static final long OLD = NodeIndex.key(0.5, 1, 1, 0, 10, 1L << 30);
    private static final long NEW_LEFT = NodeIndex.key(0.2, 2, 2, 1, 20, 2L << 30);
    private static final long NEW_RIGHT = NodeIndex.key(0.9, 8, 8, 8, 100, 80L << 30);

    @Test
    void updatesOfSiblingsAtOnceLeaveEveryEntryExact() throws Exception {
        assertTrue(race(true).consistent());
    }

    @Test
    void aTreeWithoutTheLockIsCaught() throws Exception {
        assertFalse(race(false).consistent(), "the unlocked tree must be left with a stale parent");
    }

    private static Hooked race(boolean locked) throws Exception {
        Hooked tree = new Hooked(8, locked);
        for (int i = 0; i < 8; i++) {
            tree.update(i, OLD);
        }
        Thread first = new Thread(() -> tree.update(0, NEW_LEFT));
        Thread second = new Thread(() -> {
            tree.update(1, NEW_RIGHT);
            tree.secondDone = true;
        });
        tree.second = second;
        tree.pauseIn = first;
        first.start();
        while (!tree.paused) {
            Thread.onSpinWait();   // the first update now holds both children's old values
        }
        second.start();
        first.join();
        second.join();
        return tree;
    }

    /**
     * A tree that stops the thread {@code pauseIn} inside its first {@link #combine} until the thread
     * {@code second} has finished its update or is blocked on the tree's lock; broken on purpose
     * when {@code locked} is false (updates without the lock).
     */
    static final class Hooked extends RoomTree {
        private final boolean locked;
        volatile Thread pauseIn;
        volatile Thread second;
        volatile boolean paused;
        volatile boolean secondDone;

        Hooked(int size, boolean locked) {
            super(size);
            this.locked = locked;
        }

        @Override
        void update(int i, long key) {
            if (locked) {
                super.update(i, key);
            } else {
                write(i, key);
            }
        }

        @Override
        long combine(long a, long b) {
            if (Thread.currentThread() == pauseIn) {
                pauseIn = null;
                paused = true;
                Thread t = second;
                while (!secondDone && (t == null || t.getState() != Thread.State.BLOCKED)) {
                    Thread.onSpinWait();
                }
            }
            return super.combine(a, b);
        }
    }
}
