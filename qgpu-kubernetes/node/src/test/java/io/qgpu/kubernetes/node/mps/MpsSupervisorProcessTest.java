package io.qgpu.kubernetes.node.mps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link MpsSupervisor} with {@link ProcessMpsControl} running a fake {@code nvidia-cuda-mps-control}
 * ({@link FakeMpsControlScript}) that records its calls: start with the GPU's environment, restart after
 * the daemon is killed, stop with {@code quit}. No GPU; time from a manual ticker.
 */
class MpsSupervisorProcessTest {
    private static final String GPU_A = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6";
    private static final String GPU_B = "GPU-11112222-3333-4444-5555-666677778888";
    private static final MpsSupervisor.Settings SETTINGS = new MpsSupervisor.Settings(
            Duration.ofSeconds(5), Duration.ofSeconds(1), Duration.ofSeconds(8), Duration.ofMinutes(5));

    @TempDir
    Path tmp;
    private FakeMpsControlScript fake;
    private MpsLayout layout;
    private final ManualTicker ticker = new ManualTicker();
    private MpsSupervisor supervisor;

    @BeforeEach
    void setUp() throws IOException {
        fake = FakeMpsControlScript.write(tmp);
        layout = new MpsLayout(tmp.resolve("mps"));
        supervisor = new MpsSupervisor(new ProcessMpsControl(fake.binary, layout, Duration.ofSeconds(20)), SETTINGS, ticker);
    }

    @AfterEach
    void killLeftoverDaemons() throws IOException, InterruptedException {
        for (String gpu : List.of(GPU_A, GPU_B)) {
            if (Files.isDirectory(layout.pipeDir(gpu))) {
                var pid = FakeMpsControlScript.daemonPid(layout, gpu);
                if (pid.isPresent()) {
                    FakeMpsControlScript.crash(pid.get());
                }
            }
        }
    }

    private String start(String gpu) {
        return "start visible=" + gpu + " pipe=" + layout.pipeDir(gpu) + " log=" + layout.logDir(gpu);
    }

    private String command(String cmd, String gpu) {
        return "command " + cmd + " visible= pipe=" + layout.pipeDir(gpu) + " log=" + layout.logDir(gpu);
    }

    @Test
    void startsOneDaemonPerGpuWithItsOwnDirectoriesAndVisibleDevice() throws IOException {
        supervisor.share(Set.of(GPU_A, GPU_B));

        List<String> calls = fake.calls();
        for (String gpu : List.of(GPU_A, GPU_B)) {
            assertTrue(calls.contains(start(gpu)), calls.toString());
            assertTrue(Files.isDirectory(layout.pipeDir(gpu)));
            assertTrue(Files.isDirectory(layout.logDir(gpu)));
            long pid = FakeMpsControlScript.daemonPid(layout, gpu).orElseThrow();
            assertTrue(FakeMpsControlScript.running(pid), "the daemon of " + gpu + " runs");
            assertEquals(MpsSupervisor.State.RUNNING, supervisor.status().get(gpu).state());
        }
        // per GPU: a health check first (nothing to adopt), the start, the check that it answers
        assertEquals(6, calls.size(), calls.toString());
        assertEquals(2, calls.stream().filter(c -> c.startsWith("start ")).count());
    }

    @Test
    void restartsAKilledDaemonAfterTheBackoff() throws Exception {
        supervisor.share(Set.of(GPU_A));
        long first = FakeMpsControlScript.daemonPid(layout, GPU_A).orElseThrow();

        FakeMpsControlScript.crash(first);
        int callsBefore = fake.calls().size();
        supervisor.tick(); // not yet time for a health check
        assertEquals(MpsSupervisor.State.RUNNING, supervisor.status().get(GPU_A).state());

        ticker.advance(Duration.ofSeconds(5));
        supervisor.tick(); // the check fails: back off 1 s
        MpsSupervisor.DaemonStatus s = supervisor.status().get(GPU_A);
        assertEquals(MpsSupervisor.State.BACKING_OFF, s.state());
        assertEquals(1, s.starts());
        assertEquals(1, s.consecutiveFailures());
        assertEquals(ticker.read() + Duration.ofSeconds(1).toNanos(), s.nextActionAtNanos());

        ticker.advance(Duration.ofMillis(999));
        supervisor.tick();
        assertEquals(1, fake.calls().stream().filter(c -> c.startsWith("start ")).count(), "no restart before the back-off ends");

        ticker.advance(Duration.ofMillis(1));
        supervisor.tick();
        s = supervisor.status().get(GPU_A);
        assertEquals(MpsSupervisor.State.RUNNING, s.state());
        assertEquals(2, s.starts());
        List<String> starts = fake.calls().stream().filter(c -> c.startsWith("start ")).toList();
        assertEquals(List.of(start(GPU_A), start(GPU_A)), starts);
        long second = FakeMpsControlScript.daemonPid(layout, GPU_A).orElseThrow();
        assertTrue(second != first && FakeMpsControlScript.running(second), "a new daemon runs");
        // the failed check; at the end of the back-off a check, a quit (that fails: no daemon), the start, its check
        List<String> calls = fake.calls();
        assertEquals(List.of(command("get_server_list", GPU_A), command("get_server_list", GPU_A), command("quit", GPU_A),
                start(GPU_A), command("get_server_list", GPU_A)), calls.subList(callsBefore, calls.size()));
        assertEquals(List.of(second), FakeMpsControlScript.liveDaemons(layout, GPU_A));
    }

    /**
     * The bug this supervisor once had: the daemon misses one check (the fake's {@code silent} marker) and
     * answers again by the end of the back-off. The supervisor adopts that same daemon; it does not run a
     * second {@code -d} (which the program refuses while the daemon lives) and sends no {@code quit}.
     */
    @Test
    void adoptsTheSameDaemonAfterItMissedOneCheck() throws Exception {
        supervisor.share(Set.of(GPU_A));
        long pid = FakeMpsControlScript.daemonPid(layout, GPU_A).orElseThrow();

        FakeMpsControlScript.makeSilent(layout, GPU_A);
        ticker.advance(Duration.ofSeconds(5));
        supervisor.tick();
        assertEquals(MpsSupervisor.State.BACKING_OFF, supervisor.status().get(GPU_A).state());

        FakeMpsControlScript.clearSilent(layout, GPU_A);
        ticker.advance(Duration.ofSeconds(1));
        supervisor.tick();
        MpsSupervisor.DaemonStatus s = supervisor.status().get(GPU_A);
        assertEquals(MpsSupervisor.State.RUNNING, s.state(), "adopted: " + fake.calls());
        assertEquals(1, s.starts());
        assertEquals(List.of(start(GPU_A)), fake.calls().stream().filter(c -> c.startsWith("start ")).toList(), "no second start");
        assertFalse(fake.calls().contains(command("quit", GPU_A)), "no quit");
        assertEquals(pid, FakeMpsControlScript.daemonPid(layout, GPU_A).orElseThrow());
        assertEquals(List.of(pid), FakeMpsControlScript.liveDaemons(layout, GPU_A));
    }

    /**
     * The same with a daemon that was slow once: its health check runs past {@link ProcessMpsControl}'s
     * timeout (1 s here; the fake's {@code slow} marker makes the command take 5 s) and is killed. When the
     * back-off is over it answers in time and is adopted. Real time: the one timeout.
     */
    @Test
    void adoptsTheSameDaemonAfterOneCheckTimedOut() throws Exception {
        MpsSupervisor quick = new MpsSupervisor(new ProcessMpsControl(fake.binary, layout, Duration.ofSeconds(1)), SETTINGS, ticker);
        quick.share(Set.of(GPU_A));
        long pid = FakeMpsControlScript.daemonPid(layout, GPU_A).orElseThrow();

        FakeMpsControlScript.makeSlow(layout, GPU_A, Duration.ofSeconds(5));
        ticker.advance(Duration.ofSeconds(5));
        quick.tick();
        assertEquals(MpsSupervisor.State.BACKING_OFF, quick.status().get(GPU_A).state(), "the check timed out");

        FakeMpsControlScript.clearSlow(layout, GPU_A);
        ticker.advance(Duration.ofSeconds(1));
        quick.tick();
        assertEquals(MpsSupervisor.State.RUNNING, quick.status().get(GPU_A).state(), "adopted: " + fake.calls());
        assertEquals(1, quick.status().get(GPU_A).starts());
        assertEquals(1, fake.calls().stream().filter(c -> c.startsWith("start ")).count(), "no second start");
        assertEquals(List.of(pid), FakeMpsControlScript.liveDaemons(layout, GPU_A));
    }

    /**
     * A hung daemon (the {@code silent} marker stays): every retry checks, sends {@code quit} (refused) and
     * runs {@code -d} (refused: the daemon lives), with waits of 1, 2, 4, 8, 8 s; the GPU never has a second
     * daemon (its pid file names the first, and {@code /proc} holds no other). When it answers again it is
     * adopted.
     */
    @Test
    void aDaemonThatNeverAnswersAgainIsNotJoinedByASecond() throws Exception {
        supervisor.share(Set.of(GPU_A));
        long pid = FakeMpsControlScript.daemonPid(layout, GPU_A).orElseThrow();
        FakeMpsControlScript.makeSilent(layout, GPU_A);
        ticker.advance(Duration.ofSeconds(5));
        supervisor.tick();

        for (long wait : List.of(1L, 2L, 4L, 8L, 8L)) {
            MpsSupervisor.DaemonStatus s = supervisor.status().get(GPU_A);
            assertEquals(MpsSupervisor.State.BACKING_OFF, s.state());
            assertEquals(Duration.ofSeconds(wait).toNanos(), s.nextActionAtNanos() - ticker.read());
            ticker.advance(Duration.ofSeconds(wait));
            int before = fake.calls().size();
            supervisor.tick();
            List<String> calls = fake.calls();
            assertEquals(List.of(command("get_server_list", GPU_A), command("quit", GPU_A), start(GPU_A)),
                    calls.subList(before, calls.size()), "after a wait of " + wait + " s");
            assertEquals(pid, FakeMpsControlScript.daemonPid(layout, GPU_A).orElseThrow(), "the pid file names the first daemon");
            assertEquals(List.of(pid), FakeMpsControlScript.liveDaemons(layout, GPU_A), "one daemon runs");
        }
        assertEquals(6, supervisor.status().get(GPU_A).starts());
        assertEquals(MpsSupervisor.State.BACKING_OFF, supervisor.status().get(GPU_A).state());

        FakeMpsControlScript.clearSilent(layout, GPU_A);
        ticker.advance(Duration.ofSeconds(8));
        supervisor.tick();
        assertEquals(MpsSupervisor.State.RUNNING, supervisor.status().get(GPU_A).state());
        assertEquals(List.of(pid), FakeMpsControlScript.liveDaemons(layout, GPU_A));
    }

    /**
     * Issue 38: closing the supervisor (the agent's stop) leaves every daemon running; the old design quit them
     * (this test was {@code closeQuitsEveryDaemonAndIsIdempotent}). {@link MpsSupervisor#quitAll()} quits them.
     */
    @Test
    void closeLeavesEveryDaemonRunningAndQuitAllQuitsThem() throws Exception {
        supervisor.share(Set.of(GPU_A, GPU_B));
        long a = FakeMpsControlScript.daemonPid(layout, GPU_A).orElseThrow();
        long b = FakeMpsControlScript.daemonPid(layout, GPU_B).orElseThrow();

        supervisor.close();
        supervisor.close();
        assertEquals(0, fake.calls().stream().filter(c -> c.startsWith("command quit ")).count(), fake.calls().toString());
        assertTrue(FakeMpsControlScript.running(a) && FakeMpsControlScript.running(b), "both daemons run on");
        assertTrue(supervisor.status().isEmpty());

        MpsSupervisor next = new MpsSupervisor(new ProcessMpsControl(fake.binary, layout, Duration.ofSeconds(20)), SETTINGS, ticker);
        next.share(Set.of(GPU_A, GPU_B));
        assertEquals(2, fake.calls().stream().filter(c -> c.startsWith("start ")).count(), "adopted, not started");
        next.quitAll();
        next.quitAll();
        List<String> calls = fake.calls();
        assertEquals(1, calls.stream().filter(c -> c.equals(command("quit", GPU_A))).count(), calls.toString());
        assertEquals(1, calls.stream().filter(c -> c.equals(command("quit", GPU_B))).count(), calls.toString());
        awaitStopped(a);
        awaitStopped(b);
    }

    @Test
    void limitsReachTheDaemonAndItsRunningServersThroughTheProgram() throws Exception {
        supervisor.share(Set.of(GPU_A));
        FakeMpsControlScript.addServer(layout, GPU_A, 4242);
        supervisor.applyLimits(GPU_A, new MpsLimits(8192, 70));
        assertEquals(List.of("set_default_device_pinned_mem_limit 0 8192M", "set_default_active_thread_percentage 70"),
                FakeMpsControlScript.defaults(layout, GPU_A));
        assertEquals(List.of("set_device_pinned_mem_limit 4242 0 8192M", "set_active_thread_percentage 4242 70"),
                FakeMpsControlScript.serverLimits(layout, GPU_A));
        assertTrue(fake.calls().contains(command("set_default_active_thread_percentage 70", GPU_A)), fake.calls().toString());
        long pid = FakeMpsControlScript.daemonPid(layout, GPU_A).orElseThrow();
        assertEquals(java.util.Optional.of(pid), supervisor.status().get(GPU_A).pid());

        // the daemon is killed and restarted behind the supervisor's back (its pod did it): the defaults are gone
        FakeMpsControlScript.crash(pid);
        new ProcessMpsControl(fake.binary, layout, Duration.ofSeconds(20)).start(GPU_A);
        assertEquals(List.of(), FakeMpsControlScript.defaults(layout, GPU_A));
        ticker.advance(Duration.ofSeconds(5));
        supervisor.tick();
        assertEquals(List.of("set_default_device_pinned_mem_limit 0 8192M", "set_default_active_thread_percentage 70"),
                FakeMpsControlScript.defaults(layout, GPU_A), "set again on the new daemon at the next health check");
    }

    @Test
    void unsharingAGpuQuitsOnlyItsDaemon() throws Exception {
        supervisor.share(Set.of(GPU_A, GPU_B));
        long b = FakeMpsControlScript.daemonPid(layout, GPU_B).orElseThrow();
        supervisor.share(Set.of(GPU_A));

        assertEquals(Set.of(GPU_A), supervisor.status().keySet());
        assertTrue(fake.calls().contains(command("quit", GPU_B)));
        assertFalse(fake.calls().contains(command("quit", GPU_A)));
        awaitStopped(b);
        assertTrue(FakeMpsControlScript.running(FakeMpsControlScript.daemonPid(layout, GPU_A).orElseThrow()));
    }

    @Test
    void adoptsADaemonThatAlreadyAnswers() throws IOException {
        supervisor.share(Set.of(GPU_A));
        long pid = FakeMpsControlScript.daemonPid(layout, GPU_A).orElseThrow();

        // a new node agent (the old one went away without quitting): it finds the daemon answering
        MpsSupervisor next = new MpsSupervisor(new ProcessMpsControl(fake.binary, layout, Duration.ofSeconds(20)), SETTINGS, ticker);
        next.share(Set.of(GPU_A));
        assertEquals(1, fake.calls().stream().filter(c -> c.startsWith("start ")).count(), "no second start");
        assertEquals(0, next.status().get(GPU_A).starts());
        assertEquals(pid, FakeMpsControlScript.daemonPid(layout, GPU_A).orElseThrow());
    }

    private static void awaitStopped(long pid) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (FakeMpsControlScript.running(pid)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the daemon " + pid + " still runs 10 s after quit");
            }
            Thread.sleep(5);
        }
    }
}
