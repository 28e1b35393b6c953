package io.qgpu.testkit.sim;

import io.qgpu.api.Validate;
import io.qgpu.core.preempt.GpuMode;
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
 * sample of its suspension latency, or is suspended by force at the bound). Online tenants share the
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
                tenantMetrics.add(new TenantMetrics(t.id, g.id, t.spec.priority(), t.spec.requestPercent(),
                        t.spec.limitPercent(), used / 1e9, used / end, active == 0 ? 0 : used / active,
                        t.latencies.size(), t.pendingRequests(), t.latencies.percentile(50), t.latencies.percentile(99),
                        t.latencies.max(), t.preemptionWaits.size(), t.preemptionWaits.percentile(50),
                        t.preemptionWaits.percentile(99), t.preemptionWaits.max(), t.suspensions, t.forced,
                        t.iterations, t.grants));
            }
            Map<GpuMode, Long> modes = g.modeNanos(end);
            double[] idleUse = g.offlineUseOfOfflineMode(end, logs);
            gpuMetrics.add(new GpuMetrics(g.id, g.spec.policy(), g.spec.slicing(), (onlineNanos + offlineNanos) / end,
                    onlineNanos / end, offlineNanos / end, modes, idleUse[1] == 0 ? -1 : idleUse[0] / idleUse[1],
                    g.policyHeldNanos, g.preemptionWaits.size(), g.preemptionWaits.percentile(50),
                    g.preemptionWaits.percentile(99), g.preemptionWaits.max(), g.forced, g.releaseDelays.size(),
                    g.releaseDelays.min(), g.releaseDelays.max(), g.resumeDelays.size(), g.resumeDelays.min(),
                    g.resumeDelays.max()));
        }
        List<TraceEvent> events = new ArrayList<>(run.traceEvents());
        events.sort(Comparator.comparingLong(TraceEvent::atNanos));
        ShareSeries series = ShareSeries.of(scenario.bucketNanos(), end, logs);
        return new SimResult(scenario, gpuMetrics, tenantMetrics, series, logs, events, run.processed());
    }
}
