package io.qgpu.core.gate;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Rounds of a race between an owner thread and another thread, both pooled, released together by a
 * spin on one counter (no lock, no sleep): in each round the owner prepares a value, both act on it
 * at once, and the owner checks the outcome once both are done. What the other thread throws is
 * kept and fails the round.
 */
final class SpinRounds {

    /** One round's parts; {@code S} is what the owner prepares. */
    interface Round<S> {
        S prepare(int round) throws Exception;

        void owner(S value) throws Exception;

        void other(S value);

        void check(int round, S value) throws Exception;
    }

    private SpinRounds() {}

    static final int SPINS_BEFORE_YIELD = 2_000;

    /** One step of a wait: a spin hint, or a yield once {@code limit} spins have passed. */
    static void pause(int spins, int limit) {
        if (spins < limit) {
            Thread.onSpinWait();
        } else {
            Thread.yield();
        }
    }

    static <S> void run(int rounds, Round<S> round) throws Exception {
        run(rounds, round, false);
    }

    /**
     * As {@link #run(int, Round)}; with {@code yielding}, a wait yields the processor after
     * {@value #SPINS_BEFORE_YIELD} spins, so that rounds go on at a useful pace on an oversubscribed
     * machine (it also makes the two threads meet less often when the machine is loaded: a test that
     * uses it states its own budget, measured with it).
     */
    static <S> void run(int rounds, Round<S> round, boolean yielding) throws Exception {
        int limit = yielding ? SPINS_BEFORE_YIELD : Integer.MAX_VALUE;
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            AtomicReference<S> current = new AtomicReference<>();
            AtomicInteger ready = new AtomicInteger(-1);
            AtomicInteger go = new AtomicInteger(-1);
            AtomicInteger done = new AtomicInteger(-1);
            AtomicReference<String> failed = new AtomicReference<>();
            Future<?> other = pool.submit(() -> {
                for (int i = 0; i < rounds; i++) {
                    for (int spins = 0; ready.get() < i; spins++) {
                        pause(spins, limit);
                    }
                    S value = current.get();
                    go.set(i);
                    try {
                        round.other(value);
                    } catch (RuntimeException e) {
                        failed.compareAndSet(null, "round " + i + ": the other thread threw " + e);
                    } finally {
                        done.set(i);
                    }
                }
            });
            Future<?> owner = pool.submit(() -> {
                for (int i = 0; i < rounds; i++) {
                    S value = round.prepare(i);
                    current.set(value);
                    ready.set(i);
                    for (int spins = 0; go.get() < i; spins++) {
                        pause(spins, limit);
                    }
                    round.owner(value);
                    for (int spins = 0; done.get() < i; spins++) {
                        pause(spins, limit);
                    }
                    if (failed.get() != null) {
                        throw new AssertionError(failed.get());
                    }
                    round.check(i, value);
                }
                return null;
            });
            owner.get();
            other.get();
        } finally {
            pool.shutdownNow();
        }
    }
}
