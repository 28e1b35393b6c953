package io.qgpu.core.gate.internal;

import io.qgpu.api.Ticker;
import io.qgpu.core.compute.LimitEnforcement;
import io.qgpu.core.compute.Share;
import io.qgpu.core.compute.TokenDecision;
import io.qgpu.core.compute.TokenScheduler;
import io.qgpu.core.compute.TokenSchedulerConfig;
import io.qgpu.core.gate.GateEvent;
import io.qgpu.core.gate.GateTimer;
import io.qgpu.core.preempt.Action;
import io.qgpu.core.preempt.GpuMode;
import io.qgpu.core.preempt.PreemptionEvent;
import io.qgpu.core.preempt.PreemptionMachine;
import io.qgpu.core.preempt.PreemptionState;
import io.qgpu.core.preempt.TenantPhase;
import io.qgpu.core.preempt.Transition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The bridge from a gate to the pure engines: feeds the {@link PreemptionMachine} and the
 * {@link TokenScheduler} what the tenants' leases and waiters did, with the time they did it, and
 * carries out their decisions: permits, the token, the timer. Everything here runs under the gate's
 * lock.
 *
 * <p>Limits are enforced by the gate on lease time ({@link QuotaBooks}); the token scheduler orders
 * offline tenants and slices their time. Its tenants get limit 100% and Gemini's eligibility rule,
 * so that a tenant alone on the GPU is never held back by the scheduler's own accounting of token
 * holds.
 *
 * <p>Thread safety: not thread-safe; guarded by the gate's lock.
 */
public final class EngineBridge {

    private static final Logger LOG = LoggerFactory.getLogger(EngineBridge.class);
    private static final long NONE = GateCore.NONE;

    private final GateCore core;
    private final PreemptionMachine machine;
    private final TokenScheduler engine;
    private final EngineClock engineClock;
    private PreemptionState pstate;
    private long engineWaitUntil = NONE;
    private long armedAt = NONE;
    private GateTimer.Task armedTask;
    /**
     * Whether the engines were told something in the current pump round: set where that happens (an
     * event applied, the token requested, withdrawn or released), so that no pass answers it.
     */
    private boolean progress;
    /** The tenant that gave the token back, whose usage the machine learns next (the offline floor). */
    private TenantState usageDue;

    EngineBridge(GateCore core, long now) {
        this.core = core;
        this.machine = PreemptionMachine.standard(core.config.preemption());
        this.pstate = machine.initial(now);
        this.engineClock = new EngineClock(now);
        TokenSchedulerConfig tc = core.config.token().toBuilder().limitEnforcement(LimitEnforcement.GEMINI).build();
        this.engine = TokenScheduler.create(tc, engineClock);
    }

    /** The machine's state now (a value). */
    public PreemptionState state() {
        return pstate;
    }

    void register(TenantState t, Share share, long now) {
        if (!t.online) {
            engine.addTenant(t.name, new Share(share.request(), 1.0));
        }
        apply(new PreemptionEvent.Register(at(now), t.name, t.spec.priority()));
        if (!t.online) {
            apply(new PreemptionEvent.Usage(at(now), t.name, engine.belowRequestFrom(t.name))); // the offline floor
        }
    }

    /** The token scheduler frees the token if the tenant holds it; its accounting leaves with it. */
    void deregister(TenantState t, long now) {
        apply(new PreemptionEvent.Deregister(at(now), t.name));
        if (!t.online) {
            engine.removeTenant(t.name);
        }
    }

    /**
     * The tenant's phase in the machine's current state, cached per state: a state is an immutable
     * value and every transition that changes a phase yields a new one, so its identity is the key.
     */
    @SuppressWarnings("ReferenceEquality") // identity is the cache key (see above); equal states give equal phases anyway
    TenantPhase phase(TenantState t) {
        if (t.phaseState != pstate) {
            t.phase = pstate.phase(t.name).orElseThrow(
                    () -> new IllegalStateException("tenant " + t.name + " unknown to the machine"));
            t.phaseState = pstate;
        }
        return t.phase;
    }

    /** Asks the pure machine, without committing, whether submitting work now would let it run at once. */
    boolean wouldRunAtOnce(TenantState t, long now) {
        TenantPhase p = phase(t);
        if (t.online) {
            if (p != TenantPhase.IDLE) {
                return p == TenantPhase.RUNNING;
            }
            Transition probe = machine.next(pstate, new PreemptionEvent.Submit(at(now), t.name));
            for (Action a : probe.actions()) {
                if (a instanceof Action.RunOnline r && r.tenant().equals(t.name)) {
                    return true;
                }
            }
            return false;
        }
        if (pstate.mode() != GpuMode.OFFLINE) {
            return false;
        }
        return engine.holder().isEmpty() || t.holdsToken;
    }

    GateEvent.SuspendReason suspendReason(TenantState t) {
        TenantPhase p = phase(t);
        if (p == TenantPhase.SUSPENDING || p == TenantPhase.SUSPENDED) {
            return GateEvent.SuspendReason.PREEMPTED;
        }
        if (!t.online && t.holdsToken && otherOfflineDemand(t)) {
            return GateEvent.SuspendReason.GRANT_ENDED;
        }
        return GateEvent.SuspendReason.QUOTA;
    }

    /**
     * Brings the engines up to date with every tenant's leases and waiters, hands out the token, then
     * sets permits, wakes waiters and arms the timer.
     */
    void pump(long now) {
        for (int round = 0; ; round++) {
            if (round > 10_000) {
                throw new IllegalStateException("gate " + core.gpu + " did not settle: " + pstate);
            }
            progress = false;
            for (TenantState t : core.tenants.values()) {
                settle(t, now);
            }
            if (!progress) {
                for (TenantState t : core.tenants.values()) {
                    demand(t, now);
                }
            }
            if (!progress && pstate.mode() == GpuMode.OFFLINE && engine.holder().isEmpty()) {
                scheduleToken(now);
            }
            if (!progress) {
                break;
            }
        }
        long wake = Math.min(pstate.nextTimerNanos(), engineWaitUntil);
        for (TenantState t : core.tenants.values()) {
            refreshPermit(t, now);
            if (t.hasWork() && t.quotaWakeAt != NONE) {
                wake = Math.min(wake, t.quotaWakeAt);
            }
        }
        core.waiting.wakeWaiters(now);
        arm(wake);
        boolean eager = false;
        for (TenantState t : core.tenants.values()) {
            TenantPhase p = phase(t);
            if (!t.online && p != TenantPhase.IDLE && p != TenantPhase.RUNNING) {
                eager = true;
                break;
            }
        }
        if (eager != core.eagerIdle) {
            core.eagerIdle = eager;
        }
    }

    /** First pass: report what tenants stopped doing (idle, suspended, stopped), with the time they did. */
    private void settle(TenantState t, long now) {
        TenantPhase p = phase(t);
        boolean work = t.hasWork();
        if (t.online) {
            if (p == TenantPhase.RUNNING && t.running() == 0 && (!work || !core.quota.quotaOk(t, now))
                    && quiesced(t)) {
                apply(new PreemptionEvent.Idle(idleStamp(t), t.name));
                return;
            }
            if (p == TenantPhase.WAITING && t.waiters.isEmpty()) {
                apply(new PreemptionEvent.Idle(at(now), t.name));
            }
            return;
        }
        switch (p) {
            case RUNNING -> {
                if (t.running() != 0) {
                    return;
                }
                boolean stop = !work
                        || (now >= t.grantExpiry && otherOfflineDemand(t)) || !core.quota.quotaOk(t, now);
                if (stop && quiesced(t)) {
                    long s = idleStamp(t);
                    releaseToken(t, t.idleAt);
                    apply(work ? new PreemptionEvent.Stop(s, t.name) : new PreemptionEvent.Idle(s, t.name));
                }
            }
            case SUSPENDING -> {
                if (t.running() == 0 && quiesced(t)) {
                    long s = idleStamp(t);
                    if (t.holdsToken) {
                        releaseToken(t, t.idleAt);
                    }
                    apply(work ? new PreemptionEvent.Suspended(s, t.name) : new PreemptionEvent.Idle(s, t.name));
                }
            }
            case READY -> { // no lease runs: a READY tenant has no permit
                if (!work) {
                    withdraw(t);
                    apply(new PreemptionEvent.Idle(at(now), t.name));
                }
            }
            case SUSPENDED -> withdraw(t); // if requested; the token went with the suspension (or never came)
            default -> {
                // IDLE, WAITING (offline tenants never wait) and RUNNING online: nothing stopped
            }
        }
    }

    /** Second pass: report new work (submit) and ask for the token. */
    private void demand(TenantState t, long now) {
        TenantPhase p = phase(t);
        boolean work = t.hasWork();
        if (t.online) {
            if (p == TenantPhase.IDLE && !t.waiters.isEmpty() && core.quota.quotaOk(t, now)) {
                apply(new PreemptionEvent.Submit(at(now), t.name));
            }
            return;
        }
        if (p == TenantPhase.IDLE && work) {
            apply(new PreemptionEvent.Submit(at(now), t.name));
        } else if (p == TenantPhase.READY) {
            boolean ok = core.quota.quotaOk(t, now);
            if (ok && !t.requested) {
                engine.request(t.name); // takes no time: the scheduler reads its clock when it schedules
                t.requested = true;
                progress = true;
            } else if (!ok) {
                withdraw(t); // if requested
            }
        }
    }

    private void withdraw(TenantState t) {
        if (t.requested) {
            engine.withdraw(t.name);
            t.requested = false;
            progress = true;
        }
    }

    private void scheduleToken(long now) {
        engineClock.advanceTo(now);
        TokenDecision d = engine.schedule();
        engineWaitUntil = NONE;
        if (d instanceof TokenDecision.Granted g) {
            TenantState t = core.tenants.get(g.grant().tenant());
            t.holdsToken = true;
            t.requested = false;
            t.grantStart = g.grant().startNanos();
            t.grantExpiry = g.grant().expiresAtNanos();
            // never dropped: the machine keeps no timer in mode OFFLINE (an invariant it checks), the
            // only mode in which the token is scheduled
            apply(new PreemptionEvent.Start(at(now), t.name));
        } else if (d instanceof TokenDecision.WaitUntil w) {
            engineWaitUntil = w.atNanos();
        }
    }

    /**
     * Gives the token back at {@code stamp} (never before the grant or the engine's clock). The gate
     * measured the hold itself, overrun included, so the whole of it counts: the overrun allowance
     * passed is unbounded and the scheduler counts the hold until the release.
     */
    private void releaseToken(TenantState t, long stamp) {
        long s = Math.max(Math.max(stamp, t.grantStart), engineClock.read());
        engineClock.advanceTo(s);
        engine.release(t.name, Long.MAX_VALUE);
        t.holdsToken = false;
        progress = true;
        usageDue = t; // the machine learns its usage after the event this release goes with
    }

    private boolean otherOfflineDemand(TenantState t) {
        for (TenantState u : core.tenants.values()) {
            if (u != t && u.requested) {
                return true;
            }
        }
        return false;
    }

    /**
     * Whether the tenant has no running lease and none can start ({@link TenantState#revokeIfIdle});
     * if so, drains its periods and notes when it went idle. Callers have seen no running lease just
     * before.
     */
    private boolean quiesced(TenantState t) {
        if (!t.revokeIfIdle()) {
            return false;
        }
        t.idleAt = t.drainIdle();
        return true;
    }

    /** When the tenant went idle, as an event time for the machine. */
    private long idleStamp(TenantState t) {
        return Math.max(t.idleAt, pstate.at());
    }

    private long at(long now) {
        return Math.max(now, pstate.at());
    }

    /**
     * Feeds one event to the machine and carries out its actions. If a timer of the machine is due
     * by the event's time (the timer thread is late), the timers fire first, with a Tick at that time,
     * and a tenant event is dropped: the caller's pump round re-decides from the new phases.
     * Register, Deregister and Usage are always applied.
     */
    private void apply(PreemptionEvent e) {
        if (!(e instanceof PreemptionEvent.Tick) && pstate.nextTimerNanos() <= e.at()) {
            apply(new PreemptionEvent.Tick(e.at()));
            if (!(e instanceof PreemptionEvent.Register) && !(e instanceof PreemptionEvent.Deregister)
                    && !(e instanceof PreemptionEvent.Usage)) {
                return;
            }
        }
        Transition tr = machine.next(pstate, e);
        pstate = tr.state();
        progress = true;
        for (Action a : tr.actions()) {
            if (a instanceof Action.Suspend s) {
                TenantState x = core.tenants.get(s.tenant());
                if (x != null) {
                    x.setPermit(TenantState.NO_PERMIT);
                }
            } else if (a instanceof Action.ForceSuspended f) {
                TenantState x = core.tenants.get(f.tenant());
                if (x != null) {
                    x.setPermit(TenantState.NO_PERMIT);
                    if (x.holdsToken) {
                        releaseToken(x, f.at());
                    }
                }
                LOG.debug("gate {}: {} overran the preemption bound", core.gpu, f.tenant());
                if (core.events.hasListeners()) {
                    core.events.later(new GateEvent.ForcedSuspension(core.gpu, f.tenant(), f.at()));
                }
            } else if (a instanceof Action.ModeChanged m) {
                LOG.trace("gate {}: {} -> {} at {}", core.gpu, m.from(), m.to(), m.at());
                if (core.events.hasListeners()) {
                    core.events.later(new GateEvent.ModeChanged(core.gpu, m.from(), m.to(), m.at()));
                }
            }
        }
        if (usageDue != null && !(e instanceof PreemptionEvent.Usage) && pstate.isRegistered(usageDue.name)) {
            TenantState u = usageDue;
            usageDue = null;
            apply(new PreemptionEvent.Usage(pstate.at(), u.name, engine.belowRequestFrom(u.name)));
        }
    }

    private void refreshPermit(TenantState t, long now) {
        TenantPhase p = phase(t);
        long permit = TenantState.NO_PERMIT;
        if (!core.closed && p == TenantPhase.RUNNING && (t.online || t.holdsToken)) {
            long ok = core.quota.okUntil(t, now);
            permit = t.online || !otherOfflineDemand(t) ? ok : Math.min(ok, t.grantExpiry);
        }
        t.setPermit(permit);
    }

    /**
     * Makes sure the timer calls back no later than {@code at}. A task already armed for an earlier
     * time is kept (its call-back finds nothing due and re-arms), so that a preemption or quota wait
     * does not reschedule the timer on every change.
     */
    private void arm(long at) {
        if (core.closed || at >= armedAt) {
            return;
        }
        if (armedTask != null) {
            armedTask.cancel();
        }
        armedAt = at;
        armedTask = core.timer.schedule(at, this::onTimer);
    }

    private void onTimer() {
        core.lock.lock();
        try {
            armedAt = NONE;
            armedTask = null;
            if (core.closed) {
                return;
            }
            long now = core.nowLocked();
            if (pstate.nextTimerNanos() <= now) {
                apply(new PreemptionEvent.Tick(at(now)));
            }
            pump(now);
        } finally {
            core.events.unlockAndDispatch();
        }
    }

    void cancelTimer() {
        if (armedTask != null) {
            armedTask.cancel();
        }
    }

    /**
     * The token scheduler's clock: the time of the event the gate is feeding it, never going back, so
     * that a hold that ended before the gate took its lock is counted until it really ended.
     */
    private static final class EngineClock implements Ticker {
        private volatile long now;

        EngineClock(long now) {
            this.now = now;
        }

        @Override
        public long read() {
            return now;
        }

        void advanceTo(long t) {
            if (t > now) {
                now = t;
            }
        }
    }
}
