package io.qgpu.testkit.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.IsolationPolicy;
import io.qgpu.core.preempt.PreemptionConfig;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The offline floor in the simulator, which drives the same preemption machine as the gate: the
 * README's stream (online: 1 ms of work, then 10 ms off, so 1 ms every 11 ms) beside an offline tenant
 * with request 30 (elastic, limit 100, 1 ms kernels back to back), qGPU's fixed 100 ms release delay,
 * the default 10 s usage window, 40 s. With the floor (the default) the offline tenant has at least
 * 30% of every 10 s window after the first, less at most 2 ms (one online burst plus one kernel), and
 * at most 30% plus one online period (11 ms): above its request the 100 ms delay holds again. Online
 * waits at most one offline kernel (1 ms, also the preemption bound). Measured (seed 1): least
 * usage 3 s - 1 ns, most 3 s + 4.95 ms, online wait at most 50 us (the default suspend latency).
 * Without the floor the offline tenant gets nothing after the first second. The floor test fails with the floor removed from {@code StandardPreemptionMachine.releaseAt}
 * (checked by hand: its least window usage is 0).
 */
class OfflineFloorSimTest {

    private static final long MS = 1_000_000L;
    private static final long S = 1_000 * MS;

    private static SimResult run(boolean floor) {
        TenantSpec chat = TenantSpec.online("chat", new Workload.ClosedLoop(Dist.constant(Duration.ofMillis(1)),
                Dist.constant(Duration.ofMillis(10))));
        TenantSpec train = TenantSpec.offline("train", new Workload.ClosedLoop(Dist.constant(Duration.ofMillis(1)),
                Dist.constant(Duration.ZERO))).withShare(30, 100);
        Scenario s = Scenario.builder("floor").duration(Duration.ofSeconds(40)).seed(1)
                .preemption(PreemptionConfig.custom().offlineFloor(floor).build())
                .gpu(GpuSpec.of("gpu0", IsolationPolicy.ELASTIC, List.of(chat, train))).build();
        return Simulator.standard().run(s);
    }

    @Test
    void withTheFloorTheOfflineTenantHasItsRequestOfEveryWindowAndNoMore() {
        SimResult r = run(true);
        BusyLog train = r.busy("train");
        double min = train.minWindowUsage(10 * S, 10 * S, 40 * S);
        double max = train.maxWindowUsage(10 * S, 10 * S, 40 * S);
        assertTrue(min >= 3 * S - 2 * MS, "least usage in a 10 s window: " + min);
        assertTrue(max <= 3 * S + 11 * MS, "most usage in a 10 s window: " + max);
        assertTrue(r.gpu("gpu0").onlineWaitMaxNanos() <= MS, "online waits at most one offline kernel: "
                + r.gpu("gpu0").onlineWaitMaxNanos());
        assertTrue(r.tenant("chat").gpuSeconds() >= 40.0 / 11 * 0.99, "the stream ran: " + r.tenant("chat").gpuSeconds());
    }

    @Test
    void withoutTheFloorTheFixedDelayLeavesTheOfflineTenantNothing() {
        SimResult r = run(false);
        assertEquals(0.0, r.busy("train").gpuNanosBetween(1 * S, 40 * S), 1e-9);
    }
}
