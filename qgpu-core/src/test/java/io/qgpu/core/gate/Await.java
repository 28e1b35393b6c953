package io.qgpu.core.gate;

import java.util.function.BooleanSupplier;

/**
 * Waits for another thread to reach a state, by polling with {@link Thread#yield()} (no sleeping).
 * The wall-clock limit only turns a hang into a failure; correctness never depends on it.
 */
final class Await {
    private Await() {
    }

    static void until(String what, BooleanSupplier condition) {
        long give = System.nanoTime() + 20_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > give) {
                throw new AssertionError("timed out waiting until " + what);
            }
            Thread.yield();
        }
    }

    /** Until {@code t} is blocked (waiting or parked). */
    static void blocked(Thread t) {
        until(t.getName() + " blocks", () -> {
            Thread.State s = t.getState();
            return s == Thread.State.WAITING || s == Thread.State.TIMED_WAITING || !t.isAlive();
        });
    }
}
