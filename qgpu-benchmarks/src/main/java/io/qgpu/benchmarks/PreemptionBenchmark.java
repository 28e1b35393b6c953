package io.qgpu.benchmarks;

import io.qgpu.api.PriorityClass;
import io.qgpu.api.Ticker;
import io.qgpu.core.preempt.PreemptionConfig;
import io.qgpu.core.preempt.PreemptionController;
import io.qgpu.core.preempt.PreemptionEvent;
import io.qgpu.core.preempt.PreemptionMachine;
import io.qgpu.core.preempt.PreemptionState;
import io.qgpu.core.preempt.Transition;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The cost of one preemption-state-machine transition: the pure function alone on a full cycle
 * (online submits and preempts a running offline tenant, it confirms, online idles, the release
 * timer fires, the policy restarts the offline tenant), and the thread-safe controller with two
 * threads driving their own online tenants on one GPU (compare resilience4j's atomic rate limiter,
 * about 0.2 us per acquire on 2 threads).
 *
 * <pre>
 * java -jar qgpu-benchmarks/target/benchmarks.jar PreemptionBenchmark
 * </pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class PreemptionBenchmark {

    /** One GPU with an online tenant and three offline ones, one of them running; a five-event cycle. */
    @State(Scope.Thread)
    public static class Cycle {
        final PreemptionConfig config = PreemptionConfig.ofDefaults();
        final PreemptionMachine machine = PreemptionMachine.standard(config);
        PreemptionState state;
        long now;
        int step;

        @Setup
        public void setUp() {
            state = machine.initial(0);
            state = machine.next(state, new PreemptionEvent.Register(0, "infer", PriorityClass.ONLINE)).state();
            for (String t : new String[] {"train", "prep", "eval"}) {
                state = machine.next(state, new PreemptionEvent.Register(0, t, PriorityClass.OFFLINE)).state();
                state = machine.next(state, new PreemptionEvent.Submit(0, t)).state();
            }
            state = machine.next(state, new PreemptionEvent.Start(0, "train")).state();
        }

        PreemptionEvent nextEvent() {
            switch (step++ % 5) {
                case 0:
                    now += 1_000;
                    return new PreemptionEvent.Submit(now, "infer");        // OFFLINE -> PREEMPTING, Suspend(train)
                case 1:
                    now += 50_000;
                    return new PreemptionEvent.Suspended(now, "train");     // -> ONLINE, RunOnline(infer)
                case 2:
                    now += 5_000_000;
                    return new PreemptionEvent.Idle(now, "infer");          // -> RELEASING
                case 3:
                    now += config.releaseDelayNanos();
                    return new PreemptionEvent.Tick(now);                   // -> OFFLINE, Resume x3
                default:
                    return new PreemptionEvent.Start(now, "train");         // train RUNNING again
            }
        }
    }

    @Benchmark
    public Transition pureTransition(Cycle c) {
        Transition t = c.machine.next(c.state, c.nextEvent());
        c.state = t.state();
        return t;
    }

    /** One controller shared by the benchmark's threads. */
    @State(Scope.Benchmark)
    public static class Shared {
        final PreemptionController controller = PreemptionController.create(PreemptionConfig.ofDefaults(), Ticker.system());
        final AtomicInteger ids = new AtomicInteger();
    }

    /** Each thread's own online tenant. */
    @State(Scope.Thread)
    public static class Mine {
        String tenant;

        @Setup
        public void setUp(Shared s) {
            tenant = "online-" + s.ids.incrementAndGet();
            s.controller.register(tenant, PriorityClass.ONLINE);
        }
    }

    @Benchmark
    @Threads(2)
    @OperationsPerInvocation(2)
    public Transition controllerTwoThreads(Shared s, Mine m) {
        s.controller.submit(m.tenant);
        return s.controller.idle(m.tenant);
    }
}
