package io.qgpu.kubernetes.node.mps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The supervisor's schedule (back-off, stability, start failures) with an in-memory control and a manual ticker. */
class MpsSupervisorTest {
    private static final String GPU = "GPU-a";
    private static final MpsSupervisor.Settings SETTINGS = new MpsSupervisor.Settings(
            Duration.ofSeconds(5), Duration.ofSeconds(1), Duration.ofSeconds(8), Duration.ofSeconds(60));

    /**
     * A daemon per GPU, as harsh as {@code nvidia-cuda-mps-control}: {@code start} fails ("An instance of this
     * daemon is already running") while the GPU's daemon is alive, {@code quit} fails when none is. A daemon
     * can be made {@link #silent} (alive, but {@code healthy} is false and {@code quit} fails: a hung daemon);
     * starts can be made to fail, or to leave no daemon (it dies at once); and every command can be made
     * {@link #slow}: it moves the test's ticker on by that much before it answers, as a command that takes that
     * long. {@link #calls} records starts and quits; {@link #log} every command with its outcome.
     */
    static final class FakeControl implements MpsControl {
        static final String ALREADY_RUNNING = "An instance of this daemon is already running";

        final Set<String> alive = new HashSet<>();
        final Set<String> silent = new HashSet<>();
        final List<String> calls = new ArrayList<>();
        final List<String> log = new ArrayList<>();
        /** Commands given to live daemons, as {@code <gpu>: <command>}. */
        final List<String> commands = new ArrayList<>();
        /** What {@code get_server_list} names, for every GPU. */
        final List<Long> servers = new ArrayList<>();
        final Map<String, Long> pids = new HashMap<>();
        long nextPid = 100;
        boolean failCommands;
        private final ManualTicker ticker;
        Duration slow = Duration.ZERO;
        boolean failStarts;
        boolean startButDie;

        FakeControl(ManualTicker ticker) {
            this.ticker = ticker;
        }

        @Override
        public void start(String gpu) throws IOException {
            calls.add("start " + gpu);
            ticker.advance(slow);
            if (alive.contains(gpu)) {
                log.add("start " + gpu + ": already running");
                throw new IOException(ALREADY_RUNNING);
            }
            if (failStarts) {
                log.add("start " + gpu + ": failed");
                throw new IOException("exited 1");
            }
            if (!startButDie) {
                alive.add(gpu);
                pids.put(gpu, nextPid++);
            }
            log.add("start " + gpu + ": ok");
        }

        @Override
        public boolean healthy(String gpu) {
            ticker.advance(slow);
            boolean answers = alive.contains(gpu) && !silent.contains(gpu);
            log.add("healthy " + gpu + ": " + answers);
            return answers;
        }

        @Override
        public void quit(String gpu) throws IOException {
            calls.add("quit " + gpu);
            ticker.advance(slow);
            if (silent.contains(gpu) && alive.contains(gpu)) {
                log.add("quit " + gpu + ": no answer");
                throw new IOException("the MPS control daemon does not answer");
            }
            if (!alive.remove(gpu)) {
                log.add("quit " + gpu + ": no daemon");
                throw new IOException("Cannot find MPS control daemon process");
            }
            log.add("quit " + gpu + ": ok");
        }

        @Override
        public String command(String gpu, String command) throws IOException {
            ticker.advance(slow);
            if (!alive.contains(gpu) || silent.contains(gpu) || failCommands) {
                log.add("command " + gpu + " " + command + ": failed");
                throw new IOException("'" + command + "' failed");
            }
            commands.add(gpu + ": " + command);
            if (command.equals("get_server_list")) {
                return servers.stream().map(String::valueOf).collect(Collectors.joining("\n", "", "\n"));
            }
            return "";
        }

        @Override
        public Optional<Long> daemonPid(String gpu) {
            return alive.contains(gpu) ? Optional.ofNullable(pids.get(gpu)) : Optional.empty();
        }

        /** A daemon restarted behind the supervisor's back: alive again at once, with another pid. */
        void restartBehindTheBack(String gpu) {
            alive.add(gpu);
            pids.put(gpu, nextPid++);
        }

        long starts() {
            return calls.stream().filter(c -> c.startsWith("start ")).count();
        }
    }

    private final ManualTicker ticker = new ManualTicker();
    private final FakeControl control = new FakeControl(ticker);
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

    /**
     * The bug this supervisor once had: a daemon that misses one check (silent for one tick) and answers
     * again by the end of the back-off is adopted, not started a second time (the program would refuse the
     * start, and the GPU would back off for ever).
     */
    @Test
    void aDaemonThatMissesOneCheckIsAdoptedWhenTheBackoffIsOver() {
        s.share(List.of(GPU));
        control.silent.add(GPU);
        ticker.advance(Duration.ofSeconds(5));
        s.tick();
        assertEquals(MpsSupervisor.State.BACKING_OFF, s.status().get(GPU).state());

        control.silent.remove(GPU);
        ticker.advance(Duration.ofSeconds(1));
        control.log.clear();
        s.tick();
        MpsSupervisor.DaemonStatus st = s.status().get(GPU);
        assertEquals(MpsSupervisor.State.RUNNING, st.state(), "adopted: " + control.log);
        assertEquals(1, st.starts());
        assertEquals(List.of("start " + GPU), control.calls, "no start and no quit after the first start");
        assertEquals(List.of("healthy " + GPU + ": true"), control.log);
        assertEquals(ticker.read() + Duration.ofSeconds(5).toNanos(), st.nextActionAtNanos(), "checked again after healthEvery");

        ticker.advance(Duration.ofSeconds(5));
        s.tick();
        assertEquals(MpsSupervisor.State.RUNNING, s.status().get(GPU).state(), "supervised as before");
        assertEquals(1, control.starts());
    }

    @Test
    void aDeadDaemonIsStillRestartedAfterAQuitThatFails() {
        s.share(List.of(GPU));
        control.alive.remove(GPU); // it died
        ticker.advance(Duration.ofSeconds(5));
        s.tick();
        assertEquals(MpsSupervisor.State.BACKING_OFF, s.status().get(GPU).state());

        ticker.advance(Duration.ofSeconds(1));
        control.log.clear();
        s.tick();
        assertEquals(List.of("healthy " + GPU + ": false", "quit " + GPU + ": no daemon", "start " + GPU + ": ok",
                "healthy " + GPU + ": true"), control.log);
        assertEquals(MpsSupervisor.State.RUNNING, s.status().get(GPU).state());
        assertEquals(2, s.status().get(GPU).starts());
    }

    /**
     * A hung daemon (alive, answers nothing, takes no quit) is never joined by a second one: each retry
     * checks, sends quit (refused), tries a start (refused, the daemon still lives) and backs off longer.
     * Once it is gone, the next retry starts a new one.
     */
    @Test
    void aDaemonThatNeverAnswersAgainIsNotJoinedByASecond() {
        s.share(List.of(GPU));
        control.silent.add(GPU);
        ticker.advance(Duration.ofSeconds(5));
        s.tick();

        List<Long> waits = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            long wait = s.status().get(GPU).nextActionAtNanos() - ticker.read();
            waits.add(Duration.ofNanos(wait).toMillis());
            ticker.advance(Duration.ofNanos(wait - 1_000_000));
            control.log.clear();
            s.tick();
            assertEquals(List.of(), control.log, "nothing before the back-off is over, retry " + (i + 1));
            ticker.advance(Duration.ofMillis(1));
            s.tick();
            assertEquals(List.of("healthy " + GPU + ": false", "quit " + GPU + ": no answer", "start " + GPU + ": already running"),
                    control.log, "retry " + (i + 1));
            assertEquals(MpsSupervisor.State.BACKING_OFF, s.status().get(GPU).state());
            assertEquals(Set.of(GPU), control.alive, "the hung daemon, and no other");
        }
        assertEquals(List.of(1000L, 2000L, 4000L, 8000L, 8000L, 8000L), waits);
        assertEquals(7, s.status().get(GPU).starts());
        assertEquals(7, s.status().get(GPU).consecutiveFailures());

        control.silent.remove(GPU);
        control.alive.remove(GPU); // killed by hand
        ticker.advance(Duration.ofSeconds(8));
        s.tick();
        assertEquals(MpsSupervisor.State.RUNNING, s.status().get(GPU).state());
        assertEquals(8, s.status().get(GPU).starts());
    }

    /**
     * Slow commands (3 s of ticker time each, as one that runs into its timeout) do not use the waits up: a
     * wait counts from when the command that failed returned, so a hung daemon still gets 1, 2, 4, 8, 8 s
     * between the end of one try and the start of the next.
     */
    @Test
    void slowCommandsDoNotUseTheBackoffUp() {
        s.share(List.of(GPU));
        control.silent.add(GPU);
        control.slow = Duration.ofSeconds(3);
        ticker.advance(Duration.ofSeconds(5));
        s.tick(); // the check takes 3 s and fails
        assertEquals(Duration.ofSeconds(1).toNanos(), s.status().get(GPU).nextActionAtNanos() - ticker.read());

        for (long expected : List.of(2L, 4L, 8L, 8L)) {
            ticker.advance(Duration.ofNanos(s.status().get(GPU).nextActionAtNanos() - ticker.read()));
            long before = ticker.read();
            s.tick();
            assertEquals(Duration.ofSeconds(9).toNanos(), ticker.read() - before, "check, quit and start, 3 s each");
            assertEquals(Duration.ofSeconds(expected).toNanos(), s.status().get(GPU).nextActionAtNanos() - ticker.read(),
                    "the wait after a try of 9 s");
        }
        assertEquals(5, s.status().get(GPU).starts());

        control.silent.remove(GPU); // answers again, slowly
        ticker.advance(Duration.ofNanos(s.status().get(GPU).nextActionAtNanos() - ticker.read()));
        s.tick();
        MpsSupervisor.DaemonStatus st = s.status().get(GPU);
        assertEquals(MpsSupervisor.State.RUNNING, st.state());
        assertEquals(5, st.starts(), "adopted, not started");
        assertEquals(Duration.ofSeconds(5).toNanos(), st.nextActionAtNanos() - ticker.read());
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

    /**
     * Issue 38: the agent's stop leaves the daemons running (the old design quit them: this test asserted the
     * {@code quit}); nothing is started or checked after it.
     */
    @Test
    void closeLeavesTheDaemonsRunningAndNothingIsStartedAgain() {
        s.share(List.of(GPU));
        s.close();
        s.close();
        assertFalse(control.calls.contains("quit " + GPU), control.calls.toString());
        assertTrue(control.alive.contains(GPU), "the daemon runs on");
        assertTrue(s.status().isEmpty());
        control.alive.clear();
        ticker.advance(Duration.ofMinutes(1));
        s.tick();
        assertEquals(1, control.starts());
        assertThrows(IllegalStateException.class, () -> s.share(List.of(GPU)));
    }

    @Test
    void quitAllQuitsEveryDaemonAndCloses() {
        s.share(List.of(GPU, "GPU-b"));
        s.quitAll();
        assertEquals(List.of("start " + GPU, "start GPU-b", "quit " + GPU, "quit GPU-b"), control.calls);
        assertTrue(control.alive.isEmpty());
        s.quitAll();
        assertEquals(4, control.calls.size(), "nothing twice");
        assertThrows(IllegalStateException.class, () -> s.share(List.of(GPU)));
    }

    @Test
    void unsharingAGpuInAgentModeQuitsItsDaemon() {
        s.share(List.of(GPU, "GPU-b"));
        s.share(List.of(GPU));
        assertEquals(List.of("start " + GPU, "start GPU-b", "quit GPU-b"), control.calls);
        assertEquals(Set.of(GPU), s.status().keySet());
    }

    // ---- --mps-daemons external: the supervisor adopts, never starts or quits

    @Test
    void externalModeWaitsForTheDaemonAndAdoptsItNeverStartingOrQuitting() {
        MpsSupervisor ext = new MpsSupervisor(control, MpsDaemonMode.EXTERNAL, SETTINGS, ticker);
        ext.share(List.of(GPU));
        assertEquals(MpsSupervisor.State.BACKING_OFF, ext.status().get(GPU).state(), "no daemon answers yet");
        assertFalse(ext.adoptIfAnswering(GPU));
        ticker.advance(Duration.ofSeconds(5));
        ext.tick();
        assertEquals(MpsSupervisor.State.BACKING_OFF, ext.status().get(GPU).state());
        assertEquals(List.of(), control.calls, "no start, no quit");

        control.alive.add(GPU);   // the DaemonSet's pod starts it
        assertTrue(ext.adoptIfAnswering(GPU), "a check out of schedule adopts it at once");
        assertEquals(MpsSupervisor.State.RUNNING, ext.status().get(GPU).state());
        assertEquals(0, ext.status().get(GPU).starts());

        control.alive.remove(GPU);   // it dies
        ticker.advance(Duration.ofSeconds(5));
        ext.tick();
        assertEquals(MpsSupervisor.State.BACKING_OFF, ext.status().get(GPU).state());
        ticker.advance(Duration.ofMinutes(5));
        for (int i = 0; i < 100; i++) {
            ticker.advance(Duration.ofSeconds(1));
            ext.tick();
        }
        assertEquals(List.of(), control.calls, "still no start and no quit");
        control.alive.add(GPU);   // its pod restarted it
        ticker.advance(Duration.ofSeconds(5));
        ext.tick();
        assertEquals(MpsSupervisor.State.RUNNING, ext.status().get(GPU).state(), "adopted at the next check");

        ext.share(List.of());
        assertEquals(List.of(), control.calls, "unsharing leaves the daemon to its pod");
        assertTrue(control.alive.contains(GPU));
        ext.close();
        assertEquals(List.of(), control.calls);
    }

    // ---- daemon-side limits

    @Test
    void limitsAreSetAsDefaultsAndOnEveryRunningServer() throws IOException {
        s.share(List.of(GPU));
        control.servers.addAll(List.of(4242L, 4343L));
        s.applyLimits(GPU, new MpsLimits(8192, 70));
        assertEquals(List.of(GPU + ": set_default_device_pinned_mem_limit 0 8192M", GPU + ": set_default_active_thread_percentage 70",
                GPU + ": get_server_list",
                GPU + ": set_device_pinned_mem_limit 4242 0 8192M", GPU + ": set_active_thread_percentage 4242 70",
                GPU + ": set_device_pinned_mem_limit 4343 0 8192M", GPU + ": set_active_thread_percentage 4343 70"), control.commands);
        assertEquals(Optional.of(new MpsLimits(8192, 70)), s.status().get(GPU).limits());
        assertEquals(Set.of(GPU), s.limited());

        s.applyLimits(GPU, new MpsLimits(8192, 70));
        assertEquals(7, control.commands.size(), "the same limits again: nothing sent");

        s.applyLimits(GPU, new MpsLimits(16384, 100));
        assertEquals(GPU + ": set_active_thread_percentage 4343 100", control.commands.get(control.commands.size() - 1));
        assertEquals(14, control.commands.size());
    }

    @Test
    void limitsAreSetAgainOnEveryDaemonStartedOrAdopted() throws IOException {
        s.share(List.of(GPU));
        s.applyLimits(GPU, new MpsLimits(1024, 5));
        control.commands.clear();
        control.alive.remove(GPU);   // it crashes
        ticker.advance(Duration.ofSeconds(5));
        s.tick();
        assertEquals(Set.of(), s.limited(), "a daemon that does not run holds nothing");
        IllegalStateException notRunning = assertThrows(IllegalStateException.class, () -> s.applyLimits(GPU, new MpsLimits(1024, 5)));
        assertTrue(notRunning.getMessage().contains("does not run"), notRunning.getMessage());
        ticker.advance(Duration.ofSeconds(1));
        s.tick();   // restarted
        assertEquals(2, control.starts());
        assertEquals(List.of(GPU + ": set_default_device_pinned_mem_limit 0 1024M", GPU + ": set_default_active_thread_percentage 5",
                GPU + ": get_server_list"), control.commands, "the new daemon gets the limits as soon as it runs");
        assertEquals(Set.of(GPU), s.limited());
    }

    @Test
    void aDaemonRestartedBehindTheSupervisorGetsItsLimitsAgainAtTheNextCheck() throws IOException {
        MpsSupervisor ext = new MpsSupervisor(control, MpsDaemonMode.EXTERNAL, SETTINGS, ticker);
        control.alive.add(GPU);
        control.pids.put(GPU, 7L);
        ext.share(List.of(GPU));
        ext.applyLimits(GPU, new MpsLimits(2048, 25));
        assertEquals(Optional.of(7L), ext.status().get(GPU).pid());
        control.commands.clear();

        control.restartBehindTheBack(GPU);   // its pod restarted it between two checks: the defaults are gone
        ext.applyLimits(GPU, new MpsLimits(2048, 25));
        assertEquals(List.of(), control.commands, "not known yet");
        ticker.advance(Duration.ofSeconds(5));
        ext.tick();
        assertEquals(List.of(GPU + ": set_default_device_pinned_mem_limit 0 2048M", GPU + ": set_default_active_thread_percentage 25",
                GPU + ": get_server_list"), control.commands, "the health check sees another pid and sets the limits again");
        assertEquals(Optional.of(100L), ext.status().get(GPU).pid());
        assertEquals(List.of(), control.calls, "no start, no quit");
    }

    @Test
    void aFailedLimitIsTriedAgainAtTheNextCheck() {
        s.share(List.of(GPU));
        control.failCommands = true;
        assertThrows(IOException.class, () -> s.applyLimits(GPU, new MpsLimits(1024, 5)));
        assertEquals(Set.of(), s.limited());
        assertEquals(Optional.empty(), s.status().get(GPU).limits());
        control.failCommands = false;
        ticker.advance(Duration.ofSeconds(5));
        s.tick();
        assertEquals(Set.of(GPU), s.limited(), "set at the health check");
        s.forgetLimits(GPU);
        assertEquals(Set.of(), s.limited());
        assertThrows(IllegalStateException.class, () -> s.applyLimits("GPU-z", new MpsLimits(1024, 5)), "a GPU not shared");
    }

    @Test
    void serverPidsAreTheWholeNumbersOfTheList() {
        assertEquals(List.of(12L, 345L), MpsSupervisor.serverPids("12\n345\n"));
        assertEquals(List.of(), MpsSupervisor.serverPids(""));
        assertEquals(List.of(9L), MpsSupervisor.serverPids("  9 \nno server\n"));
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
