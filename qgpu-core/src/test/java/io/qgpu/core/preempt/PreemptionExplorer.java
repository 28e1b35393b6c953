package io.qgpu.core.preempt;

import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.PriorityClass;
import io.qgpu.core.compute.ComputeEngine;
import io.qgpu.core.compute.ManualTicker;
import io.qgpu.core.compute.TokenDecision;
import io.qgpu.core.compute.TokenSchedulerConfig;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * An exhaustive explorer of a {@link PreemptionMachine} together with the token scheduler that picks
 * which offline tenant starts. From the initial state (online tenants {@code on0..}, offline tenants
 * {@code off0..}, all registered at time 0) it applies, breadth first, every event the environment
 * may send in every order: Submit, Idle, Stop and Suspended of each tenant where its documented
 * phase allows it, Start of the tenant the real token scheduler grants (a best-effort
 * {@link ComputeEngine} on the explorer's clock), and time passing one nanosecond at a time, or up
 * to the next timer, which then fires (a Tick). States are deduplicated on everything a future
 * decision depends on (mode, phases, times relative to now, timer, the scheduler's waiting order,
 * holder, quotas and usages), up to a bounded number of events and a bounded time.
 *
 * <p>Checked in every reachable state, against the explorer's own record of when online work was
 * submitted and when it last went idle (not the machine's):
 * <ul>
 *   <li>the state's own invariants ({@link PreemptionState#invariantViolations()});</li>
 *   <li>bound: an online tenant that has had work for the preemption bound or longer runs, and no
 *       offline tenant is RUNNING or SUSPENDING then;</li>
 *   <li>release: once all online work has been idle for the release policy's longest hold, no offline
 *       tenant is SUSPENDING or SUSPENDED (each has resumed);</li>
 *   <li>a way out: from the state, sending each tenant's "finished" events and firing timers leads
 *       to the quiet state (mode OFFLINE, every tenant IDLE);</li>
 *   <li>no legal event is refused, and the scheduler's holder is the RUNNING or SUSPENDING tenant.</li>
 * </ul>
 * Test-only.
 */
final class PreemptionExplorer {

    /** What an exploration found: states and transitions explored, and the first violation with the events leading to it. */
    record Result(long states, long transitions, int depthReached, String violation, List<PreemptionEvent> trace) {
    }

    private sealed interface Op {
    }

    private record Req(String tenant, long at) implements Op {
    }

    private record Withdraw(String tenant, long at) implements Op {
    }

    private record Schedule(long at) implements Op {
    }

    private record Release(String tenant, long at) implements Op {
    }

    /** One explored state: the machine's state, the scheduler's history, the explorer's own records. */
    private record Node(PreemptionState state, long now, List<Op> ops, Map<String, Long> submittedAt, long onlineIdleSince,
                        Trail trail, int depth) {
    }

    private record Trail(PreemptionEvent event, Trail prev) {
        List<PreemptionEvent> toList() {
            ArrayDeque<PreemptionEvent> d = new ArrayDeque<>();
            for (Trail t = this; t != null; t = t.prev) {
                d.addFirst(t.event);
            }
            return new ArrayList<>(d);
        }
    }

    private static final TokenSchedulerConfig TOKEN = TokenSchedulerConfig.custom().window(Duration.ofNanos(8))
            .baseQuota(Duration.ofNanos(2)).minQuota(Duration.ofNanos(1)).build();

    private final PreemptionMachine machine;
    private final PreemptionConfig declared;
    private final List<String> online = new ArrayList<>();
    private final List<String> offline = new ArrayList<>();
    private final int maxDepth;
    private final long maxTime;

    /**
     * @param machine  the machine under test
     * @param declared the timing it claims (checked against), usually {@code machine.config()}
     * @param maxDepth events per path
     * @param maxTime  the latest time explored
     */
    PreemptionExplorer(PreemptionMachine machine, PreemptionConfig declared, int onlineTenants, int offlineTenants,
                       int maxDepth, long maxTime) {
        this.machine = machine;
        this.declared = declared;
        for (int i = 0; i < onlineTenants; i++) {
            online.add("on" + i);
        }
        for (int i = 0; i < offlineTenants; i++) {
            offline.add("off" + i);
        }
        this.maxDepth = maxDepth;
        this.maxTime = maxTime;
    }

    Result explore() {
        PreemptionState s = machine.initial(0);
        Trail trail = null;
        for (String t : online) {
            PreemptionEvent e = new PreemptionEvent.Register(0, t, PriorityClass.ONLINE);
            s = machine.next(s, e).state();
            trail = new Trail(e, trail);
        }
        for (String t : offline) {
            PreemptionEvent e = new PreemptionEvent.Register(0, t, PriorityClass.OFFLINE);
            s = machine.next(s, e).state();
            trail = new Trail(e, trail);
        }
        ArrayDeque<Node> queue = new ArrayDeque<>();
        Set<String> seen = new HashSet<>();
        Node start = new Node(s, 0, List.of(), Map.of(), 0, trail, 0);
        queue.add(start);
        seen.add(key(start, replay(start)));
        long transitions = 0;
        int depthReached = 0;
        while (!queue.isEmpty()) {
            Node n = queue.poll();
            depthReached = Math.max(depthReached, n.depth);
            ComputeEngine token = replay(n);
            String v = check(n, token);
            if (v != null) {
                return new Result(seen.size(), transitions, depthReached, v, n.trail.toList());
            }
            if (n.depth == maxDepth) {
                continue;
            }
            for (PreemptionEvent e : events(n, token)) {
                transitions++;
                Step next;
                try {
                    next = apply(n, e);
                } catch (IllegalTransitionException x) {
                    return new Result(seen.size(), transitions, depthReached, "the machine refused a legal event " + e + ": "
                            + x.getMessage(), new Trail(e, n.trail).toList());
                }
                if (seen.add(key(next.node(), next.token()))) {
                    queue.add(next.node());
                }
            }
        }
        return new Result(seen.size(), transitions, depthReached, null, List.of());
    }

    // ---- the environment ----

    private List<PreemptionEvent> events(Node n, ComputeEngine token) {
        List<PreemptionEvent> out = new ArrayList<>();
        long now = n.now;
        PreemptionState s = n.state;
        for (String t : online) {
            TenantPhase p = s.phase(t).orElseThrow();
            out.add(p == TenantPhase.IDLE ? new PreemptionEvent.Submit(now, t) : new PreemptionEvent.Idle(now, t));
        }
        for (String t : offline) {
            switch (s.phase(t).orElseThrow()) {
                case IDLE -> out.add(new PreemptionEvent.Submit(now, t));
                case READY -> out.add(new PreemptionEvent.Idle(now, t));
                case RUNNING -> {
                    out.add(new PreemptionEvent.Idle(now, t));
                    out.add(new PreemptionEvent.Stop(now, t));
                }
                case SUSPENDING -> {
                    out.add(new PreemptionEvent.Idle(now, t));
                    out.add(new PreemptionEvent.Stop(now, t));
                    out.add(new PreemptionEvent.Suspended(now, t));
                }
                default -> { }
            }
        }
        if (s.mode() == GpuMode.OFFLINE && token.holder().isEmpty()) {
            TokenDecision d = token.schedule();
            if (d instanceof TokenDecision.Granted g) {
                out.add(new PreemptionEvent.Start(now, g.grant().tenant()));
            }
        }
        long timer = s.nextTimerNanos();
        if (timer <= now) {
            out.add(new PreemptionEvent.Tick(now));
        } else if (now < maxTime) {
            out.add(new PreemptionEvent.Tick(Math.min(now + 1, timer)));   // time passes; a due timer fires
        }
        return out;
    }

    /** The next node, and the scheduler as it stands there (for the key). */
    private record Step(Node node, ComputeEngine token) {
    }

    private Step apply(Node n, PreemptionEvent e) {
        PreemptionState s = machine.next(n.state, e).state();
        long now = e.at();
        Map<String, Long> submitted = new HashMap<>(n.submittedAt);
        long idleSince = n.onlineIdleSince;
        if (online.contains(e.tenant())) {
            if (e instanceof PreemptionEvent.Submit) {
                submitted.put(e.tenant(), now);
            } else if (e instanceof PreemptionEvent.Idle) {
                submitted.remove(e.tenant());
                if (submitted.isEmpty()) {
                    idleSince = now;
                }
            }
        }
        List<Op> ops = new ArrayList<>(n.ops);
        if (e instanceof PreemptionEvent.Start) {
            ops.add(new Schedule(now));
        }
        ComputeEngine token = replay(new Node(n.state, now, ops, submitted, idleSince, null, 0));
        sync(s, token, ops, now);
        Node next = new Node(s, now, List.copyOf(ops), Map.copyOf(submitted), idleSince, new Trail(e, n.trail), n.depth + 1);
        return new Step(next, token);
    }

    /**
     * Keeps the scheduler in step with the machine (applying to {@code token} what it appends to
     * {@code ops}): READY tenants wait, the holder releases when it leaves the GPU.
     */
    private void sync(PreemptionState s, ComputeEngine token, List<Op> ops, long now) {
        token.holder().ifPresent(g -> {
            TenantPhase p = s.phase(g.tenant()).orElseThrow();
            if (p != TenantPhase.RUNNING && p != TenantPhase.SUSPENDING) {
                ops.add(new Release(g.tenant(), now));
                token.release(g.tenant(), 0);
            }
        });
        List<String> waiting = ((io.qgpu.core.compute.TokenScheduler) token).waiting();
        for (String t : offline) {
            boolean ready = s.phase(t).orElseThrow() == TenantPhase.READY;
            if (ready && !waiting.contains(t)) {
                ops.add(new Req(t, now));
                token.request(t);
            } else if (!ready && waiting.contains(t)) {
                ops.add(new Withdraw(t, now));
                token.withdraw(t);
            }
        }
    }

    private ComputeEngine replay(Node n) {
        ManualTicker clock = new ManualTicker(0);
        ComputeEngine token = ComputeEngine.create(IsolationPolicy.BEST_EFFORT, TOKEN, clock);
        offline.forEach(t -> token.addTenant(t, 0, 100));
        for (Op op : n.ops) {
            if (op instanceof Req r) {
                clock.set(r.at);
                token.request(r.tenant);
            } else if (op instanceof Withdraw w) {
                clock.set(w.at);
                token.withdraw(w.tenant);
            } else if (op instanceof Schedule sc) {
                clock.set(sc.at);
                token.schedule();
            } else if (op instanceof Release r) {
                clock.set(r.at);
                token.release(r.tenant, 0);
            }
        }
        clock.set(n.now);
        return token;
    }

    // ---- the checks ----

    private String check(Node n, ComputeEngine token) {
        PreemptionState s = n.state;
        List<String> inv = s.invariantViolations();
        if (!inv.isEmpty()) {
            return "invariants broken: " + inv + " in " + s;
        }
        String holder = token.holder().map(g -> g.tenant()).orElse(null);
        for (String t : offline) {
            TenantPhase p = s.phase(t).orElseThrow();
            boolean onGpu = p == TenantPhase.RUNNING || p == TenantPhase.SUSPENDING;
            if (onGpu != t.equals(holder)) {
                return "the token holder is " + holder + " but " + t + " is " + p + " in " + s;
            }
        }
        long bound = declared.preemptionBoundNanos();
        for (Map.Entry<String, Long> w : n.submittedAt.entrySet()) {
            if (n.now - w.getValue() >= bound) {
                if (s.phase(w.getKey()).orElseThrow() != TenantPhase.RUNNING) {
                    return "online " + w.getKey() + " has had work since " + w.getValue() + " and still does not run at "
                            + n.now + " (bound " + bound + "): " + s;
                }
                for (String t : offline) {
                    TenantPhase p = s.phase(t).orElseThrow();
                    if (p == TenantPhase.RUNNING || p == TenantPhase.SUSPENDING) {
                        return "offline " + t + " is " + p + " at " + n.now + " while online " + w.getKey()
                                + " has had work since " + w.getValue() + " (bound " + bound + "): " + s;
                    }
                }
            }
        }
        long hold = declared.releasePolicy().maxHoldNanos();
        if (n.submittedAt.isEmpty() && n.now - n.onlineIdleSince >= hold) {
            for (String t : offline) {
                TenantPhase p = s.phase(t).orElseThrow();
                if (p == TenantPhase.SUSPENDED || p == TenantPhase.SUSPENDING) {
                    return "offline " + t + " is still " + p + " at " + n.now + ", online idle since " + n.onlineIdleSince
                            + " (release within " + hold + "): " + s;
                }
            }
        }
        return wayOut(s, n.now);
    }

    /** Finishes every tenant's work and fires timers; the quiet state must follow. */
    private String wayOut(PreemptionState start, long now) {
        PreemptionState s = start;
        for (int step = 0; step < 100; step++) {
            if (s.mode() == GpuMode.OFFLINE && s.tenantsIn(TenantPhase.IDLE).size() == online.size() + offline.size()) {
                return null;
            }
            PreemptionState before = s;
            for (String t : s.tenants()) {
                TenantPhase p = s.phase(t).orElseThrow();
                PreemptionEvent e = switch (p) {
                    case WAITING, RUNNING, READY, SUSPENDING -> new PreemptionEvent.Idle(now, t);
                    default -> null;
                };
                if (e != null) {
                    try {
                        s = machine.next(s, e).state();
                    } catch (IllegalTransitionException x) {
                        return "no way out of " + start + ": " + e + " refused (" + x.getMessage() + ")";
                    }
                }
            }
            if (s.nextTimerNanos() != PreemptionState.NO_TIMER) {
                now = Math.max(now, s.nextTimerNanos());
                s = machine.next(s, new PreemptionEvent.Tick(now)).state();
            }
            if (samePhases(before, s)) {
                return "no way out of " + start + ": stuck in " + s;
            }
        }
        return "no way out of " + start + " within 100 rounds";
    }

    private static boolean samePhases(PreemptionState a, PreemptionState b) {
        if (a.mode() != b.mode() || a.nextTimerNanos() != b.nextTimerNanos()) {
            return false;
        }
        for (String t : a.tenants()) {
            if (a.phase(t).orElseThrow() != b.phase(t).orElse(null)) {
                return false;
            }
        }
        return true;
    }

    private String key(Node n, ComputeEngine token) {
        PreemptionState s = n.state;
        long cap = declared.preemptionBoundNanos() + declared.releasePolicy().maxHoldNanos() + 1;
        StringBuilder k = new StringBuilder().append(s.mode()).append(n.now >= maxTime ? "|end" : "");
        for (String t : s.tenants()) {
            int i = s.index.get(t);
            k.append('|').append(s.phases[i]).append(Math.min(cap, n.now - s.since[i]));
            Long sub = n.submittedAt.get(t);
            k.append(sub == null ? "" : "s" + Math.min(cap, n.now - sub));
            if (offline.contains(t)) {
                k.append("u").append(token.usageNanos(t)).append("q")
                        .append(((io.qgpu.core.compute.TokenScheduler) token).quotaNanos(t));
            }
        }
        k.append("|t").append(s.timerAt == PreemptionState.NO_TIMER ? "-" : String.valueOf(s.timerAt - n.now));
        k.append("|i").append(Math.min(cap, n.now - n.onlineIdleSince)).append("|l")
                .append(s.lastOnlineIdleAt == Long.MIN_VALUE ? "-" : String.valueOf(Math.min(cap, n.now - s.lastOnlineIdleAt)));
        k.append("|p").append(Math.min(cap, n.now - s.preemptStartedAt)).append("|g").append(s.idleGaps);
        k.append("|w").append(((io.qgpu.core.compute.TokenScheduler) token).waiting())
                .append("|h").append(token.holder().map(g -> g.tenant() + "@" + (g.expiresAtNanos() - n.now)).orElse("-"));
        return k.toString();
    }
}
