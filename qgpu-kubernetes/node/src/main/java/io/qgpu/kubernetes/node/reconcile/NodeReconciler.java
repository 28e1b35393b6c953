package io.qgpu.kubernetes.node.reconcile;

import io.qgpu.api.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one loop that brings a node agent's side effects into line with its desired state (the ledger and the
 * saved claims or allocations): a pass over its {@link NodeResource resources} removes what is present and no
 * longer desired (resources in reverse order) and then ensures every desired key (resources in order). A step
 * that fails is retried with exponential back-off per key ({@link Settings#initialBackoff()} doubling up to
 * {@link Settings#maxBackoff()}) until it holds; the other keys go on.
 *
 * <p>When it runs:
 * <ul>
 *   <li>{@link #trigger()} after every change of the desired state (a prepare, an unprepare, a health change):
 *       a pass soon on the agent's timer, coalesced with one already waiting;</li>
 *   <li>every {@link Settings#period()} on that timer, which also repairs what changed behind the agent's back
 *       (a spec file deleted by hand, a slice edited on the API server);</li>
 *   <li>at the earliest back-off end while a step fails;</li>
 *   <li>synchronously through {@link #ensureNow} and {@link #removeNow}, for the keys of one claim inside a
 *       {@link NodeTransaction}, so that an answer is given only once its side effects hold.</li>
 * </ul>
 * Tests call {@link #reconcile()} after moving their {@link Ticker}; no pass depends on wall-clock time.
 *
 * <pre>{@code
 * NodeReconciler r = new NodeReconciler("qgpu-dra-driver", List.of(hostDirectories, cdiSpecs, slice),
 *         NodeReconciler.Settings.defaults(), Ticker.system());
 * r.start(timer);                 // periodic passes and back-off retries on this timer
 * r.trigger();                    // after a change
 * NodeReconciler.Report last = r.reconcile();
 * last.converged();               // every desired key holds, nothing stale is left
 * }</pre>
 *
 * <p>Thread safety: thread-safe; passes and the synchronous steps are serialised on this object, so a resource
 * is never called from two threads at once.
 */
public final class NodeReconciler implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(NodeReconciler.class);

    /**
     * When the loop runs.
     *
     * @param period         the time between two passes when nothing fails
     * @param initialBackoff the wait before the first retry of a failed step
     * @param maxBackoff     the longest wait between two retries of a step
     *
     * <p>Thread safety: immutable.
     */
    public record Settings(Duration period, Duration initialBackoff, Duration maxBackoff) {
        public Settings {
            Backoff.positive("period", period);
            new Backoff(initialBackoff, maxBackoff);   // checks both
        }

        /** A pass every 10 s; retries after 0.5 s doubling to 30 s. */
        public static Settings defaults() {
            return new Settings(Duration.ofSeconds(10), Duration.ofMillis(500), Duration.ofSeconds(30));
        }

        /** {@code initialBackoff * 2^(attempts-1)}, at most {@code maxBackoff} ({@link Backoff}). */
        long backoffNanos(int attempts) {
            return new Backoff(initialBackoff, maxBackoff).afterFailures(attempts);
        }
    }

    /**
     * A step that does not hold yet.
     *
     * @param kind          the resource
     * @param key           the key ({@code *} when the resource's present keys could not be read)
     * @param step          {@code ensure}, {@code remove}, {@code present} or {@code desired}
     * @param attempts      failed attempts in a row
     * @param error         the last failure, in words
     * @param retryAtNanos  ticker time of the next attempt
     *
     * <p>Thread safety: immutable.
     */
    public record Failure(String kind, String key, String step, int attempts, String error, long retryAtNanos) {
    }

    /**
     * What a pass did.
     *
     * @param ensured  keys ensured (a no-op ensure counts)
     * @param removed  keys removed
     * @param failures what does not hold after the pass, including steps skipped while backing off
     *
     * <p>Thread safety: immutable.
     */
    public record Report(int ensured, int removed, List<Failure> failures) {
        public Report {
            failures = List.copyOf(failures);
        }

        /** Whether every step holds. */
        public boolean converged() {
            return failures.isEmpty();
        }
    }

    private record StepKey(String kind, Object key, String step) {
    }

    private static final class Failing {
        int attempts;
        String error = "";
        long retryAt;
    }

    private final String name;
    private final List<NodeResource<?>> resources;
    private final Settings settings;
    private final Ticker ticker;
    private final Map<StepKey, Failing> failing = new HashMap<>();   // guarded by this
    private final Object scheduling = new Object();
    private ScheduledExecutorService timer;                          // guarded by scheduling
    private ScheduledFuture<?> next;                                  // guarded by scheduling
    private long nextAt;                                              // guarded by scheduling
    private long generation;                                          // guarded by scheduling
    private boolean closed;                                           // guarded by scheduling

    /**
     * @param name      the agent, for logs and the timer's jobs
     * @param resources in the order their keys are ensured (removed in reverse)
     */
    public NodeReconciler(String name, List<? extends NodeResource<?>> resources, Settings settings, Ticker ticker) {
        this.name = Objects.requireNonNull(name, "name");
        this.resources = List.copyOf(resources);
        this.settings = Objects.requireNonNull(settings, "settings");
        this.ticker = Objects.requireNonNull(ticker, "ticker");
    }

    /** The settings. */
    public Settings settings() {
        return settings;
    }

    /**
     * One pass: removes stale keys and ensures desired ones, skipping steps whose back-off has not ended.
     *
     * @return what the pass did and what still fails
     */
    public synchronized Report reconcile() {
        return pass(false);
    }

    /** One pass that retries every failing step now, back-off or not (after a restart of the API server, say). */
    public synchronized Report reconcileNow() {
        return pass(true);
    }

    /** The steps that do not hold after the last pass or synchronous step. */
    public synchronized List<Failure> failures() {
        List<Failure> out = new ArrayList<>();
        failing.forEach((k, f) -> out.add(failure(k, f)));
        out.sort(java.util.Comparator.comparing(Failure::kind).thenComparing(Failure::key).thenComparing(Failure::step));
        return List.copyOf(out);
    }

    /**
     * Ensures these keys of one resource now, in order, back-off or not; the first failure is thrown (and
     * retried by later passes while the key stays desired).
     */
    public synchronized <K> void ensureNow(NodeResource<K> resource, Collection<K> keys) throws Exception {
        long now = ticker.read();
        for (K k : keys) {
            StepKey sk = new StepKey(resource.kind(), k, "ensure");
            try {
                resource.ensure(k);
                succeeded(sk);
            } catch (Exception e) {
                failed(sk, e, now);
                throw e;
            }
        }
    }

    /**
     * Removes these keys of one resource now, each attempted even when another fails; what failed is logged and
     * left to later passes (it is removed once it is no longer desired).
     *
     * @return whether every removal held
     */
    public synchronized <K> boolean removeNow(NodeResource<K> resource, Collection<K> keys) {
        long now = ticker.read();
        boolean all = true;
        for (K k : keys) {
            StepKey sk = new StepKey(resource.kind(), k, "remove");
            try {
                resource.remove(k);
                succeeded(sk);
                failing.remove(new StepKey(resource.kind(), k, "ensure"));
            } catch (Exception e) {
                failed(sk, e, now);
                all = false;
            }
        }
        return all;
    }

    private Report pass(boolean force) {
        long now = ticker.read();
        int ensured = 0;
        int removed = 0;
        List<Set<?>> desiredOf = new ArrayList<>();
        for (NodeResource<?> r : resources) {
            desiredOf.add(desired(r, now));
        }
        for (int i = resources.size() - 1; i >= 0; i--) {
            Set<?> want = desiredOf.get(i);
            if (want != null) {
                removed += removeStale(resources.get(i), want, now, force);
            }
        }
        for (int i = 0; i < resources.size(); i++) {
            Set<?> want = desiredOf.get(i);
            if (want != null) {
                ensured += ensureAll(resources.get(i), want, now, force);
            }
        }
        // a key no longer desired nor present has nothing left to retry
        failing.keySet().removeIf(sk -> sk.step().equals("ensure") && !desiredOrUnknown(sk, desiredOf));
        Report report = new Report(ensured, removed, failures());
        if (!report.converged()) {
            LOG.debug("{}: pass left {} step(s) failing", name, report.failures().size());
        }
        scheduleAfterPass();
        return report;
    }

    private boolean desiredOrUnknown(StepKey sk, List<Set<?>> desiredOf) {
        for (int i = 0; i < resources.size(); i++) {
            if (resources.get(i).kind().equals(sk.kind())) {
                Set<?> want = desiredOf.get(i);
                return want == null || want.contains(sk.key());
            }
        }
        return false;
    }

    private Set<?> desired(NodeResource<?> r, long now) {
        StepKey sk = new StepKey(r.kind(), "*", "desired");
        try {
            Set<?> d = new LinkedHashSet<>(r.desired());
            succeeded(sk);
            return d;
        } catch (RuntimeException e) {
            failed(sk, e, now);
            return null;
        }
    }

    private <K> int removeStale(NodeResource<K> r, Set<?> want, long now, boolean force) {
        StepKey listing = new StepKey(r.kind(), "*", "present");
        if (!force && backingOff(listing, now)) {
            return 0;
        }
        Set<K> present;
        try {
            present = new LinkedHashSet<>(r.present());
            succeeded(listing);
        } catch (Exception e) {
            failed(listing, e, now);
            return 0;
        }
        int n = 0;
        for (K k : present) {
            if (want.contains(k)) {
                continue;
            }
            StepKey sk = new StepKey(r.kind(), k, "remove");
            if (!force && backingOff(sk, now)) {
                continue;
            }
            try {
                r.remove(k);
                succeeded(sk);
                n++;
            } catch (Exception e) {
                failed(sk, e, now);
            }
        }
        // a removal that failed for a key no longer present has nothing left to do
        failing.keySet().removeIf(sk -> sk.kind().equals(r.kind()) && sk.step().equals("remove")
                && (!present.contains(sk.key()) || want.contains(sk.key())));
        return n;
    }

    @SuppressWarnings("unchecked")
    private <K> int ensureAll(NodeResource<K> r, Set<?> want, long now, boolean force) {
        int n = 0;
        for (Object o : want) {
            K k = (K) o;
            StepKey sk = new StepKey(r.kind(), k, "ensure");
            if (!force && backingOff(sk, now)) {
                continue;
            }
            try {
                r.ensure(k);
                succeeded(sk);
                n++;
            } catch (Exception e) {
                failed(sk, e, now);
            }
        }
        return n;
    }

    private boolean backingOff(StepKey sk, long now) {
        Failing f = failing.get(sk);
        return f != null && now - f.retryAt < 0;
    }

    private void succeeded(StepKey sk) {
        Failing f = failing.remove(sk);
        if (f != null) {
            LOG.info("{}: {} {} of {} holds again after {} failed attempt(s)", name, sk.step(), sk.key(), sk.kind(), f.attempts);
        }
    }

    private void failed(StepKey sk, Exception e, long now) {
        Failing f = failing.computeIfAbsent(sk, k -> new Failing());
        f.attempts++;
        f.error = e.getMessage() == null ? e.toString() : e.getMessage();
        long delay = settings.backoffNanos(f.attempts);
        f.retryAt = now + delay;
        LOG.warn("{}: {} {} of {} failed (attempt {}), retried in {} ms: {}", name, sk.step(), sk.key(), sk.kind(), f.attempts,
                delay / 1_000_000, f.error);
    }

    private static Failure failure(StepKey k, Failing f) {
        return new Failure(k.kind(), String.valueOf(k.key()), k.step(), f.attempts, f.error, f.retryAt);
    }

    /** The ticker time of the earliest retry, if a step fails. */
    public synchronized Optional<Long> nextRetryAtNanos() {
        return failing.values().stream().map(f -> f.retryAt).min((a, b) -> Long.compare(a - b, 0));
    }

    // ---------------------------------------------------------------------------------------------- the timer

    /**
     * Runs passes on this timer from now on: one at once, then every {@link Settings#period()}, sooner when a
     * retry is due or {@link #trigger()} is called. A pass that throws is logged; the loop goes on.
     */
    public void start(ScheduledExecutorService timer) {
        synchronized (scheduling) {
            if (this.timer != null) {
                throw new IllegalStateException(name + ": the reconciler is already started");
            }
            this.timer = Objects.requireNonNull(timer, "timer");
        }
        schedule(0);
    }

    /** Asks for a pass soon (on the timer); without {@link #start} it does nothing. */
    public void trigger() {
        schedule(0);
    }

    /** Stops the timer's passes (the timer itself belongs to the caller). Idempotent. */
    @Override
    public void close() {
        synchronized (scheduling) {
            closed = true;
            if (next != null) {
                next.cancel(false);
                next = null;
            }
        }
    }

    private void scheduleAfterPass() {
        long now = ticker.read();
        long delay = settings.period().toNanos();
        Optional<Long> retry = nextRetryAtNanos();
        if (retry.isPresent()) {
            delay = Math.max(0, Math.min(delay, retry.get() - now));
        }
        schedule(delay);   // keeps a pass already waiting if it comes as early
    }

    private void schedule(long delayNanos) {
        synchronized (scheduling) {
            if (timer == null || closed) {
                return;
            }
            long at = ticker.read() + delayNanos;
            if (next != null && !next.isDone() && nextAt - at <= 0) {
                return;   // one already waits, as early or earlier
            }
            if (next != null) {
                next.cancel(false);
            }
            nextAt = at;
            long gen = ++generation;
            try {
                next = timer.schedule(() -> timedPass(gen), delayNanos, TimeUnit.NANOSECONDS);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                LOG.debug("{}: the timer is shut down; no more passes", name);
                next = null;
            }
        }
    }

    private void timedPass(long gen) {
        synchronized (scheduling) {
            if (gen == generation) {
                next = null;   // this is the pass that was waiting
            }
        }
        try {
            reconcile();
        } catch (RuntimeException e) {
            LOG.error("{}: a reconcile pass failed", name, e);
            schedule(settings.initialBackoff().toNanos());
        }
    }
}
