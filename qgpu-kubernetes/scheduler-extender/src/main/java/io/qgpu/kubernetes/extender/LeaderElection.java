package io.qgpu.kubernetes.extender;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderCallbacks;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderElectionConfigBuilder;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderElector;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaseLock;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Validate;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Leader election among extender replicas on a {@code coordination.k8s.io/v1} Lease, through
 * fabric8's {@link LeaderElector}. Only the leader is {@linkplain #leading() leading}: it serves the
 * verbs and reports ready; the others wait, renew nothing, and try to take the Lease every retry
 * period.
 *
 * <p>Taking over: when this replica wins the Lease it first runs the {@code takeover} step (the
 * extender rebuilds its ledger from the bound pods' annotations, so that placements made by the
 * previous leader are there), and only then reports {@link #leading()} true. If the step fails, the
 * Lease is given back and the replica stands again. A leader that cannot renew within the renew
 * deadline stops leading (before the Lease can expire for the others) and stands again.
 *
 * <pre>{@code
 * LeaderElection.Settings s = new LeaderElection.Settings("kube-system", "qgpu-scheduler-extender", "replica-a",
 *         Duration.ofSeconds(15), Duration.ofSeconds(10), Duration.ofSeconds(2));
 * try (LeaderElection election = new LeaderElection(client, s, () -> extender.reconcile(pods()))) {
 *     election.start();
 *     election.leading();   // true once this replica holds the Lease and has rebuilt its ledger
 * }
 * }</pre>
 *
 * <p>Thread safety: thread-safe. The callbacks run on fabric8's threads; the takeover step runs on
 * one thread of its own, never concurrently with itself.
 */
public final class LeaderElection implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LeaderElection.class);

    /**
     * Where the Lease lives and the election's timings (the meanings are kube-scheduler's
     * {@code --leader-elect-*} ones): a leader renews every {@code retryPeriod} and gives up when it
     * could not renew for {@code renewDeadline}; the others take a Lease that was not renewed for
     * {@code leaseDuration}. Must hold: leaseDuration &gt; renewDeadline &gt; 1.2 x retryPeriod.
     */
    public record Settings(String namespace, String leaseName, String identity, Duration leaseDuration,
                           Duration renewDeadline, Duration retryPeriod) {
        /** kube-scheduler's defaults: 15 s, 10 s, 2 s. */
        public static final Duration DEFAULT_LEASE_DURATION = Duration.ofSeconds(15);
        public static final Duration DEFAULT_RENEW_DEADLINE = Duration.ofSeconds(10);
        public static final Duration DEFAULT_RETRY_PERIOD = Duration.ofSeconds(2);

        public Settings {
            Validate.notBlank("--lease-namespace", namespace);
            Validate.notBlank("--lease-name", leaseName);
            Validate.notBlank("--identity", identity);
            Validate.notNull("--lease-duration", leaseDuration);
            Validate.notNull("--renew-deadline", renewDeadline);
            Validate.notNull("--retry-period", retryPeriod);
            if (retryPeriod.isNegative() || retryPeriod.isZero()) {
                throw new InvalidValueException("--retry-period", retryPeriod, "must be positive");
            }
            if (renewDeadline.toMillis() * 10 <= retryPeriod.toMillis() * 12) {
                throw new InvalidValueException("--renew-deadline", renewDeadline, "must be more than 1.2 x --retry-period ("
                        + retryPeriod + ")");
            }
            if (leaseDuration.compareTo(renewDeadline) <= 0) {
                throw new InvalidValueException("--lease-duration", leaseDuration, "must be longer than --renew-deadline ("
                        + renewDeadline + ")");
            }
        }
    }

    private final KubernetesClient client;
    private final Settings settings;
    private final Runnable takeover;
    private final ExecutorService steps;
    private final AtomicReference<String> leader = new AtomicReference<>();
    /** Notified on every change of {@link #leading} or of the leader seen, for {@link #await}. */
    private final Object changes = new Object();
    private CompletableFuture<?> running;
    private LeaderElector elector;
    private long term;
    private boolean elected;
    private volatile boolean leading;
    private boolean closed;

    /**
     * @param takeover run after this replica won the Lease and before it reports leading; an
     *                 exception gives the Lease back
     */
    public LeaderElection(KubernetesClient client, Settings settings, Runnable takeover) {
        this.client = Validate.notNull("client", client);
        this.settings = Validate.notNull("settings", settings);
        this.takeover = Validate.notNull("takeover", takeover);
        this.steps = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "qgpu-extender-takeover");
            t.setDaemon(true);
            return t;
        });
    }

    /** Stands for election; returns at once. */
    public synchronized void start() {
        if (closed) {
            throw new IllegalStateException("closed");
        }
        if (running != null) {
            throw new IllegalStateException("already started");
        }
        stand();
    }

    /** Whether this replica holds the Lease and has finished taking over: it binds and is ready. */
    public boolean leading() {
        return leading;
    }

    /** The identity of the leader last seen in the Lease, if any. */
    public Optional<String> leader() {
        return Optional.ofNullable(leader.get());
    }

    /**
     * Waits until {@code condition} holds for this election, at most {@code timeout}, re-checking it
     * each time {@link #leading()} or {@link #leader()} changes (no polling).
     *
     * @return whether the condition holds
     */
    public boolean await(Predicate<LeaderElection> condition, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (changes) {
            while (!condition.test(this)) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(changes, left);
            }
            return true;
        }
    }

    private void changed() {
        synchronized (changes) {
            changes.notifyAll();
        }
    }

    private void newLeader(String identity) {
        leader.set(identity);
        changed();
    }

    public Settings settings() {
        return settings;
    }

    private synchronized void stand() {
        elector = client.leaderElector().withConfig(new LeaderElectionConfigBuilder()
                .withName(settings.leaseName())
                .withLock(new LeaseLock(settings.namespace(), settings.leaseName(), settings.identity()))
                .withLeaseDuration(settings.leaseDuration())
                .withRenewDeadline(settings.renewDeadline())
                .withRetryPeriod(settings.retryPeriod())
                .withReleaseOnCancel(false) // close() releases explicitly; abandon() must not
                .withLeaderCallbacks(new LeaderCallbacks(this::won, this::lost, this::newLeader))
                .build()).build();
        running = elector.start();
        LOG.info("{} stands for leader on Lease {}/{}", settings.identity(), settings.namespace(), settings.leaseName());
    }

    private synchronized void won() {
        elected = true;
        long mine = ++term;
        LOG.info("{} won Lease {}/{}; taking over", settings.identity(), settings.namespace(), settings.leaseName());
        steps.execute(() -> takeOver(mine));
    }

    private void takeOver(long mine) {
        try {
            takeover.run();
        } catch (RuntimeException e) {
            LOG.error("{}: take-over failed; giving the Lease back: {}", settings.identity(), e.toString(), e);
            giveBack(mine);
            return;
        }
        synchronized (this) {
            if (elected && term == mine && !closed) {
                leading = true;
                LOG.info("{} is the leader", settings.identity());
            }
        }
        changed();
    }

    private void giveBack(long mine) {
        CompletableFuture<?> r;
        LeaderElector e;
        synchronized (this) {
            if (term != mine || closed) {
                return;
            }
            r = running;
            e = elector;
        }
        // outside this object's lock: fabric8 calls back into won()/lost() while holding the elector's
        r.cancel(true); // calls lost(), which stands again
        e.release();
    }

    private synchronized void lost() {
        boolean was = elected;
        elected = false;
        leading = false;
        changed();
        term++;
        if (was) {
            LOG.warn("{} stopped leading on Lease {}/{}", settings.identity(), settings.namespace(), settings.leaseName());
        }
        if (!closed) {
            // fabric8's elector ends when leadership ends; stand again (from a fresh thread, not the callback's)
            CompletableFuture.runAsync(this::standAgain, steps);
        }
    }

    private synchronized void standAgain() {
        if (!closed && running != null && running.isDone()) {
            stand();
        }
    }

    /** Stops standing and gives the Lease back, so that another replica takes over at its next retry. */
    @Override
    public void close() {
        stop(true);
    }

    /**
     * Stops standing without giving the Lease back, as a crashed process would: the others take over
     * once the Lease expires. For tests.
     */
    void abandon() {
        stop(false);
    }

    private void stop(boolean release) {
        LeaderElector e;
        CompletableFuture<?> r;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            leading = false;
            e = elector;
            r = running;
        }
        changed();
        if (r != null) {
            r.cancel(true);
        }
        if (release && e != null) {
            try {
                e.release();
            } catch (RuntimeException ex) {
                LOG.warn("{}: could not release Lease {}/{}: {}", settings.identity(), settings.namespace(), settings.leaseName(),
                        ex.toString());
            }
        }
        steps.shutdown();
        try {
            steps.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Parses a duration as every qgpu flag and file takes it ({@link io.qgpu.core.time.Durations}):
     * a number and a unit ({@code 15s}, {@code 500ms}); a bare number is refused. The duration must be positive.
     *
     * @throws InvalidValueException naming the flag and the value
     */
    static Duration parseDuration(String flag, String value) {
        Duration d = io.qgpu.core.time.Durations.parse(flag, value);
        if (d.isZero() || d.isNegative()) {
            throw new InvalidValueException(flag, value, "must be positive");
        }
        return d;
    }
}
