package io.qgpu.core.compute;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.Ticker;
import io.qgpu.api.Validate;
import io.qgpu.core.internal.Saturating;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gemini's token scheduler for one GPU. One token; a tenant launches work only while it holds it;
 * each grant carries a time quota.
 *
 * <ul>
 *   <li><b>Quota.</b> A tenant's first quota is the base quota. After each release
 *       {@code q = w * burst + (1 - w) * q_prev} ({@code w} = {@link TokenSchedulerConfig#burstWeight()},
 *       0.5 by default), then {@code q = max(min, min(q, limit x window))} (Gemini's order: the minimum
 *       wins if the limit is tiny). The burst is the hold as counted (below); under
 *       {@link LimitEnforcement#STRICT}, a grant that the limit cut short and that the tenant used to
 *       the end does not count as a short burst (it counts as {@code q_prev} plus any overrun).</li>
 *   <li><b>Usage.</b> A hold counts from the grant until the release if the tenant returned early,
 *       else until {@code min(release time, expiry + measured overrun)}. Usage is the GPU time counted
 *       in the sliding window ({@link UsageWindow}); time before the scheduler started counts as idle.</li>
 *   <li><b>Next holder.</b> Among the tenants waiting for the token, only those with usage below
 *       {@code limit x window} are eligible (under STRICT: whose headroom {@code limit x window - usage}
 *       is at least {@code min(minQuota, limit x window)}). First those below their request, largest
 *       {@code missing / (missing + usage)} first ({@code missing = request x window - usage}); then the
 *       rest, lowest usage first; ties go to the earliest request.</li>
 *   <li><b>Nobody eligible.</b> Gemini waits until the oldest usage record leaves the window
 *       ({@link TokenDecision.WaitUntil}); STRICT waits until the first waiting tenant's headroom
 *       has grown back to the eligibility threshold, computed exactly.</li>
 *   <li><b>Grant length.</b> The quota; under STRICT at most the headroom.</li>
 * </ul>
 *
 * <p>Deviation from Gemini's code, on purpose: Gemini shrinks the window to the elapsed time during
 * its first window; here the window always has its full length (time before the start is idle), so
 * a limit holds over every window of that length.
 *
 * <pre>{@code
 * TokenScheduler s = TokenScheduler.create(TokenSchedulerConfig.ofDefaults(), Ticker.system());
 * s.addTenant("job-a", Share.of(0.4, 0.7));
 * s.addTenant("job-b", Share.of(0.6, 0.8));
 * s.request("job-a");
 * s.request("job-b");
 * TokenDecision d = s.schedule();          // Granted(job-a or job-b, 250 ms)
 * // ... the holder runs, then:
 * s.release(((TokenDecision.Granted) d).grant().tenant(), 0);
 * }</pre>
 *
 * <p>Thread safety: not thread-safe. Confine it to one thread or guard it with a lock; it never
 * blocks and starts no threads, so it may be called while holding a lock.
 */
public final class TokenScheduler implements ComputeEngine {

    private static final Logger LOG = LoggerFactory.getLogger(TokenScheduler.class);

    private final TokenSchedulerConfig config;
    private final Ticker ticker;
    private final IsolationPolicy policy;
    private final UsageWindow window;
    private final Map<String, Tenant> tenants = new LinkedHashMap<>();
    private @Nullable Grant holder;
    private long requestSeq;

    TokenScheduler(TokenSchedulerConfig config, Ticker ticker, IsolationPolicy policy) {
        this.config = Validate.notNull("tokenScheduler.config", config);
        this.ticker = Validate.notNull("tokenScheduler.ticker", ticker);
        this.policy = Validate.notNull("tokenScheduler.policy", policy);
        this.window = new UsageWindow(config.windowNanos());
    }

    /**
     * Gemini's scheduler with per-tenant request/limit ({@link IsolationPolicy#ELASTIC}), enforcing
     * limits as {@code config} says.
     */
    public static TokenScheduler create(TokenSchedulerConfig config, Ticker ticker) {
        return new TokenScheduler(config, ticker, IsolationPolicy.ELASTIC);
    }

    public TokenSchedulerConfig config() {
        return config;
    }

    @Override
    public IsolationPolicy policy() {
        return policy;
    }

    @Override
    public long windowNanos() {
        return config.windowNanos();
    }

    @Override
    public void addTenant(String tenant, int requestPercent, int limitPercent) {
        addTenant(tenant, ComputeEngine.shareFor(policy, requestPercent, limitPercent));
    }

    /** Adds a tenant with an explicit share (used as given, whatever the policy). */
    public void addTenant(String tenant, Share share) {
        Validate.notBlank("tokenScheduler.tenant", tenant);
        Validate.notNull("tokenScheduler.share", share);
        if (tenants.containsKey(tenant)) {
            throw new ComputeStateException(tenant, "is already registered");
        }
        tenants.put(tenant, new Tenant(tenant, share, config));
    }

    @Override
    public void removeTenant(String tenant) {
        Tenant t = known(tenant);
        if (holder != null && holder.tenant().equals(tenant)) {
            release(tenant, 0);
        }
        tenants.remove(t.id);
        window.remove(t.id);
    }

    @Override
    public List<String> tenants() {
        return List.copyOf(tenants.keySet());
    }

    /** The share a tenant was registered with. */
    public Share share(String tenant) {
        return known(tenant).share;
    }

    /** The quota the tenant's next grant starts from. */
    public long quotaNanos(String tenant) {
        return known(tenant).quota;
    }

    /** Tenants waiting for the token, in request order. */
    public List<String> waiting() {
        List<Tenant> w = new ArrayList<>();
        for (Tenant t : tenants.values()) {
            if (t.waiting) {
                w.add(t);
            }
        }
        w.sort((a, b) -> Long.compare(a.seq, b.seq));
        List<String> ids = new ArrayList<>(w.size());
        w.forEach(t -> ids.add(t.id));
        return ids;
    }

    @Override
    public void request(String tenant) {
        Tenant t = known(tenant);
        if (holder != null && holder.tenant().equals(tenant)) {
            throw new ComputeStateException(tenant, "holds the token; release it before asking again");
        }
        if (!t.waiting) {
            t.waiting = true;
            t.seq = ++requestSeq;
        }
    }

    @Override
    public void withdraw(String tenant) {
        Tenant t = known(tenant);
        if (holder != null && holder.tenant().equals(tenant)) {
            throw new ComputeStateException(tenant, "holds the token; release it instead of withdrawing");
        }
        t.waiting = false;
    }

    @Override
    public TokenDecision schedule() {
        long now = ticker.read();
        if (holder != null) {
            return new TokenDecision.Held(holder);
        }
        boolean strict = strict();
        Tenant best = null;
        long bestUsage = 0;
        long bestRank = 0;
        long bestRemaining = 0;
        boolean anyWaiting = false;
        for (Tenant t : tenants.values()) {
            if (!t.waiting) {
                continue;
            }
            anyWaiting = true;
            long usage = window.usageNanos(t.id, now);
            long remaining = t.limitNanos - usage;
            // STRICT ranks by the usage still in the window when the grant would end (what leaves the
            // window meanwhile no longer counts), so a tenant whose old usage is about to leave is not
            // passed over for one grant per window
            long rank = strict ? window.usageStillInWindowNanos(t.id, now, t.quota) : usage;
            boolean eligible = !t.capped || (strict ? remaining >= t.strictThreshold : remaining > 0);
            if (eligible && (best == null || before(t, rank, best, bestRank))) {
                best = t;
                bestUsage = usage;
                bestRank = rank;
                bestRemaining = remaining;
            }
        }
        if (!anyWaiting) {
            return new TokenDecision.Idle();
        }
        if (best == null) {
            return new TokenDecision.WaitUntil(strict ? strictWakeUp(now) : geminiWakeUp(now));
        }
        long length = best.quota;
        boolean cut = false;
        if (strict) {
            long deduct = Math.min(best.debtNanos, length / 2);
            best.debtNanos -= deduct;
            length -= deduct;
            if (best.capped && bestRemaining < length) {
                length = bestRemaining;
                cut = true;
            }
        }
        best.waiting = false;
        holder = new Grant(best.id, now, best.quota, length, cut);
        LOG.trace("grant {} at {} for {} ns (usage {} ns)", best.id, now, length, bestUsage);
        return new TokenDecision.Granted(holder);
    }

    @Override
    public ReleaseReport release(String tenant, long overrunNanos) {
        return release(tenant, overrunNanos, -1);
    }

    /**
     * Like {@link #release(String, long)}, with a burst measured by the holder (Gemini's clients
     * measure their kernel bursts) instead of the hold.
     *
     * @param burstNanos the measured burst, or a negative value to use the hold as counted
     */
    public ReleaseReport release(String tenant, long overrunNanos, long burstNanos) {
        Tenant t = known(tenant);
        if (holder == null || !holder.tenant().equals(tenant)) {
            throw new ComputeStateException(tenant, "does not hold the token"
                    + (holder == null ? " (nobody does)" : " (" + holder.tenant() + " does)"));
        }
        Validate.atLeast("release[" + tenant + "].overrunNanos", overrunNanos, 0);
        long now = ticker.read();
        if (now < holder.startNanos()) {
            throw new InvalidValueException("tokenScheduler.ticker", now,
                    "went backwards: before the grant's start " + holder.startNanos());
        }
        long expiry = holder.expiresAtNanos();
        long end = now <= expiry ? now : Math.min(now, Saturating.add(expiry, overrunNanos));
        long hold = end - holder.startNanos();
        long burst;
        if (burstNanos >= 0) {
            burst = burstNanos;
        } else if (strict() && end >= expiry) {
            // used to the end: the burst is the quota; the overrun is charged to the next grant instead
            burst = t.quota;
            t.debtNanos = Math.min(t.quota, t.debtNanos + (end - expiry));
        } else if (holder.cut() && end >= expiry) {
            burst = t.quota + (end - expiry);
        } else {
            burst = hold;
        }
        double w = config.burstWeight();
        double q = w * burst + (1.0 - w) * t.quota;
        q = Math.min(q, (double) t.limitNanos);
        q = Math.max(q, (double) config.minQuotaNanos());
        long previousQuota = t.quota;
        t.quota = Math.max(1, Math.round(q));
        window.record(tenant, holder.startNanos(), end);
        ReleaseReport report = new ReleaseReport(tenant, holder.startNanos(), end, burst, t.quota);
        LOG.trace("release {} at {}: hold {} ns, burst {} ns, quota {} -> {} ns", tenant, now, hold, burst,
                previousQuota, t.quota);
        holder = null;
        return report;
    }

    @Override
    public Optional<Grant> holder() {
        return Optional.ofNullable(holder);
    }

    @Override
    public long usageNanos(String tenant) {
        Tenant t = known(tenant);
        long now = ticker.read();
        long u = window.usageNanos(t.id, now);
        if (holder != null && holder.tenant().equals(tenant)) {
            u += now - Math.max(holder.startNanos(), now - config.windowNanos());
        }
        return u;
    }

    @Override
    public long belowRequestFrom(String tenant) {
        Tenant t = known(tenant);
        if (holder != null && holder.tenant().equals(tenant)) {
            throw new ComputeStateException(tenant, "holds the token; its usage is known once it releases it");
        }
        if (t.requestNanos <= 0) {
            return Long.MAX_VALUE;
        }
        return window.timeUsageAtMost(t.id, t.requestNanos - 1, ticker.read());
    }

    /** Gemini's order: below-request tenants by relative deficit, then lowest usage, then request order. */
    private boolean before(Tenant a, long usageA, Tenant b, long usageB) {
        long missingA = a.requestNanos - usageA;
        long missingB = b.requestNanos - usageB;
        boolean belowA = missingA > 0;
        boolean belowB = missingB > 0;
        if (belowA != belowB) {
            return belowA;
        }
        if (belowA) {
            // missing / (missing + usage) = missing / request; compare without division
            double ra = (double) missingA * b.requestNanos;
            double rb = (double) missingB * a.requestNanos;
            if (ra != rb) {
                return ra > rb;
            }
        } else if (usageA != usageB) {
            return usageA < usageB;
        }
        return a.seq < b.seq;
    }

    private long geminiWakeUp(long now) {
        long oldestEnd = window.oldestEnd(now);
        if (oldestEnd == Long.MAX_VALUE) {
            throw new IllegalStateException("no tenant eligible although no usage is recorded");
        }
        return oldestEnd + config.windowNanos();
    }

    private long strictWakeUp(long now) {
        long earliest = Long.MAX_VALUE;
        for (Tenant t : tenants.values()) {
            if (t.waiting) {
                earliest = Math.min(earliest, window.timeUsageAtMost(t.id, t.limitNanos - t.strictThreshold, now));
            }
        }
        return earliest;
    }

    private boolean strict() {
        return config.limitEnforcement() == LimitEnforcement.STRICT;
    }

    private Tenant known(String tenant) {
        Validate.notNull("tokenScheduler.tenant", tenant);
        Tenant t = tenants.get(tenant);
        if (t == null) {
            throw new ComputeStateException(tenant, "is not registered");
        }
        return t;
    }

    private static final class Tenant {
        final String id;
        final Share share;
        final long requestNanos;
        final long limitNanos;
        final long strictThreshold;
        /** A limit below the whole window; a limit of 100% is no cap. */
        final boolean capped;
        long quota;
        /** STRICT: overrun past earlier grants not yet taken off a grant. */
        long debtNanos;
        boolean waiting;
        long seq;

        Tenant(String id, Share share, TokenSchedulerConfig config) {
            this.id = id;
            this.share = share;
            this.requestNanos = Math.round(share.request() * config.windowNanos());
            this.limitNanos = Math.max(1, Math.round(share.limit() * config.windowNanos()));
            this.strictThreshold = Math.min(config.minQuotaNanos(), limitNanos);
            this.capped = limitNanos < config.windowNanos();
            this.quota = config.baseQuotaNanos(); // Gemini: the first grant gets the base quota as is
        }
    }
}
