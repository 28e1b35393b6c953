package io.qgpu.testkit.sim;

import io.qgpu.api.InvalidValueException;
import java.util.List;
import java.util.Map;

/**
 * Everything a simulation produced.
 *
 * <pre>{@code
 * SimResult r = Simulator.standard().run(scenario);
 * r.tenant("train-a").share();
 * r.gpu("gpu0").preemptionMaxNanos();
 * r.shares().series("infer");
 * r.trace();                      // empty unless the simulator records traces
 * }</pre>
 *
 * @param scenario what was run
 * @param gpus     per GPU, in scenario order
 * @param tenants  per tenant, in scenario order
 * @param shares   each tenant's share per time bucket
 * @param busy     per tenant, when it used its GPU
 * @param trace    the events, in time order (empty when not recorded)
 * @param events   discrete events processed
 *
 * <p>Thread safety: immutable.
 */
public record SimResult(Scenario scenario, List<GpuMetrics> gpus, List<TenantMetrics> tenants, ShareSeries shares,
                        Map<String, BusyLog> busy, List<TraceEvent> trace, long events) {

    public SimResult {
        gpus = List.copyOf(gpus);
        tenants = List.copyOf(tenants);
        busy = Map.copyOf(busy);
        trace = List.copyOf(trace);
    }

    public TenantMetrics tenant(String id) {
        return tenants.stream().filter(t -> t.tenant().equals(id)).findFirst()
                .orElseThrow(() -> new InvalidValueException("tenant", id, "is not in this simulation"));
    }

    public GpuMetrics gpu(String id) {
        return gpus.stream().filter(g -> g.gpu().equals(id)).findFirst()
                .orElseThrow(() -> new InvalidValueException("gpu", id, "is not in this simulation"));
    }

    public BusyLog busy(String tenant) {
        BusyLog b = busy.get(tenant);
        if (b == null) {
            throw new InvalidValueException("tenant", tenant, "is not in this simulation");
        }
        return b;
    }
}
