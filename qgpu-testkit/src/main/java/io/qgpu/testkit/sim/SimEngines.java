package io.qgpu.testkit.sim;

import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.Ticker;
import io.qgpu.api.Validate;
import io.qgpu.core.compute.ComputeEngine;
import io.qgpu.core.compute.TokenSchedulerConfig;
import io.qgpu.core.preempt.PreemptionConfig;
import io.qgpu.core.preempt.PreemptionMachine;
import java.util.function.Function;

/**
 * The engines a simulation runs: how to make each GPU's compute engine and preemption machine. Tests
 * swap in their own (a deliberately broken engine must fail the checks).
 *
 * <pre>{@code
 * SimEngines standard = SimEngines.standard();
 * SimEngines mine = new SimEngines((policy, config, ticker) -> new MyEngine(ticker), PreemptionMachine::standard);
 * Simulator sim = new Simulator(mine);
 * }</pre>
 *
 * @param compute    makes the compute engine of one GPU
 * @param preemption makes the preemption machine of one GPU
 *
 * <p>Thread safety: immutable if the factories are.
 */
public record SimEngines(ComputeFactory compute, Function<PreemptionConfig, PreemptionMachine> preemption) {

    public SimEngines {
        Validate.notNull("simEngines.compute", compute);
        Validate.notNull("simEngines.preemption", preemption);
    }

    /** {@link ComputeEngine#create} and {@link PreemptionMachine#standard}. */
    public static SimEngines standard() {
        return new SimEngines(ComputeEngine::create, PreemptionMachine::standard);
    }

    public SimEngines withCompute(ComputeFactory c) {
        return new SimEngines(c, preemption);
    }

    public SimEngines withPreemption(Function<PreemptionConfig, PreemptionMachine> p) {
        return new SimEngines(compute, p);
    }

    /** Makes the compute engine of one GPU; the ticker is the simulation's virtual clock. */
    @FunctionalInterface
    public interface ComputeFactory {
        ComputeEngine create(IsolationPolicy policy, TokenSchedulerConfig config, Ticker ticker);
    }
}
