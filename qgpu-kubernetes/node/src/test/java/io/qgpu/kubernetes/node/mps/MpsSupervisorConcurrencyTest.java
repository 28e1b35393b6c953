package io.qgpu.kubernetes.node.mps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.RepeatedTest;

/**
 * Many threads call {@link MpsSupervisor#tick()} when a crashed daemon's back-off is over: the daemon is
 * started exactly once. The fake control holds the first start open until every other thread is either
 * blocked on the supervisor's lock or inside a start itself, so the outcome does not depend on timing:
 * with the lock, the others are blocked and find the daemon running when they get in (one start);
 * without it, they all see the restart due and start it too.
 *
 * <p>Seeded bug, checked by hand: with {@code synchronized} removed from {@code tick()} (and from
 * {@code status()}), this test fails on every repetition with 9 starts (the first one and one restart per
 * thread) instead of 2.
 */
class MpsSupervisorConcurrencyTest {
    private static final String GPU = "GPU-a";
    private static final int THREADS = 8;

    @RepeatedTest(5)
    void concurrentTicksRestartACrashedDaemonOnce() throws Exception {
        ManualTicker ticker = new ManualTicker();
        Set<String> alive = ConcurrentHashMap.newKeySet();
        AtomicInteger starts = new AtomicInteger();
        Set<Thread> inStart = ConcurrentHashMap.newKeySet();
        List<Thread> tickers = new ArrayList<>();
        MpsControl control = new MpsControl() {
            @Override
            public void start(String gpu) throws IOException {
                starts.incrementAndGet();
                inStart.add(Thread.currentThread());
                awaitOthersBlockedOrStarting(tickers, inStart);
                alive.add(gpu);
            }

            @Override
            public boolean healthy(String gpu) {
                return alive.contains(gpu);
            }

            @Override
            public void quit(String gpu) {
                alive.remove(gpu);
            }
        };
        MpsSupervisor s = new MpsSupervisor(control, new MpsSupervisor.Settings(Duration.ofSeconds(5), Duration.ofSeconds(1),
                Duration.ofSeconds(8), Duration.ofMinutes(5)), ticker);
        s.share(List.of(GPU)); // started from this thread, before the tickers exist: nothing to wait for
        assertEquals(1, starts.get());
        alive.remove(GPU);
        ticker.advance(Duration.ofSeconds(5));
        s.tick();
        assertEquals(MpsSupervisor.State.BACKING_OFF, s.status().get(GPU).state());
        ticker.advance(Duration.ofSeconds(1));

        CountDownLatch go = new CountDownLatch(1);
        for (int i = 0; i < THREADS; i++) {
            Thread t = new Thread(() -> {
                try {
                    go.await();
                    s.tick();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "ticker-" + i);
            tickers.add(t);
        }
        tickers.forEach(Thread::start);
        go.countDown();
        for (Thread t : tickers) {
            t.join(30_000);
            assertTrue(!t.isAlive(), t.getName() + " finished");
        }
        assertEquals(2, starts.get(), "the first start and exactly one restart");
        assertEquals(MpsSupervisor.State.RUNNING, s.status().get(GPU).state());
        assertEquals(2, s.status().get(GPU).starts());
    }

    /**
     * Returns once every ticker thread is BLOCKED (on the supervisor's lock), has entered a start (the caller
     * has), or finished. Bounded at 10 s so that a broken supervisor fails rather than hangs.
     */
    private static void awaitOthersBlockedOrStarting(List<Thread> tickers, Set<Thread> inStart) {
        if (tickers.isEmpty()) {
            return;
        }
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (System.nanoTime() < deadline) {
            int settled = 0;
            for (Thread t : tickers) {
                Thread.State st = t.getState();
                if (inStart.contains(t) || st == Thread.State.BLOCKED || st == Thread.State.TERMINATED) {
                    settled++;
                }
            }
            if (settled == tickers.size()) {
                return;
            }
            Thread.onSpinWait();
        }
    }
}
