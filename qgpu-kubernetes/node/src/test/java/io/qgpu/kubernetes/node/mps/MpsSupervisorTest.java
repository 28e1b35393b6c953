package io.qgpu.kubernetes.node.mps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The supervisor's schedule (back-off, stability, start failures) with an in-memory control and a manual ticker. */
class MpsSupervisorTest {
    private static final String GPU = "GPU-a";
    private static final MpsSupervisor.Settings SETTINGS = new MpsSupervisor.Settings(
            Duration.ofSeconds(5), Duration.ofSeconds(1), Duration.ofSeconds(8), Duration.ofSeconds(60));

    /** A daemon per GPU that is alive or not; starts can be made to fail. */
    static final class FakeControl implements MpsControl {
        final Set<String> alive = new HashSet<>();
        final List<String> calls = new ArrayList<>();
        boolean failStarts;
        boolean startButDie;

        @Override
        public void start(String gpu) throws IOException {
            calls.add("start " + gpu);
            if (failStarts) {
                throw new IOException("exited 1");
            }
            if (!startButDie) {
                alive.add(gpu);
            }
        }

        @Override
        public boolean healthy(String gpu) {
            return alive.contains(gpu);
        }

        @Override
        public void quit(String gpu) throws IOException {
            calls.add("quit " + gpu);
            if (!alive.remove(gpu)) {
                throw new IOException("no daemon");
            }
        }

        long starts() {
            return calls.stream().filter(c -> c.startsWith("start ")).count();
        }
    }

    private final ManualTicker ticker = new ManualTicker();
    private final FakeControl control = new FakeControl();
    private final MpsSupervisor s = new MpsSupervisor(control, SETTINGS, ticker);

    /** Ticks every 100 ms of ticker time for this long; the times (ms from the first tick) at which starts happened. */
    private List<Long> tickFor(Duration d) {
        List<Long> at = new ArrayList<>();
        long before = control.starts();
        for (long ms = 0; ms <= d.toMillis(); ms += 100) {
            s.tick();
            if (control.starts() > before) {
                at.add(ms);
                before = control.starts();
            }
            ticker.advance(Duration.ofMillis(100));
        }
        return at;
    }

    @Test
    void backoffDoublesUpToTheMaximum() {
        assertEquals(List.of(1_000_000_000L, 2_000_000_000L, 4_000_000_000L, 8_000_000_000L, 8_000_000_000L),
                List.of(s.backoffNanos(0), s.backoffNanos(1), s.backoffNanos(2), s.backoffNanos(3), s.backoffNanos(30)));
    }

    @Test
    void aFailingStartIsRetriedAfterGrowingWaits() {
        control.failStarts = true;
        s.share(List.of(GPU));
        assertEquals(1, control.starts());
        // waits 1, 2, 4, 8, 8 s after each failure: retries at 1, 3, 7, 15, 23 s
        assertEquals(List.of(1000L, 3000L, 7000L, 15000L, 23000L), tickFor(Duration.ofSeconds(24)));
        assertEquals(MpsSupervisor.State.BACKING_OFF, s.status().get(GPU).state());
        assertEquals(6, s.status().get(GPU).consecutiveFailures());

        control.failStarts = false;
        tickFor(Duration.ofSeconds(8));
        assertEquals(MpsSupervisor.State.RUNNING, s.status().get(GPU).state());
    }

    @Test
    void aDaemonThatStartsButDoesNotAnswerCountsAsFailed() {
        control.startButDie = true;
        s.share(List.of(GPU));
        assertEquals(MpsSupervisor.State.BACKING_OFF, s.status().get(GPU).state());
        assertEquals(1, s.status().get(GPU).consecutiveFailures());
    }

    @Test
    void aCrashLoopBacksOffButAStableDaemonStartsOverFromTheInitialWait() {
        s.share(List.of(GPU));
        // crash right after each start: detected at the next check (5 s), restarted after 1, 2, 4 s
        for (int i = 0; i < 3; i++) {
            control.alive.remove(GPU);
            ticker.advance(Duration.ofSeconds(5));
            s.tick();
            long wait = s.status().get(GPU).nextActionAtNanos() - ticker.read();
            assertEquals(Duration.ofSeconds(1L << i).toNanos(), wait, "crash " + (i + 1));
            ticker.advance(Duration.ofNanos(wait));
            s.tick();
            assertEquals(MpsSupervisor.State.RUNNING, s.status().get(GPU).state());
        }
        // then it runs for a minute (the stability threshold) before crashing: the wait is 1 s again
        for (int i = 0; i < 12; i++) {
            ticker.advance(Duration.ofSeconds(5));
            s.tick();
        }
        control.alive.remove(GPU);
        ticker.advance(Duration.ofSeconds(5));
        s.tick();
        assertEquals(Duration.ofSeconds(1).toNanos(), s.status().get(GPU).nextActionAtNanos() - ticker.read());
        assertEquals(1, s.status().get(GPU).consecutiveFailures());
        assertEquals(4, s.status().get(GPU).starts());
    }

    @Test
    void healthChecksRunEveryPeriodOnly() {
        s.share(List.of(GPU));
        int before = control.calls.size();
        ticker.advance(Duration.ofMillis(4999));
        s.tick();
        assertEquals(MpsSupervisor.State.RUNNING, s.status().get(GPU).state());
        control.alive.remove(GPU);
        s.tick();
        assertEquals(MpsSupervisor.State.RUNNING, s.status().get(GPU).state(), "no check before 5 s");
        ticker.advance(Duration.ofMillis(1));
        s.tick();
        assertEquals(MpsSupervisor.State.BACKING_OFF, s.status().get(GPU).state());
        assertEquals(before, control.calls.size(), "health checks are not start or quit calls");
    }

    @Test
    void afterCloseNothingIsStartedAgain() {
        s.share(List.of(GPU));
        s.close();
        assertTrue(control.calls.contains("quit " + GPU));
        control.alive.clear();
        ticker.advance(Duration.ofMinutes(1));
        s.tick();
        assertEquals(1, control.starts());
        assertThrows(IllegalStateException.class, () -> s.share(List.of(GPU)));
    }

    @Test
    void tickEveryRunsTicksOnTheExecutorUntilCancelled() throws Exception {
        java.util.concurrent.CountDownLatch checked = new java.util.concurrent.CountDownLatch(1);
        MpsControl counting = new MpsControl() {
            @Override
            public void start(String gpu) {
            }

            @Override
            public boolean healthy(String gpu) {
                if (!Thread.currentThread().getName().equals("test-main")) {
                    checked.countDown(); // a health check from the timer's thread: tick() ran there
                }
                return true;
            }

            @Override
            public void quit(String gpu) {
            }
        };
        String name = Thread.currentThread().getName();
        Thread.currentThread().setName("test-main");
        java.util.concurrent.ScheduledExecutorService timer = java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
        try {
            MpsSupervisor sup = new MpsSupervisor(counting, SETTINGS, ticker);
            sup.share(List.of(GPU));
            ticker.advance(Duration.ofSeconds(5)); // the next health check is due
            java.util.concurrent.ScheduledFuture<?> f = sup.tickEvery(timer, Duration.ofMillis(1));
            assertTrue(checked.await(30, java.util.concurrent.TimeUnit.SECONDS), "a tick ran on the timer");
            f.cancel(false);
            assertTrue(f.isCancelled());
        } finally {
            timer.shutdownNow();
            Thread.currentThread().setName(name);
        }
    }

    @Test
    void settingsRefuseNonsense() {
        assertThrows(IllegalArgumentException.class, () -> new MpsSupervisor.Settings(Duration.ZERO, Duration.ofSeconds(1),
                Duration.ofSeconds(2), Duration.ofSeconds(3)));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new MpsSupervisor.Settings(
                Duration.ofSeconds(1), Duration.ofSeconds(10), Duration.ofSeconds(2), Duration.ofSeconds(3)));
        assertTrue(e.getMessage().startsWith("maxBackoff = PT2S"), e.getMessage());
    }
}
