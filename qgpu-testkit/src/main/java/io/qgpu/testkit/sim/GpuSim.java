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
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * One simulated GPU: the preemption machine decides which class owns the GPU, the compute engine
 * which offline tenant holds the token; the offline holder runs alone, online tenants share the GPU
 * equally (processor sharing). Package-internal, single-threaded.
 */
final class GpuSim {

    private static final GpuMode[] MODES = GpuMode.values();

    final String id;
    final GpuSpec spec;
    private final SimRun run;
    private final ComputeEngine compute;
    private final PreemptionMachine machine;
    private PreemptionState state;
    final Map<String, TenantSim> tenants = new LinkedHashMap<>();

    // the offline token holder
    private TenantSim holder;
    private Grant grant;
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

    // accounting
    final List<long[]> modeTimeline = new ArrayList<>();
    final LongList preemptionWaits = new LongList();
    final LongList releaseDelays = new LongList();
    final LongList resumeDelays = new LongList();
    long forced;
    private long lastOnlineIdleAt = Long.MIN_VALUE;
    /** Online went idle at {@link #lastOnlineIdleAt} and the GPU was released; no offline tenant has run since. */
    private boolean awaitingOfflineResume;
    private boolean closingPreemption;
    // time in mode OFFLINE while some offline tenant had work
    private GpuMode currentMode = GpuMode.OFFLINE;
    private int offlineWithWork;
    private long demandAccountedTo;
    private long offlineDemandNanos;
    /** The compute engine answered WaitUntil: every waiting offline tenant is held back by its policy. */
    private boolean policyHolding;
    long policyHeldNanos;

    GpuSim(GpuSpec spec, Scenario scenario, SimEngines engines, SimRun run, SplittableRandom root) {
        this.id = spec.id();
        this.spec = spec;
        this.run = run;
        this.compute = engines.compute().create(spec.policy(), scenario.compute(), run);
        this.machine = engines.preemption().apply(scenario.preemption());
        this.state = machine.initial(0);
        modeTimeline.add(new long[] {0, GpuMode.OFFLINE.ordinal()});
        for (TenantSpec t : spec.tenants()) {
            TenantSim ts = new TenantSim(t, root.split(), run);
            tenants.put(t.id(), ts);
            apply(new PreemptionEvent.Register(0, t.id(), t.priority()));
            if (!t.online()) {
                compute.addTenant(t.id(), t.requestPercent(), t.limitPercent());
            }
        }
    }

    void start() {
        tenants.values().forEach(t -> t.attach(this));
    }

    // ---- work arriving ----

    void onWork(TenantSim x) {
        if (!x.online) {
            accountDemand(run.now());
            offlineWithWork++;
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
        armMachineTimer();
    }

    private void handle(Action a) {
        if (a instanceof Action.ModeChanged m) {
            accountDemand(m.at());
            currentMode = m.to();
            modeTimeline.add(new long[] {m.at(), m.to().ordinal()});
            closingPreemption = m.from() == GpuMode.PREEMPTING && m.to() == GpuMode.ONLINE;
            if (m.to() == GpuMode.RELEASING && m.from() == GpuMode.ONLINE) {
                lastOnlineIdleAt = m.at();
            }
            if (m.from() == GpuMode.RELEASING && m.to() == GpuMode.OFFLINE) {
                releaseDelays.add(m.at() - lastOnlineIdleAt);
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
            long latency = x.spec.suspendLatency().sample(x.rnd);
            run.at(run.now() + latency, () -> onSuspendAck(x, ep));
            trace(x, TraceKind.SUSPEND, "");
        } else if (a instanceof Action.ForceSuspended f) {
            TenantSim x = tenant(f.tenant());
            x.suspendEpoch++;
            if (holder == x) {
                stopExecution();
                releaseToken();
            }
            x.suspensions++;
            x.forced++;
            forced++;
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
            if (closingPreemption || r.waitedNanos() > 0) {
                x.preemptionWaits.add(r.waitedNanos());
                preemptionWaits.add(r.waitedNanos());
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
        policyHolding(d instanceof TokenDecision.WaitUntil);
        if (d instanceof TokenDecision.Granted g) {
            TenantSim x = tenant(g.grant().tenant());
            holder = x;
            grant = g.grant();
            x.grants++;
            if (run.tracing()) {
                trace(x, TraceKind.GRANT, "quota=" + Dist.fmt(grant.quotaNanos())
                        + (grant.cut() ? " cut-to=" + Dist.fmt(grant.lengthNanos())
                        : grant.lengthNanos() != grant.quotaNanos() ? " length=" + Dist.fmt(grant.lengthNanos()) : ""));
            }
            apply(new PreemptionEvent.Start(run.now(), x.id));
            startExecution();
            long ep = ++grantEpoch;
            run.at(grant.expiresAtNanos(), () -> onExpiry(ep));
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
        TenantSim x = holder;
        TenantSim.Item item = x.next();
        if (item == null) {
            throw new IllegalStateException(x.id + " got the token without work");
        }
        segStart = run.now();
        executing = true;
        if (awaitingOfflineResume) {
            resumeDelays.add(run.now() - lastOnlineIdleAt);
            awaitingOfflineResume = false;
        }
        long ep = ++execEpoch;
        run.at(run.now() + (long) Math.ceil(item.remaining), () -> onItemDone(ep));
    }

    private void stopExecution() {
        if (!executing) {
            return;
        }
        long elapsed = run.now() - segStart;
        holder.current.remaining = Math.max(0, holder.current.remaining - elapsed);
        holder.busy.add(segStart, run.now(), 1.0);
        executing = false;
        execEpoch++;
    }

    private void onItemDone(long ep) {
        if (ep != execEpoch) {
            return;
        }
        TenantSim x = holder;
        x.busy.add(segStart, run.now(), 1.0);
        executing = false;
        x.current.remaining = 0;
        x.complete();
        if (run.now() >= grant.expiresAtNanos() || !x.hasWork()) {
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
        if (executing && run.now() - segStart >= Math.ceil(holder.current.remaining)) {
            onItemDone(execEpoch);   // the kernel ends exactly at the expiry: it completes, no extra token turn
            return;
        }
        if (spec.slicing() == Slicing.DRIVER) {
            stopExecution();
            endHold(holder);
            dispatch();
        }
        // LAUNCH: the kernel in flight runs to its end; onItemDone ends the hold
    }

    /** The holder gives the token back on its own: its grant is over, or it has no work. */
    private void endHold(TenantSim x) {
        stopExecution();
        releaseToken();
        TenantPhase p = state.phase(x.id).orElseThrow();
        if (p == TenantPhase.SUSPENDING) {
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
        long overrun = Math.max(0, run.now() - grant.expiresAtNanos());
        ReleaseReport r = compute.release(holder.id, overrun);
        if (run.tracing()) {
            trace(holder, TraceKind.RELEASE, "held=" + Dist.fmt(r.usedNanos())
                    + (overrun > 0 ? " overrun=" + Dist.fmt(overrun) : "") + " next-quota=" + Dist.fmt(r.nextQuotaNanos()));
        }
        holder = null;
        grant = null;
        grantEpoch++;
    }

    private void goIdle(TenantSim x) {
        if (!x.online) {
            accountDemand(run.now());
            offlineWithWork--;
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
        psReschedule();
    }

    private void psAdvance() {
        long now = run.now();
        long dt = now - psLast;
        if (dt > 0 && !online.isEmpty()) {
            double share = 1.0 / online.size();
            for (TenantSim x : online) {
                x.current.remaining -= dt * share;
                x.busy.add(psLast, now, share);
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
            min = Math.min(min, x.current.remaining);
        }
        long t = run.now() + Math.max(0, (long) Math.ceil(min * online.size()));
        run.at(t, () -> onOnlineDone(ep));
    }

    private void onOnlineDone(long ep) {
        if (ep != psEpoch) {
            return;
        }
        psAdvance();
        for (TenantSim x : new ArrayList<>(online)) {
            if (x.current.remaining <= 1e-6) {
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

    private void accountDemand(long at) {
        if (currentMode == GpuMode.OFFLINE && offlineWithWork > 0) {
            if (policyHolding) {
                policyHeldNanos += at - demandAccountedTo;
            } else {
                offlineDemandNanos += at - demandAccountedTo;
            }
        }
        demandAccountedTo = at;
    }

    private void policyHolding(boolean holding) {
        if (holding != policyHolding) {
            accountDemand(run.now());
            policyHolding = holding;
        }
    }

    void finish() {
        accountDemand(run.now());
        if (executing) {
            holder.busy.add(segStart, run.now(), 1.0);
            executing = false;
        }
        psAdvance();
    }

    Map<GpuMode, Long> modeNanos(long end) {
        Map<GpuMode, Long> m = new EnumMap<>(GpuMode.class);
        for (GpuMode g : GpuMode.values()) {
            m.put(g, 0L);
        }
        for (int i = 0; i < modeTimeline.size(); i++) {
            long from = modeTimeline.get(i)[0];
            long to = i + 1 < modeTimeline.size() ? modeTimeline.get(i + 1)[0] : end;
            GpuMode mode = MODES[(int) modeTimeline.get(i)[1]];
            m.merge(mode, Math.max(0, Math.min(to, end) - Math.min(from, end)), Long::sum);
        }
        return m;
    }

    /**
     * Offline GPU time while in mode OFFLINE, and the time in mode OFFLINE while offline tenants had
     * work that their policy let them run.
     */
    double[] offlineUseOfOfflineMode(long end, Map<String, BusyLog> logs) {
        double used = 0;
        double time = offlineDemandNanos;
        for (int i = 0; i < modeTimeline.size(); i++) {
            if (modeTimeline.get(i)[1] != GpuMode.OFFLINE.ordinal()) {
                continue;
            }
            long from = Math.min(modeTimeline.get(i)[0], end);
            long to = i + 1 < modeTimeline.size() ? Math.min(modeTimeline.get(i + 1)[0], end) : end;
            for (TenantSim t : tenants.values()) {
                if (!t.online) {
                    used += logs.get(t.id).gpuNanosBetween(from, to);
                }
            }
        }
        return new double[] {used, time};
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
