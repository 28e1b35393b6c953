package io.qgpu.testkit.sim;

import io.qgpu.core.compute.ComputeEngine;
import io.qgpu.core.compute.Grant;
import io.qgpu.core.compute.ReleaseReport;
import io.qgpu.core.compute.TokenDecision;
import io.qgpu.core.preempt.Action;
import io.qgpu.core.preempt.GpuMode;
import io.qgpu.core.preempt.PreemptionEvent;
import io.qgpu.core.preempt.PreemptionMachine;
import io.qgpu.core.preempt.PreemptionState;
import io.qgpu.core.preempt.TenantPhase;
import io.qgpu.core.preempt.Transition;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.jspecify.annotations.Nullable;

/**
 * One simulated GPU: the preemption machine decides which class owns the GPU, the compute engine
 * which offline tenant holds the token; the offline holder runs alone, online tenants share the GPU
 * equally (processor sharing). Package-internal, single-threaded.
 */
final class GpuSim {

    final String id;
    final GpuSpec spec;
    private final SimRun run;
    private final ComputeEngine compute;
    private final PreemptionMachine machine;
    private PreemptionState state;
    final Map<String, TenantSim> tenants = new LinkedHashMap<>();

    // the offline token holder
    private @Nullable TenantSim holder;
    private @Nullable Grant grant;
    private boolean executing;
    private long segStart;
    private long execEpoch;
    private long grantEpoch;

    // online tenants sharing the GPU
    private final List<TenantSim> online = new ArrayList<>();
    private long psLast;
    private long psEpoch;

    private long machineTimerAt = Long.MAX_VALUE;
    private long machineTimerEpoch;
    private long computeTimerAt = Long.MAX_VALUE;
    private long computeTimerEpoch;

    // what preemption costs
    private final PreemptionCost cost;
    /** Online work cannot run before this (an atomic offline kernel in flight, the switch). */
    private long onlineFreeAt;
    /** Online work ran since offline work last ran: the next offline kernel pays a switch. */
    private boolean switchBackPending;

    final GpuAccounting acct = new GpuAccounting();
    private long lastOnlineIdleAt = Long.MIN_VALUE;
    /** Online went idle at {@link #lastOnlineIdleAt} and the GPU was released; no offline tenant has run since. */
    private boolean awaitingOfflineResume;
    private boolean closingPreemption;
    /** Offline tenants that gave the token back: the machine learns their new usage (the offline floor). */
    private final List<String> usageDue = new ArrayList<>(2);

    GpuSim(GpuSpec spec, Scenario scenario, SimEngines engines, SimRun run, SplittableRandom root) {
        this.id = spec.id();
        this.spec = spec;
        this.run = run;
        this.compute = engines.compute().create(spec.policy(), scenario.compute(), run);
        this.machine = engines.preemption().apply(scenario.preemption());
        this.state = machine.initial(0);
        this.cost = scenario.cost();
        for (TenantSpec t : spec.tenants()) {
            TenantSim ts = new TenantSim(t, root.split(), run);
            tenants.put(t.id(), ts);
            apply(new PreemptionEvent.Register(0, t.id(), t.priority()));
            if (!t.online()) {
                compute.addTenant(t.id(), t.requestPercent(), t.limitPercent());
                apply(new PreemptionEvent.Usage(0, t.id(), compute.belowRequestFrom(t.id())));   // the offline floor
            }
        }
    }

    void start() {
        tenants.values().forEach(t -> t.attach(this));
    }

    // ---- work arriving ----

    void onWork(TenantSim x) {
        if (!x.online) {
            acct.offlineWork(+1, run.now());
        }
        x.submitted = true;
        trace(x, TraceKind.SUBMIT, "");
        apply(new PreemptionEvent.Submit(run.now(), x.id));
        if (!x.online && state.phase(x.id).orElseThrow() == TenantPhase.READY) {
            compute.request(x.id);
        }
        dispatch();
    }

    // ---- the preemption machine ----

    private void apply(PreemptionEvent e) {
        Transition t = machine.next(state, e);
        state = t.state();
        closingPreemption = false;
        for (Action a : t.actions()) {
            handle(a);
        }
        while (!usageDue.isEmpty()) {   // tokens given back while handling the actions, after them
            String x = usageDue.remove(0);
            apply(new PreemptionEvent.Usage(run.now(), x, compute.belowRequestFrom(x)));
        }
        armMachineTimer();
    }

    private void handle(Action a) {
        if (a instanceof Action.ModeChanged m) {
            acct.mode(m.to(), m.at());
            closingPreemption = m.from() == GpuMode.PREEMPTING && m.to() == GpuMode.ONLINE;
            if (m.to() == GpuMode.RELEASING && m.from() == GpuMode.ONLINE) {
                lastOnlineIdleAt = m.at();
            }
            if (m.from() == GpuMode.RELEASING && m.to() == GpuMode.OFFLINE) {
                acct.releaseDelays.add(m.at() - lastOnlineIdleAt);
                awaitingOfflineResume = true;
            }
            if (m.from() == GpuMode.OFFLINE) {
                awaitingOfflineResume = false;
            }
            if (run.tracing()) {
                run.trace(m.at(), id, "-", TraceKind.MODE, m.from() + "->" + m.to());
            }
        } else if (a instanceof Action.Suspend s) {
            TenantSim x = tenant(s.tenant());
            long ep = ++x.suspendEpoch;
            long ack = run.now() + x.spec.suspendLatency().sample(x.rnd);
            run.at(Math.max(ack, physicalStop(x)), () -> onSuspendAck(x, ep));
            trace(x, TraceKind.SUSPEND, "");
        } else if (a instanceof Action.ForceSuspended f) {
            TenantSim x = tenant(f.tenant());
            x.suspendEpoch++;
            if (holder == x) {
                long stop = physicalStop(x);
                freeForOnline(stop);
                stopExecution(stop);
                releaseToken();
            }
            x.suspensions++;
            x.forced++;
            acct.forced++;
            if (run.tracing()) {
                run.trace(f.at(), id, x.id, TraceKind.FORCED, "bound passed without confirmation");
            }
        } else if (a instanceof Action.Resume r) {
            TenantSim x = tenant(r.tenant());
            if (run.tracing()) {
                run.trace(r.at(), id, x.id, TraceKind.RESUME, "");
            }
            if (x.hasWork()) {
                compute.request(x.id);
            }
        } else if (a instanceof Action.RunOnline r) {
            TenantSim x = tenant(r.tenant());
            startOnline(x);
            long wait = r.waitedNanos() + Math.max(0, onlineFreeAt - run.now());
            x.onlineWaits.add(wait);
            acct.onlineWaits.add(wait);
            if (closingPreemption || r.waitedNanos() > 0) {
                x.preemptionWaits.add(r.waitedNanos());
                acct.preemptionWaits.add(r.waitedNanos());
            }
            if (run.tracing()) {
                trace(x, TraceKind.RUN, "waited=" + Dist.fmt(r.waitedNanos()));
            }
        }
    }

    private void armMachineTimer() {
        long t = state.nextTimerNanos();
        if (t == machineTimerAt) {
            return;
        }
        machineTimerAt = t;
        long ep = ++machineTimerEpoch;
        if (t != Long.MAX_VALUE) {
            run.at(Math.max(t, run.now()), () -> {
                if (ep == machineTimerEpoch) {
                    machineTimerAt = Long.MAX_VALUE;
                    apply(new PreemptionEvent.Tick(run.now()));
                    dispatch();
                }
            });
        }
    }

    private void onSuspendAck(TenantSim x, long ep) {
        if (ep != x.suspendEpoch) {
            return;
        }
        x.suspendEpoch++;
        if (holder == x) {
            freeForOnline(run.now());
            stopExecution();
            releaseToken();
        }
        x.suspensions++;
        trace(x, TraceKind.SUSPENDED, "");
        apply(new PreemptionEvent.Suspended(run.now(), x.id));
        dispatch();
    }

    // ---- offline: the token holder ----

    private void dispatch() {
        if (state.mode() != GpuMode.OFFLINE || holder != null) {
            return;
        }
        TokenDecision d = compute.schedule();
        acct.policyHolding(d instanceof TokenDecision.WaitUntil, run.now());
        if (d instanceof TokenDecision.Granted g) {
            TenantSim x = tenant(g.grant().tenant());
            Grant granted = g.grant();
            holder = x;
            grant = granted;
            x.grants++;
            if (run.tracing()) {
                trace(x, TraceKind.GRANT, "quota=" + Dist.fmt(granted.quotaNanos())
                        + (granted.cut() ? " cut-to=" + Dist.fmt(granted.lengthNanos())
                        : granted.lengthNanos() != granted.quotaNanos() ? " length=" + Dist.fmt(granted.lengthNanos()) : ""));
            }
            apply(new PreemptionEvent.Start(run.now(), x.id));
            startExecution();
            long ep = ++grantEpoch;
            run.at(granted.expiresAtNanos(), () -> onExpiry(ep));
        } else if (d instanceof TokenDecision.WaitUntil w) {
            if (w.atNanos() <= run.now()) {
                throw new IllegalStateException("compute engine of " + id + " asks to wait until " + w.atNanos()
                        + ", which is not after now (" + run.now() + ")");
            }
            if (w.atNanos() != computeTimerAt) {
                computeTimerAt = w.atNanos();
                long ep = ++computeTimerEpoch;
                run.at(w.atNanos(), () -> {
                    if (ep == computeTimerEpoch) {
                        computeTimerAt = Long.MAX_VALUE;
                        dispatch();
                    }
                });
            }
        } else if (d instanceof TokenDecision.Held h) {
            throw new IllegalStateException("compute engine of " + id + " says " + h.grant().tenant()
                    + " holds the token, but the GPU has no holder");
        }
    }

    private void startExecution() {
        TenantSim x = holder();
        TenantSim.Item item = x.next();
        if (item == null) {
            throw new IllegalStateException(x.id + " got the token without work");
        }
        segStart = Math.max(run.now(), onlineFreeAt);
        if (switchBackPending) {
            segStart += cost.switchNanos();   // restoring the offline context
            switchBackPending = false;
            acct.switches++;
        }
        executing = true;
        if (awaitingOfflineResume) {
            acct.resumeDelays.add(run.now() - lastOnlineIdleAt);
            awaitingOfflineResume = false;
        }
        long ep = ++execEpoch;
        run.at(segStart + (long) Math.ceil(item.remaining), () -> onItemDone(ep));
    }

    private void stopExecution() {
        stopExecution(run.now());
    }

    /** The holder's work stops at {@code stop} (now, or the end of an atomic kernel in flight). */
    private void stopExecution(long stop) {
        if (!executing) {
            return;
        }
        if (stop > segStart) {
            TenantSim x = holder();
            TenantSim.Item item = x.running();
            item.remaining = Math.max(0, item.remaining - (stop - segStart));
            x.busy.add(segStart, Math.min(stop, run.end()), 1.0);
        }
        executing = false;
        execEpoch++;
    }

    /**
     * When the holder's work really leaves the GPU if it is stopped now: now, or with atomic kernels
     * the end of the kernel in flight (a kernel whose start is still delayed by a switch has not begun).
     */
    private long physicalStop(TenantSim x) {
        if (!cost.atomicKernels() || holder != x || !executing || segStart >= run.now()) {
            return run.now();
        }
        return segStart + (long) Math.ceil(x.running().remaining);
    }

    /** The holder's work leaves the GPU at {@code stop} for online work, which starts after the switch. */
    private void freeForOnline(long stop) {
        onlineFreeAt = Math.max(onlineFreeAt, stop + cost.switchNanos());
        acct.switches++;
    }

    private void onItemDone(long ep) {
        if (ep != execEpoch) {
            return;
        }
        TenantSim x = holder();
        x.busy.add(segStart, run.now(), 1.0);
        executing = false;
        execEpoch++;   // when the expiry completed it, the kernel's own event at the same time is stale
        x.running().remaining = 0;
        x.complete();
        if (cost.atomicKernels() && x.hasWork() && state.phase(x.id).orElseThrow() == TenantPhase.SUSPENDING) {
            onSuspendAck(x, x.suspendEpoch);   // at a kernel boundary it confirms at once and launches nothing more
            return;
        }
        if (run.now() >= grant().expiresAtNanos() || !x.hasWork()) {
            endHold(x);
        } else {
            startExecution();
        }
        dispatch();
    }

    private void onExpiry(long ep) {
        if (ep != grantEpoch) {
            return;
        }
        if (executing && run.now() - segStart >= Math.ceil(holder().running().remaining)) {
            onItemDone(execEpoch);   // the kernel ends exactly at the expiry: it completes, no extra token turn
            return;
        }
        if (spec.slicing() == Slicing.DRIVER && !cost.atomicKernels()) {
            stopExecution();
            endHold(holder());
            dispatch();
        }
        // LAUNCH, or a kernel that cannot be interrupted: it runs to its end; onItemDone ends the hold
    }

    /** The holder gives the token back on its own: its grant is over, or it has no work. */
    private void endHold(TenantSim x) {
        stopExecution();
        releaseToken();
        TenantPhase p = state.phase(x.id).orElseThrow();
        if (p == TenantPhase.SUSPENDING) {
            freeForOnline(run.now());
            x.suspendEpoch++;   // resolved before the confirmation came
            if (x.hasWork()) {
                x.suspensions++;
                trace(x, TraceKind.SUSPENDED, "at the end of its grant");
                apply(new PreemptionEvent.Stop(run.now(), x.id));
            } else {
                goIdle(x);
            }
        } else if (x.hasWork()) {
            apply(new PreemptionEvent.Stop(run.now(), x.id));
            compute.request(x.id);
        } else {
            goIdle(x);
        }
    }

    private void releaseToken() {
        TenantSim x = holder();
        long overrun = Math.max(0, run.now() - grant().expiresAtNanos());
        ReleaseReport r = compute.release(x.id, overrun);
        usageDue.add(x.id);
        if (run.tracing()) {
            trace(x, TraceKind.RELEASE, "held=" + Dist.fmt(r.usedNanos())
                    + (overrun > 0 ? " overrun=" + Dist.fmt(overrun) : "") + " next-quota=" + Dist.fmt(r.nextQuotaNanos()));
        }
        holder = null;
        grant = null;
        grantEpoch++;
    }

    private void goIdle(TenantSim x) {
        if (!x.online) {
            acct.offlineWork(-1, run.now());
        }
        x.submitted = false;
        trace(x, TraceKind.IDLE, "");
        apply(new PreemptionEvent.Idle(run.now(), x.id));
    }

    // ---- online: processor sharing ----

    private void startOnline(TenantSim x) {
        psAdvance();
        if (x.next() == null) {
            throw new IllegalStateException(x.id + " runs without work");
        }
        online.add(x);
        switchBackPending = cost.switchNanos() > 0;
        psReschedule();
    }

    private void psAdvance() {
        long now = run.now();
        long from = Math.max(psLast, onlineFreeAt);
        long dt = now - from;
        if (dt > 0 && !online.isEmpty()) {
            double share = 1.0 / online.size();
            for (TenantSim x : online) {
                x.running().remaining -= dt * share;
                x.busy.add(from, now, share);
            }
        }
        psLast = now;
    }

    private void psReschedule() {
        long ep = ++psEpoch;
        if (online.isEmpty()) {
            return;
        }
        double min = Double.MAX_VALUE;
        for (TenantSim x : online) {
            min = Math.min(min, x.running().remaining);
        }
        long t = Math.max(run.now(), onlineFreeAt) + Math.max(0, (long) Math.ceil(min * online.size()));
        run.at(t, () -> onOnlineDone(ep));
    }

    private void onOnlineDone(long ep) {
        if (ep != psEpoch) {
            return;
        }
        psAdvance();
        for (TenantSim x : new ArrayList<>(online)) {
            if (x.running().remaining <= 1e-6) {
                x.complete();
                if (x.hasWork()) {
                    x.next();
                } else {
                    online.remove(x);
                    goIdle(x);
                }
            }
        }
        psReschedule();
        dispatch();
    }

    // ---- the end ----

    void finish() {
        acct.account(run.now());
        if (executing && run.now() > segStart) {
            holder().busy.add(segStart, run.now(), 1.0);
        }
        executing = false;
        psAdvance();
    }

    /** The offline token holder; called only where there is one (while executing, or for its grant's events). */
    private TenantSim holder() {
        return Required.of(holder, id, "has no offline token holder");
    }

    /** The holder's grant; called only where there is a holder. */
    private Grant grant() {
        return Required.of(grant, id, "has no grant");
    }

    private TenantSim tenant(String tenantId) {
        TenantSim t = tenants.get(tenantId);
        if (t == null) {
            throw new IllegalStateException("engine named unknown tenant " + tenantId + " on " + id);
        }
        return t;
    }

    private void trace(TenantSim x, TraceKind kind, String detail) {
        if (run.tracing()) {
            run.trace(id, x.id, kind, detail);
        }
    }
}
