package io.qgpu.kubernetes.node.mps;

import io.qgpu.api.Ticker;
import io.qgpu.kubernetes.node.reconcile.Backoff;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Supervises one MPS control daemon per shared GPU and holds it to the GPU's daemon-side limits. {@link #share}
 * names the GPUs that should have one: for each GPU not yet supervised the supervisor adopts a daemon that already
 * answers (one the agent started before a restart, or one of the MPS DaemonSet's pod) or else, in
 * {@link MpsDaemonMode#AGENT} mode, starts one; in {@link MpsDaemonMode#EXTERNAL} mode it never starts or quits a
 * daemon and waits for the DaemonSet's pod to start it. A GPU no longer named is given up: in {@code AGENT} mode its
 * daemon is quit (sharing stops on that GPU), in {@code EXTERNAL} mode it is left to its pod. {@link #tick()} does
 * what is due at the ticker's time:
 * <ul>
 *   <li>a running daemon is checked ({@link MpsControl#healthy}) every {@link Settings#healthEvery()}; one
 *       that does not answer goes to {@link State#BACKING_OFF}, as does a GPU whose start fails or whose new
 *       daemon does not answer. A daemon that answers with another pid than the one adopted
 *       ({@link MpsControl#daemonPid}) was restarted behind the supervisor's back and gets its limits again;</li>
 *   <li>when a GPU's back-off is over, the supervisor checks it again before it restarts anything. A daemon
 *       that answers now (it was only slow or busy) is adopted: {@link State#RUNNING} again, no start, no
 *       quit. Otherwise, in {@code AGENT} mode, the supervisor sends {@code quit} (best effort: it fails when no
 *       daemon runs or when the daemon is hung; the failure is logged at info and changes nothing) and then starts
 *       a daemon. If that start fails (the real program refuses {@code -d} while a daemon that did not take the
 *       {@code quit} still lives) or the new daemon does not answer, the GPU backs off again. In
 *       {@code EXTERNAL} mode it only checks again, every {@link Settings#healthEvery()}.</li>
 * </ul>
 * So the supervisor never starts a daemon while the GPU's daemon answers, and a hung daemon that answers
 * nothing is not joined by a second one: the starts fail and the waits grow until it goes. The back-off
 * starts at {@link Settings#initialBackoff()} and doubles with each consecutive failure up to
 * {@link Settings#maxBackoff()}; a daemon that stayed healthy for {@link Settings#stableAfter()} since its
 * start or adoption starts again from the initial back-off. Every wait is counted from the ticker's time
 * when the command that decided it returned, so a slow command (one that runs until its timeout) does not
 * use the wait up.
 *
 * <p><b>Limits.</b> {@link #applyLimits} sets a GPU's daemon-side limits ({@link MpsLimits}): the daemon's
 * defaults, then the same limits on every server {@code get_server_list} names. The supervisor keeps the limits
 * asked for and sets them again on every daemon it starts or adopts (a daemon's defaults do not outlive it), as
 * soon as it runs; one that fails is retried at the next health check and by the next {@link #applyLimits}.
 *
 * <p><b>Stop.</b> {@link #close()} only stops supervising: the daemons keep running (the node agent's stop or
 * upgrade does not stop sharing; a restarted agent adopts them). {@link #quitAll()} quits them too, for the
 * MPS DaemonSet's own pod ({@link MpsControlDaemon}) when it stops.
 *
 * <p>Time comes only from the {@link Ticker}; the supervisor never sleeps. A deployment calls {@link #tick()}
 * periodically ({@link #tickEvery}); tests advance a manual ticker and call it themselves.
 *
 * <pre>{@code
 * MpsLayout layout = new MpsLayout(Path.of("/run/qgpu/mps"));
 * MpsSupervisor s = new MpsSupervisor(new ProcessMpsControl(Path.of("nvidia-cuda-mps-control"), layout, Duration.ofSeconds(10)),
 *         MpsDaemonMode.EXTERNAL, MpsSupervisor.Settings.defaults(), Ticker.system());
 * s.share(Set.of("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"));
 * s.applyLimits("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", new MpsLimits(8192, 70));
 * ScheduledFuture<?> f = s.tickEvery(timer, Duration.ofSeconds(1));
 * ...
 * s.close();   // the daemons keep running
 * }</pre>
 *
 * <p>Thread safety: thread-safe; every method holds the supervisor's lock, so that no two calls start
 * or quit a GPU's daemon at the same time (shown by {@code MpsSupervisorConcurrencyTest}).
 */
public final class MpsSupervisor implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MpsSupervisor.class);

    /**
     * Health checks and back-off.
     *
     * @param healthEvery    how often a running daemon is checked
     * @param initialBackoff the wait before the first restart after a failure
     * @param maxBackoff     the longest wait between restarts
     * @param stableAfter    a daemon healthy this long since its start or adoption counts its next failure as the first
     *
     * <p>Thread safety: immutable.
     */
    public record Settings(Duration healthEvery, Duration initialBackoff, Duration maxBackoff, Duration stableAfter) {
        public Settings {
            Backoff.positive("healthEvery", healthEvery);
            new Backoff(initialBackoff, maxBackoff);   // checks both
            Backoff.positive("stableAfter", stableAfter);
        }

        /** Checks every 5 s, back-off from 1 s doubling to 60 s, stable after 5 min. */
        public static Settings defaults() {
            return new Settings(Duration.ofSeconds(5), Duration.ofSeconds(1), Duration.ofSeconds(60), Duration.ofMinutes(5));
        }

    }

    /** What a GPU's daemon is doing. */
    public enum State {
        /** Started and answering; checked every {@link Settings#healthEvery()}. */
        RUNNING,
        /**
         * Failed a check or a start; at {@link DaemonStatus#nextActionAtNanos()} adopted if it answers again,
         * else sent {@code quit} and started.
         */
        BACKING_OFF
    }

    /**
     * One GPU's daemon as the supervisor sees it.
     *
     * @param gpuUuid             the GPU
     * @param state               running or backing off
     * @param starts              how many times the supervisor started it ({@code -d}), failed starts included
     * @param consecutiveFailures failures since it last counted as stable
     * @param nextActionAtNanos   ticker time of the next health check (running) or of the check and restart
     *                            that end the back-off (backing off)
     * @param pid                 the running daemon's pid as it wrote it ({@link MpsControl#daemonPid}), when known
     * @param limits              the limits set on the running daemon, if any
     *
     * <p>Thread safety: immutable.
     */
    public record DaemonStatus(String gpuUuid, State state, int starts, int consecutiveFailures, long nextActionAtNanos,
                               Optional<Long> pid, Optional<MpsLimits> limits) {
    }

    private static final class Daemon {
        final String gpu;
        State state;
        int starts;
        int failures;
        long startedAt;
        long nextAt;
        Long pid;            // of the running daemon, when known
        MpsLimits applied;   // set on the running daemon

        Daemon(String gpu) {
            this.gpu = gpu;
        }
    }

    private final MpsControl control;
    private final MpsDaemonMode mode;
    private final Settings settings;
    private final Ticker ticker;
    private final Map<String, Daemon> daemons = new TreeMap<>();       // guarded by this
    private final Map<String, MpsLimits> wanted = new TreeMap<>();     // guarded by this
    private boolean closed;                                             // guarded by this

    /** A supervisor that starts the daemons itself ({@link MpsDaemonMode#AGENT}). */
    public MpsSupervisor(MpsControl control, Settings settings, Ticker ticker) {
        this(control, MpsDaemonMode.AGENT, settings, ticker);
    }

    /**
     * @param mode whether the supervisor starts and quits daemons ({@link MpsDaemonMode#AGENT}) or only adopts
     *             those another pod runs ({@link MpsDaemonMode#EXTERNAL})
     */
    public MpsSupervisor(MpsControl control, MpsDaemonMode mode, Settings settings, Ticker ticker) {
        this.control = Objects.requireNonNull(control, "control");
        this.mode = Objects.requireNonNull(mode, "mode");
        this.settings = Objects.requireNonNull(settings, "settings");
        this.ticker = Objects.requireNonNull(ticker, "ticker");
    }

    /** Whether this supervisor starts and quits daemons or only adopts them. */
    public MpsDaemonMode mode() {
        return mode;
    }

    /**
     * Makes these GPUs the shared ones: for each GPU not yet supervised adopts its daemon if one answers, else
     * starts one ({@link MpsDaemonMode#AGENT}) or waits for it ({@link MpsDaemonMode#EXTERNAL}); gives up the
     * supervised GPUs not in the set (in {@code AGENT} mode their daemons are quit, and their limits forgotten). A
     * start that fails, or a daemon that starts but does not answer, backs off and is handled by {@link #tick()}
     * when the back-off is over (adopted if it answers then, else quit and started).
     *
     * @throws IllegalStateException after {@link #close()}
     */
    public synchronized void share(Collection<String> gpuUuids) {
        if (closed) {
            throw new IllegalStateException("the MPS supervisor is closed");
        }
        Set<String> shared = new LinkedHashSet<>(gpuUuids);
        for (String gpu : Set.copyOf(daemons.keySet())) {
            if (!shared.contains(gpu)) {
                Daemon d = daemons.remove(gpu);
                wanted.remove(gpu);
                if (mode == MpsDaemonMode.AGENT) {
                    quit(d);
                } else {
                    LOG.info("GPU {} is no longer shared; its MPS control daemon is left to the MPS DaemonSet", gpu);
                }
            }
        }
        for (String gpu : shared) {
            if (!daemons.containsKey(gpu)) {
                Daemon d = new Daemon(gpu);
                daemons.put(gpu, d);
                if (control.healthy(gpu)) {
                    LOG.info("MPS control daemon of GPU {} already answers: supervising it", gpu);
                    running(d, ticker.read());
                } else if (mode == MpsDaemonMode.AGENT) {
                    start(d);
                } else {
                    waiting(d, ticker.read());
                }
            }
        }
    }

    /**
     * With {@link MpsDaemonMode#EXTERNAL}: checks a GPU that waits for its daemon now, out of its schedule, and
     * adopts the daemon if it answers (the reconciler's steps call it, so that a daemon the DaemonSet has just
     * started is taken up at once). A no-op for a GPU that runs or is not supervised, and in {@code AGENT} mode
     * (where the back-off decides when to check and restart).
     *
     * @return whether the GPU's daemon runs now
     */
    public synchronized boolean adoptIfAnswering(String gpuUuid) {
        Daemon d = daemons.get(gpuUuid);
        if (closed || d == null) {
            return false;
        }
        if (d.state == State.RUNNING) {
            return true;
        }
        if (mode == MpsDaemonMode.EXTERNAL && control.healthy(gpuUuid)) {
            LOG.info("MPS control daemon of GPU {} answers now: supervising it", gpuUuid);
            running(d, ticker.read());
            return true;
        }
        return false;
    }

    /**
     * Holds a shared GPU's daemon to these limits: remembers them (for every daemon the supervisor starts or adopts
     * from now on) and, unless the running daemon has them already, sets its defaults and the same limits on each
     * server {@code get_server_list} names. A no-op when they are set on the running daemon.
     *
     * @throws IllegalStateException naming the GPU when it is not shared or its daemon does not run
     * @throws IOException           when a command fails (the limits are tried again at the next health check and
     *                               the next call)
     */
    public synchronized void applyLimits(String gpuUuid, MpsLimits limits) throws IOException {
        Objects.requireNonNull(limits, "limits");
        if (closed) {
            throw new IllegalStateException("the MPS supervisor is closed");
        }
        Daemon d = daemons.get(gpuUuid);
        if (d == null) {
            throw new IllegalStateException("GPU " + gpuUuid + " is not shared: no MPS control daemon to set limits on");
        }
        wanted.put(gpuUuid, limits);
        if (d.state != State.RUNNING) {
            throw new IllegalStateException("the MPS control daemon of GPU " + gpuUuid + " does not run (" + d.state
                    + "): its limits (" + limits + ") are set once it does");
        }
        if (!limits.equals(d.applied)) {
            apply(d, limits);
        }
    }

    /** Forgets the limits asked for this GPU; nothing is sent (the daemon keeps what it has until it quits). */
    public synchronized void forgetLimits(String gpuUuid) {
        wanted.remove(gpuUuid);
        Daemon d = daemons.get(gpuUuid);
        if (d != null) {
            d.applied = null;
        }
    }

    /** The GPUs whose running daemon has the limits last asked for. */
    public synchronized Set<String> limited() {
        Set<String> out = new LinkedHashSet<>();
        for (Daemon d : daemons.values()) {
            if (d.state == State.RUNNING && d.applied != null && d.applied.equals(wanted.get(d.gpu))) {
                out.add(d.gpu);
            }
        }
        return out;
    }

    /**
     * Does what is due now: health checks of running daemons; for each GPU whose back-off is over, adoption of
     * its daemon if it answers again, else {@code quit} and a start. Whether a GPU is due is decided at the
     * ticker's time when its turn comes.
     */
    public synchronized void tick() {
        if (closed) {
            return;
        }
        for (Daemon d : daemons.values()) {
            if (ticker.read() - d.nextAt < 0) {
                continue;
            }
            if (d.state == State.RUNNING) {
                if (control.healthy(d.gpu)) {
                    d.nextAt = ticker.read() + settings.healthEvery().toNanos();
                    Long pid = control.daemonPid(d.gpu).orElse(null);
                    if (pid != null && d.pid != null && !pid.equals(d.pid)) {
                        LOG.warn("MPS control daemon of GPU {} was restarted behind the supervisor (pid {} -> {}): its limits are set again",
                                d.gpu, d.pid, pid);
                        d.applied = null;
                    }
                    if (pid != null) {
                        d.pid = pid;
                    }
                    applyQuietly(d);
                } else {
                    LOG.warn("MPS control daemon of GPU {} does not answer", d.gpu);
                    failed(d, ticker.read());
                }
            } else if (mode == MpsDaemonMode.AGENT) {
                adoptOrRestart(d);
            } else if (control.healthy(d.gpu)) {
                LOG.info("MPS control daemon of GPU {} answers now: supervising it", d.gpu);
                running(d, ticker.read());
            } else {
                waiting(d, ticker.read());
            }
        }
    }

    /** The supervised GPUs' daemons, by GPU UUID. */
    public synchronized Map<String, DaemonStatus> status() {
        Map<String, DaemonStatus> out = new TreeMap<>();
        for (Daemon d : daemons.values()) {
            out.put(d.gpu, new DaemonStatus(d.gpu, d.state, d.starts, d.failures, d.nextAt, Optional.ofNullable(d.pid),
                    Optional.ofNullable(d.applied)));
        }
        return out;
    }

    /** Calls {@link #tick()} on this executor every {@code period}; cancel the future to stop. */
    public ScheduledFuture<?> tickEvery(ScheduledExecutorService timer, Duration period) {
        long ms = Math.max(1, period.toMillis());
        return timer.scheduleWithFixedDelay(() -> {
            try {
                tick();
            } catch (RuntimeException e) {
                LOG.error("MPS supervision tick failed", e);
            }
        }, ms, ms, TimeUnit.MILLISECONDS);
    }

    /**
     * Supervises nothing more and leaves the daemons running: the node agent's stop does not stop sharing, and a
     * restarted agent adopts them. Idempotent.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (!daemons.isEmpty()) {
            LOG.info("MPS supervision stops; {} control daemon(s) keep running: {}", daemons.size(), daemons.keySet());
        }
        daemons.clear();
        wanted.clear();
    }

    /** Quits every supervised daemon and closes: the stop of the MPS DaemonSet's pod ({@link MpsControlDaemon}). */
    public synchronized void quitAll() {
        if (closed) {
            return;
        }
        for (Daemon d : daemons.values()) {
            quit(d);
        }
        daemons.clear();
        close();
    }

    /**
     * The end of a back-off: a daemon that answers again is adopted; otherwise it is asked to quit (it may be
     * hung, or long gone) and a new one is started, since the program refuses {@code -d} while one lives.
     */
    private void adoptOrRestart(Daemon d) {
        if (control.healthy(d.gpu)) {
            LOG.info("MPS control daemon of GPU {} answers again after {} consecutive failure(s): adopting it, no restart",
                    d.gpu, d.failures);
            running(d, ticker.read());
            return;
        }
        try {
            control.quit(d.gpu);
            LOG.info("MPS control daemon of GPU {} did not answer but took quit; starting a new one", d.gpu);
        } catch (IOException e) {
            LOG.info("quit to the MPS control daemon of GPU {} before its restart failed (none may run): {}",
                    d.gpu, e.getMessage());
        }
        start(d);
    }

    private void start(Daemon d) {
        d.starts++;
        try {
            control.start(d.gpu);
        } catch (IOException e) {
            LOG.warn("starting the MPS control daemon of GPU {} failed: {}", d.gpu, e.getMessage());
            failed(d, ticker.read());
            return;
        }
        if (control.healthy(d.gpu)) {
            LOG.info("MPS control daemon of GPU {} started", d.gpu);
            running(d, ticker.read());
        } else {
            LOG.warn("MPS control daemon of GPU {} started but does not answer", d.gpu);
            failed(d, ticker.read());
        }
    }

    private void running(Daemon d, long now) {
        d.state = State.RUNNING;
        d.startedAt = now;
        d.nextAt = now + settings.healthEvery().toNanos();
        d.pid = control.daemonPid(d.gpu).orElse(null);
        d.applied = null;   // a daemon just started or adopted: its defaults are not known to be ours
        applyQuietly(d);
    }

    /** {@link MpsDaemonMode#EXTERNAL}: no daemon answers yet; check again after {@link Settings#healthEvery()}. */
    private void waiting(Daemon d, long now) {
        d.state = State.BACKING_OFF;
        d.failures++;
        d.nextAt = now + settings.healthEvery().toNanos();
        if (d.failures == 1 || d.failures % 12 == 0) {
            LOG.warn("no MPS control daemon answers for GPU {} (--mps-daemons external: the MPS control daemon DaemonSet "
                    + "starts it); checked again every {} ms", d.gpu, settings.healthEvery().toMillis());
        }
    }

    /** Sets the limits asked for on a running daemon that lacks them; a failure is logged and retried later. */
    private void applyQuietly(Daemon d) {
        MpsLimits l = wanted.get(d.gpu);
        if (l == null || l.equals(d.applied)) {
            return;
        }
        try {
            apply(d, l);
        } catch (IOException | RuntimeException e) {
            LOG.warn("setting the limits ({}) of the MPS control daemon of GPU {} failed; retried at the next check: {}",
                    l, d.gpu, e.getMessage());
        }
    }

    /** The daemon's defaults, then each running server's limits; {@code d.applied} once all held. */
    private void apply(Daemon d, MpsLimits l) throws IOException {
        d.applied = null;
        for (String c : l.defaultCommands()) {
            control.command(d.gpu, c);
        }
        List<Long> servers = serverPids(control.command(d.gpu, "get_server_list"));
        for (long pid : servers) {
            for (String c : l.serverCommands(pid)) {
                control.command(d.gpu, c);
            }
        }
        d.applied = l;
        LOG.info("MPS limits of GPU {}: {} (the daemon's defaults and {} running server(s))", d.gpu, l, servers.size());
    }

    /** The pids in {@code get_server_list}'s output: its whole-number words. */
    static List<Long> serverPids(String output) {
        List<Long> out = new ArrayList<>();
        for (String word : output.trim().split("\\s+")) {
            if (!word.isEmpty() && word.chars().allMatch(Character::isDigit) && word.length() <= 18) {
                out.add(Long.parseLong(word));
            }
        }
        return List.copyOf(out);
    }

    private void failed(Daemon d, long now) {
        if (d.state == State.RUNNING && now - d.startedAt >= settings.stableAfter().toNanos()) {
            d.failures = 0;
        }
        long delay = backoffNanos(d.failures);
        d.failures++;
        d.state = State.BACKING_OFF;
        d.nextAt = now + delay;
        LOG.info("restarting the MPS control daemon of GPU {} in {} ms (failure {})", d.gpu, delay / 1_000_000, d.failures);
    }

    /** {@code initialBackoff * 2^failures}, at most {@code maxBackoff} ({@link Backoff}, after {@code failures + 1}). */
    long backoffNanos(int failures) {
        return new Backoff(settings.initialBackoff(), settings.maxBackoff()).afterFailures(failures + 1);
    }

    private void quit(Daemon d) {
        try {
            control.quit(d.gpu);
            LOG.info("MPS control daemon of GPU {} quit", d.gpu);
        } catch (IOException e) {
            LOG.warn("quitting the MPS control daemon of GPU {}: {}", d.gpu, e.getMessage());
        }
    }
}
