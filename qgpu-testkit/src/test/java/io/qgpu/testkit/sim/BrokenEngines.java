package io.qgpu.testkit.sim;

import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.Ticker;
import io.qgpu.core.compute.ComputeEngine;
import io.qgpu.core.compute.Grant;
import io.qgpu.core.compute.LimitEnforcement;
import io.qgpu.core.compute.ReleaseReport;
import io.qgpu.core.compute.TokenDecision;
import io.qgpu.core.compute.TokenScheduler;
import io.qgpu.core.compute.TokenSchedulerConfig;
import io.qgpu.core.preempt.PreemptionConfig;
import io.qgpu.core.preempt.PreemptionMachine;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Deliberately broken engines. Every claim test runs its check on one of these too and expects the
 * check to reject it, so that no check passes whatever the engine does.
 */
final class BrokenEngines {

    private BrokenEngines() {
    }

    /** Round robin where the i-th registered tenant gets a quota of (i + 1) x 50 ms: unfair shares. */
    static SimEngines unequalRoundRobin() {
        return SimEngines.standard().withCompute((policy, config, ticker) -> new UnequalRoundRobin(policy, config, ticker));
    }

    /** Fixed-share with Gemini's eligibility rule and no cut to the headroom: a grant may overshoot the quota. */
    static SimEngines fixedShareWithoutHeadroomCut() {
        return geminiRule();
    }

    /**
     * Gemini's own rule on every policy (what the engines did before): the quota grows with each
     * overrun, ties among satisfied tenants go to the lowest current usage.
     */
    static SimEngines geminiRule() {
        return SimEngines.standard().withCompute((policy, config, ticker) -> {
            TokenScheduler s = TokenScheduler.create(config.toBuilder().limitEnforcement(LimitEnforcement.GEMINI).build(), ticker);
            return new Delegating(s) {
                @Override
                public void addTenant(String tenant, int requestPercent, int limitPercent) {
                    s.addTenant(tenant, ComputeEngine.shareFor(policy, requestPercent, limitPercent));
                }
            };
        });
    }

    /** Enforces a 100% limit as a cap (99.9% of the window), so a tenant alone is idled when its window fills. */
    static SimEngines fullLimitAsCap() {
        return SimEngines.standard().withCompute((policy, config, ticker) -> {
            TokenScheduler s = (TokenScheduler) ComputeEngine.create(IsolationPolicy.ELASTIC, config, ticker);
            return new Delegating(s) {
                @Override
                public void addTenant(String tenant, int requestPercent, int limitPercent) {
                    io.qgpu.core.compute.Share sh = ComputeEngine.shareFor(policy, requestPercent, limitPercent);
                    s.addTenant(tenant, io.qgpu.core.compute.Share.of(sh.request(), Math.min(sh.limit(), 0.999)));
                }
            };
        });
    }

    /** Keeps limits but treats every request as 0 (lowest usage first among all). */
    static SimEngines requestsIgnored() {
        return SimEngines.standard().withCompute((policy, config, ticker) -> {
            TokenScheduler s = TokenScheduler.create(config.toBuilder().limitEnforcement(LimitEnforcement.STRICT).build(), ticker);
            return new Delegating(s) {
                @Override
                public void addTenant(String tenant, int requestPercent, int limitPercent) {
                    s.addTenant(tenant, io.qgpu.core.compute.Share.ofPercent(0, limitPercent));
                }
            };
        });
    }

    /** Whatever the GPU's policy, applies {@code actual} (a policy engine that mixed up its rules). */
    static SimEngines policyActsAs(IsolationPolicy actual) {
        return SimEngines.standard().withCompute((policy, config, ticker) -> ComputeEngine.create(actual, config, ticker));
    }

    /** Leaves the GPU idle for {@code gap} after every release before granting again (a sampling limiter). */
    static SimEngines gapAfterRelease(Duration gap) {
        return SimEngines.standard().withCompute((policy, config, ticker) -> {
            ComputeEngine real = ComputeEngine.create(policy, config, ticker);
            return new Delegating(real) {
                private long releasedAt = Long.MIN_VALUE;

                @Override
                public ReleaseReport release(String tenant, long overrunNanos) {
                    releasedAt = ticker.read();
                    return real.release(tenant, overrunNanos);
                }

                @Override
                public TokenDecision schedule() {
                    long until = releasedAt + gap.toNanos();
                    if (real.holder().isEmpty() && ticker.read() < until && !((TokenScheduler) real).waiting().isEmpty()) {
                        return new TokenDecision.WaitUntil(until);
                    }
                    return real.schedule();
                }
            };
        });
    }

    /** Trusts offline tenants to confirm a suspension, however long it takes (no deadline). */
    static SimEngines noPreemptionDeadline() {
        return SimEngines.standard().withPreemption(config ->
                PreemptionMachine.standard(config.toBuilder().preemptionBound(Duration.ofHours(1)).build()));
    }

    /** Releases the GPU to offline work {@code factor} times the configured delay after online goes idle. */
    static SimEngines releaseDelayTimes(double factor) {
        return SimEngines.standard().withPreemption(config -> PreemptionMachine.standard(config.toBuilder()
                .releaseDelay(Duration.ofNanos(Math.round(config.releaseDelayNanos() * factor))).build()));
    }

    static PreemptionConfig qgpuTiming() {
        return PreemptionConfig.ofDefaults();
    }

    /** Forwards every call. */
    static class Delegating implements ComputeEngine {
        final ComputeEngine d;

        Delegating(ComputeEngine d) {
            this.d = d;
        }

        @Override
        public IsolationPolicy policy() {
            return d.policy();
        }

        @Override
        public long windowNanos() {
            return d.windowNanos();
        }

        @Override
        public void addTenant(String tenant, int requestPercent, int limitPercent) {
            d.addTenant(tenant, requestPercent, limitPercent);
        }

        @Override
        public void removeTenant(String tenant) {
            d.removeTenant(tenant);
        }

        @Override
        public List<String> tenants() {
            return d.tenants();
        }

        @Override
        public void request(String tenant) {
            d.request(tenant);
        }

        @Override
        public void withdraw(String tenant) {
            d.withdraw(tenant);
        }

        @Override
        public TokenDecision schedule() {
            return d.schedule();
        }

        @Override
        public ReleaseReport release(String tenant, long overrunNanos) {
            return d.release(tenant, overrunNanos);
        }

        @Override
        public Optional<Grant> holder() {
            return d.holder();
        }

        @Override
        public long belowRequestFrom(String tenant) {
            return d.belowRequestFrom(tenant);
        }

        @Override
        public long usageNanos(String tenant) {
            return d.usageNanos(tenant);
        }
    }

    /** A hand-written round robin whose quota grows with the registration index. */
    static final class UnequalRoundRobin implements ComputeEngine {
        private final IsolationPolicy policy;
        private final TokenSchedulerConfig config;
        private final Ticker ticker;
        private final List<String> tenants = new ArrayList<>();
        private final Set<String> waiting = new LinkedHashSet<>();
        private Grant holder;

        UnequalRoundRobin(IsolationPolicy policy, TokenSchedulerConfig config, Ticker ticker) {
            this.policy = policy;
            this.config = config;
            this.ticker = ticker;
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
            tenants.add(tenant);
        }

        @Override
        public void removeTenant(String tenant) {
            tenants.remove(tenant);
            waiting.remove(tenant);
        }

        @Override
        public List<String> tenants() {
            return List.copyOf(tenants);
        }

        @Override
        public void request(String tenant) {
            waiting.add(tenant);
        }

        @Override
        public void withdraw(String tenant) {
            waiting.remove(tenant);
        }

        @Override
        public TokenDecision schedule() {
            if (holder != null) {
                return new TokenDecision.Held(holder);
            }
            if (waiting.isEmpty()) {
                return new TokenDecision.Idle();
            }
            String next = waiting.iterator().next();
            waiting.remove(next);
            long quota = (tenants.indexOf(next) + 1) * 50_000_000L;
            holder = new Grant(next, ticker.read(), quota, quota, false);
            return new TokenDecision.Granted(holder);
        }

        @Override
        public ReleaseReport release(String tenant, long overrunNanos) {
            Grant g = holder;
            holder = null;
            long end = Math.min(ticker.read(), g.expiresAtNanos() + overrunNanos);
            return new ReleaseReport(tenant, g.startNanos(), end, end - g.startNanos(), g.quotaNanos());
        }

        @Override
        public Optional<Grant> holder() {
            return Optional.ofNullable(holder);
        }

        @Override
        public long usageNanos(String tenant) {
            return 0;
        }
    }
}
