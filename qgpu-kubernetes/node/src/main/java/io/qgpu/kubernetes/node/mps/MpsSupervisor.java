package io.qgpu.kubernetes.node.mps;

import io.qgpu.api.Ticker;
import java.io.IOException;
import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs and supervises one MPS control daemon per shared GPU. {@link #share} names the GPUs that should have
 * one: for each GPU not yet supervised the supervisor adopts a daemon that already answers (after a restart
 * of the node agent) or else starts one; it quits the daemons of GPUs no longer named. {@link #tick()} does
 * what is due at the ticker's time:
 * <ul>
 *   <li>a running daemon is checked ({@link MpsControl#healthy}) every {@link Settings#healthEvery()}; one
 *       that does not answer goes to {@link State#BACKING_OFF}, as does a GPU whose start fails or whose new
 *       daemon does not answer;</li>
 *   <li>when a GPU's back-off is over, the supervisor checks it again before it restarts anything. A daemon
 *       that answers now (it was only slow or busy) is adopted: {@link State#RUNNING} again, no start, no
 *       quit. Otherwise the supervisor sends {@code quit} (best effort: it fails when no daemon runs or when
 *       the daemon is hung; the failure is logged at info and changes nothing) and then starts a daemon. If
 *       that start fails (the real program refuses {@code -d} while a daemon that did not take the
 *       {@code quit} still lives) or the new daemon does not answer, the GPU backs off again.</li>
 * </ul>
 * So the supervisor never starts a daemon while the GPU's daemon answers, and a hung daemon that answers
 * nothing is not joined by a second one: the starts fail and the waits grow until it goes. The back-off
 * starts at {@link Settings#initialBackoff()} and doubles with each consecutive failure up to
 * {@link Settings#maxBackoff()}; a daemon that stayed healthy for {@link Settings#stableAfter()} since its
 * start or adoption starts again from the initial back-off. Every wait is counted from the ticker's time
 * when the command that decided it returned, so a slow command (one that runs until its timeout) does not
 * use the wait up. {@link #close()} quits every daemon.
 *
 * <p>Time comes only from the {@link Ticker}; the supervisor never sleeps. A deployment calls {@link #tick()}
 * periodically ({@link #tickEvery}); tests advance a manual ticker and call it themselves.
 *
 * <pre>{@code
 * MpsLayout layout = new MpsLayout(Path.of("/run/qgpu/mps"));
 * MpsSupervisor s = new MpsSupervisor(new ProcessMpsControl(Path.of("nvidia-cuda-mps-control"), layout, Duration.ofSeconds(10)),
 *         MpsSupervisor.Settings.defaults(), Ticker.system());
 * s.share(Set.of("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"));
 * ScheduledFuture<?> f = s.tickEvery(timer, Duration.ofSeconds(1));
 * ...
 * s.close();   // quits the daemons
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
            positive("healthEvery", healthEvery);
            positive("initialBackoff", initialBackoff);
            positive("maxBackoff", maxBackoff);
            positive("stableAfter", stableAfter);
            if (maxBackoff.compareTo(initialBackoff) < 0) {
                throw new IllegalArgumentException("maxBackoff = " + maxBackoff + ": must be at least initialBackoff (" + initialBackoff + ")");
            }
        }

        /** Checks every 5 s, back-off from 1 s doubling to 60 s, stable after 5 min. */
        public static Settings defaults() {
            return new Settings(Duration.ofSeconds(5), Duration.ofSeconds(1), Duration.ofSeconds(60), Duration.ofMinutes(5));
        }

        private static void positive(String name, Duration d) {
            Objects.requireNonNull(d, name);
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(name + " = " + d + ": must be positive");
            }
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
     *
     * <p>Thread safety: immutable.
     */
    public record DaemonStatus(String gpuUuid, State state, int starts, int consecutiveFailures, long nextActionAtNanos) {
    }

    private static final class Daemon {
        final String gpu;
        State state;
        int starts;
        int failures;
        long startedAt;
        long nextAt;

        Daemon(String gpu) {
            this.gpu = gpu;
        }
    }

    private final MpsControl control;
    private final Settings settings;
    private final Ticker ticker;
    private final Map<String, Daemon> daemons = new TreeMap<>(); // guarded by this
    private boolean closed;                                       // guarded by this

    public MpsSupervisor(MpsControl control, Settings settings, Ticker ticker) {
        this.control = Objects.requireNonNull(control, "control");
        this.settings = Objects.requireNonNull(settings, "settings");
        this.ticker = Objects.requireNonNull(ticker, "ticker");
    }

    /**
     * Makes these GPUs the shared ones: for each GPU not yet supervised adopts its daemon if one answers, else
     * starts one; quits the daemons of supervised GPUs not in the set. A start that fails, or a daemon that
     * starts but does not answer, backs off and is handled by {@link #tick()} when the back-off is over
     * (adopted if it answers then, else quit and started).
     *
     * @throws IllegalStateException after {@link #close()}
     */
    public synchronized void share(Collection<String> gpuUuids) {
        if (closed) {
            throw new IllegalStateException("the MPS supervisor is closed");
        }
        Set<String> wanted = new LinkedHashSet<>(gpuUuids);
        for (String gpu : Set.copyOf(daemons.keySet())) {
            if (!wanted.contains(gpu)) {
                quit(daemons.remove(gpu));
            }
        }
        for (String gpu : wanted) {
            if (!daemons.containsKey(gpu)) {
                Daemon d = new Daemon(gpu);
                daemons.put(gpu, d);
                if (control.healthy(gpu)) {
                    LOG.info("MPS control daemon of GPU {} already answers: supervising it", gpu);
                    running(d, ticker.read());
                } else {
                    start(d);
                }
            }
        }
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
                } else {
                    LOG.warn("MPS control daemon of GPU {} does not answer", d.gpu);
                    failed(d, ticker.read());
                }
            } else {
                adoptOrRestart(d);
            }
        }
    }

    /** The supervised GPUs' daemons, by GPU UUID. */
    public synchronized Map<String, DaemonStatus> status() {
        Map<String, DaemonStatus> out = new TreeMap<>();
        for (Daemon d : daemons.values()) {
            out.put(d.gpu, new DaemonStatus(d.gpu, d.state, d.starts, d.failures, d.nextAt));
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

    /** Quits every daemon and supervises nothing more. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Daemon d : daemons.values()) {
            quit(d);
        }
        daemons.clear();
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

    /** {@code initialBackoff * 2^failures}, at most {@code maxBackoff}. */
    long backoffNanos(int failures) {
        long initial = settings.initialBackoff().toNanos();
        long max = settings.maxBackoff().toNanos();
        long delay = initial;
        for (int i = 0; i < failures && delay < max; i++) {
            delay = delay > max / 2 ? max : delay * 2;
        }
        return Math.min(delay, max);
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
