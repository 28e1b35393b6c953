package io.qgpu.testkit.sim;

import io.qgpu.api.Validate;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * A discrete-event GPU simulator: runs a {@link Scenario} against the engines in virtual time and
 * reports what each tenant and GPU got.
 *
 * <p>Model. Each GPU has a {@link io.qgpu.core.preempt.PreemptionMachine} (which class owns the
 * GPU) and a {@link io.qgpu.core.compute.ComputeEngine} (which offline tenant holds the token), both
 * reading the virtual clock. The offline holder runs its kernels alone; its grant ends at the expiry
 * ({@link Slicing}), when it runs out of work, or when online work preempts it (it confirms after a
 * sample of its suspension latency, or is suspended by force at the bound). What preemption costs
 * is the scenario's {@link PreemptionCost}: with atomic kernels online work waits for the offline
 * kernel in flight, and each switch between offline and online work costs GPU time. Online tenants share the
 * GPU equally while they have work (processor sharing, no policy). Work progress is kept across
 * suspensions. Events at the same time run in the order they were scheduled, so a seed gives the
 * same result every time; each tenant draws from its own split of the seed.
 *
 * <pre>{@code
 * SimResult r = Simulator.standard().withTrace(true).run(scenario);
 * r.tenant("infer").latencyP99Nanos();
 * r.gpu("gpu0").utilization();
 * }</pre>
 *
 * <p>Thread safety: immutable; each {@link #run} is independent, so one simulator may run
 * scenarios on several threads at once.
 */
public final class Simulator {

    private final SimEngines engines;
    private final boolean trace;

    public Simulator(SimEngines engines) {
        this(engines, false);
    }

    private Simulator(SimEngines engines, boolean trace) {
        this.engines = Validate.notNull("simulator.engines", engines);
        this.trace = trace;
    }

    /** The standard engines, no trace. */
    public static Simulator standard() {
        return new Simulator(SimEngines.standard());
    }

    /** The same simulator, recording a trace or not. */
    public Simulator withTrace(boolean record) {
        return new Simulator(engines, record);
    }

    public SimResult run(Scenario scenario) {
        Validate.notNull("simulator.scenario", scenario);
        long end = scenario.durationNanos();
        SimRun run = new SimRun(end, trace);
        SplittableRandom root = new SplittableRandom(scenario.seed());
        List<GpuSim> gpus = new ArrayList<>();
        for (GpuSpec spec : scenario.gpus()) {
            gpus.add(new GpuSim(spec, scenario, engines, run, root));
        }
        gpus.forEach(GpuSim::start);
        run.run();
        gpus.forEach(GpuSim::finish);

        Map<String, BusyLog> logs = new LinkedHashMap<>();
        List<TenantMetrics> tenantMetrics = new ArrayList<>();
        List<GpuMetrics> gpuMetrics = new ArrayList<>();
        for (GpuSim g : gpus) {
            double onlineNanos = 0;
            double offlineNanos = 0;
            for (TenantSim t : g.tenants.values()) {
                BusyLog log = t.busy.build();
                logs.put(t.id, log);
                double used = log.gpuNanos();
                if (t.online) {
                    onlineNanos += used;
                } else {
                    offlineNanos += used;
                }
                long active = t.activeNanos(end);
                long w = Math.min(scenario.compute().windowNanos(), end);
                tenantMetrics.add(new TenantMetrics(t.id, g.id, t.spec.priority(), t.spec.requestPercent(),
                        t.spec.limitPercent(), used / 1e9, used / end, active == 0 ? 0 : used / active,
                        t.latencies.size(), t.pendingRequests(), t.latencies.percentile(50), t.latencies.percentile(99),
                        t.latencies.max(), t.preemptionWaits.size(), t.preemptionWaits.percentile(50),
                        t.preemptionWaits.percentile(99), t.preemptionWaits.max(), t.suspensions, t.forced,
                        t.iterations, t.grants, log.maxWindowUsage(w, 0, end) / w, t.onlineWaits.percentile(99)));
            }
            GpuAccounting a = g.acct;
            List<BusyLog> offlineLogs = new ArrayList<>();
            g.tenants.values().stream().filter(t -> !t.online).forEach(t -> offlineLogs.add(logs.get(t.id)));
            double[] idleUse = a.offlineUseOfOfflineMode(end, offlineLogs);
            gpuMetrics.add(new GpuMetrics(g.id, g.spec.policy(), g.spec.slicing(), scenario.preemption().releasePolicy().describe(),
                    (onlineNanos + offlineNanos) / end, onlineNanos / end, offlineNanos / end, a.modeNanos(end),
                    idleUse[1] == 0 ? -1 : idleUse[0] / idleUse[1], a.policyHeldNanos, a.preemptionWaits.size(),
                    a.preemptionWaits.percentile(50), a.preemptionWaits.percentile(99), a.preemptionWaits.max(), a.forced,
                    a.releaseDelays.size(), a.releaseDelays.min(), a.releaseDelays.max(), a.resumeDelays.size(),
                    a.resumeDelays.min(), a.resumeDelays.max(), a.onlineWaits.size(), a.onlineWaits.percentile(50),
                    a.onlineWaits.percentile(99), a.onlineWaits.max(), a.releaseIdleNanos, a.switches));
        }
        List<TraceEvent> events = new ArrayList<>(run.traceEvents());
        events.sort(Comparator.comparingLong(TraceEvent::atNanos));
        ShareSeries series = ShareSeries.of(scenario.bucketNanos(), end, logs);
        return new SimResult(scenario, gpuMetrics, tenantMetrics, series, logs, events, run.processed());
    }
}
