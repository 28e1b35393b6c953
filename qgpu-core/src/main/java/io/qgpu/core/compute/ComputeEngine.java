package io.qgpu.core.compute;

import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.Ticker;
import io.qgpu.api.Validate;
import java.util.List;
import java.util.Optional;

/**
 * The compute policy engine of one GPU: decides which tenant holds the GPU's token next and for how
 * long, so that each tenant gets the share its {@link IsolationPolicy} promises, measured as GPU time
 * in a sliding window divided by the window.
 *
 * <table>
 *   <caption>How each policy maps a tenant's request/limit (percent) to a {@link Share}</caption>
 *   <tr><th>policy</th><th>guaranteed (request)</th><th>maximum (limit)</th><th>behaviour</th></tr>
 *   <tr><td>best-effort</td><td>0</td><td>100%</td><td>busy tenants each get 1/N (lowest usage runs next)</td></tr>
 *   <tr><td>fixed-share</td><td>request</td><td>request</td><td>never more than the quota, even on an idle GPU</td></tr>
 *   <tr><td>burst-share</td><td>request</td><td>100%</td><td>quota guaranteed, idle capacity taken, falls back when it is claimed</td></tr>
 *   <tr><td>elastic</td><td>request</td><td>limit</td><td>Gemini's request/limit</td></tr>
 * </table>
 *
 * <p>Engines made by {@link #create} enforce limits strictly ({@link LimitEnforcement#STRICT}), so a
 * tenant never exceeds its limit in any window as long as it stops when its grant expires; a plain
 * {@link TokenScheduler#create} follows the config (Gemini's own rule by default).
 *
 * <p>The engine never sleeps and runs no threads: the caller reports requests and releases and acts
 * on {@link #schedule()}'s decision, reading time from the engine's {@link Ticker}.
 *
 * <pre>{@code
 * ComputeEngine gpu0 = ComputeEngine.create(IsolationPolicy.BURST_SHARE, TokenSchedulerConfig.ofDefaults(), Ticker.system());
 * gpu0.addTenant("train-a", 30, 100);
 * gpu0.addTenant("train-b", 20, 100);
 * gpu0.request("train-a");
 * if (gpu0.schedule() instanceof TokenDecision.Granted g) {
 *     // train-a launches work until g.grant().expiresAtNanos(), then:
 *     gpu0.release("train-a", 0);
 * }
 * }</pre>
 *
 * <p>Thread safety: implementations are not thread-safe unless they say so; guard an engine with
 * the lock that also guards the caller's own state.
 */
public interface ComputeEngine {

    /** A policy engine for one GPU; limits are enforced strictly whatever {@code config} says. */
    static ComputeEngine create(IsolationPolicy policy, TokenSchedulerConfig config, Ticker ticker) {
        Validate.notNull("computeEngine.policy", policy);
        Validate.notNull("computeEngine.config", config);
        return new TokenScheduler(config.toBuilder().limitEnforcement(LimitEnforcement.STRICT).build(), ticker, policy);
    }

    /**
     * The share {@code policy} gives a tenant that asked for {@code requestPercent}/{@code limitPercent}
     * (see the table above).
     *
     * @throws io.qgpu.api.InvalidValueException for percentages out of range, or a fixed-share quota of 0
     */
    static Share shareFor(IsolationPolicy policy, int requestPercent, int limitPercent) {
        Validate.notNull("computeEngine.policy", policy);
        Share asked = Share.ofPercent(requestPercent, limitPercent);
        return switch (policy) {
            case BEST_EFFORT -> Share.unlimited();
            case FIXED_SHARE -> {
                if (requestPercent == 0) {
                    throw new io.qgpu.api.InvalidValueException("share.requestPercent", requestPercent,
                            "a fixed-share tenant needs a quota of at least 1%");
                }
                yield new Share(asked.request(), asked.request());
            }
            case BURST_SHARE -> new Share(asked.request(), 1.0);
            case ELASTIC -> asked;
        };
    }

    IsolationPolicy policy();

    /** Length of the sliding usage window. */
    long windowNanos();

    /** Adds a tenant with its request and limit in percent, interpreted by {@link #policy()}. */
    void addTenant(String tenant, int requestPercent, int limitPercent);

    /** Removes a tenant; if it holds the token, the token is released first (no overrun). */
    void removeTenant(String tenant);

    /** Registered tenants, in the order they were added. */
    List<String> tenants();

    /** The tenant wants the token. Asking again while waiting keeps its place. */
    void request(String tenant);

    /** The tenant no longer waits for the token (no effect if it was not waiting). */
    void withdraw(String tenant);

    /** Hands the token out if it is free and someone may have it; see {@link TokenDecision}. */
    TokenDecision schedule();

    /**
     * The holder returns the token. The hold counts until now if now is before the grant's expiry,
     * else until {@code min(now, expiry + overrunNanos)}.
     *
     * @param overrunNanos how long work launched before the expiry ran past it, as measured by the holder
     */
    ReleaseReport release(String tenant, long overrunNanos);

    /** The current holder, if any. */
    Optional<Grant> holder();

    /** GPU time of {@code tenant} in the window ending now, counting an ongoing hold up to now. */
    long usageNanos(String tenant);

    /**
     * The earliest time, from now on, at which {@code tenant} has used less than its guaranteed share
     * (request) over the window, assuming it does not hold the token in between: now if it is below
     * already, later if its usage must first leave the window, {@link Long#MAX_VALUE} if it is never
     * below (a request of 0). The preemption machine's offline floor reads it
     * ({@link io.qgpu.core.preempt.PreemptionEvent.Usage}). An engine that does not track requests may
     * keep this default, {@link Long#MAX_VALUE}: then no floor applies to its tenants.
     *
     * @throws ComputeStateException if the tenant is unknown to the engine or holds the token
     */
    default long belowRequestFrom(String tenant) {
        return Long.MAX_VALUE;
    }

    /** {@link #usageNanos} divided by the window. */
    default double usageShare(String tenant) {
        return (double) usageNanos(tenant) / windowNanos();
    }
}
