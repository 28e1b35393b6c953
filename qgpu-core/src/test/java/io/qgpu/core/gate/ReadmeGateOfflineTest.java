package io.qgpu.core.gate;

import static io.qgpu.core.gate.FakeClock.MS;
import static io.qgpu.core.gate.FakeClock.S;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.IsolationPolicy;
import io.qgpu.core.preempt.ReleasePolicy;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 30 item 6, on the manual clock: the README's gate setup (elastic; chat online 20/60, train
 * offline request 30) under a steady online stream of 1 ms of work every 11 ms. Under the gate's
 * default release rule (qGPU's fixed 100 ms delay) the delay never runs out between two online
 * requests, so train gets no GPU time at all: its request is no floor against online work. With the
 * adaptive rule the README's example now sets, train runs in the online gaps.
 */
@Timeout(60) // a hang guard only; no verdict depends on wall time
class ReadmeGateOfflineTest {

    private static final long T0 = 100 * S;

    /** Offline slices of 1 ms that train ran in {@code seconds} of the steady online stream. */
    private static int offlineSlices(GateConfig.Builder config, FakeClock clock, int seconds) {
        int slices = 0;
        try (Gate gpu0 = Gate.create("GPU-0", config.policy(IsolationPolicy.ELASTIC).usageReportInterval(Duration.ZERO).build())) {
            Tenant chat = gpu0.register(GateTenantSpec.online("chat").request(20).limit(60).build());
            Tenant train = gpu0.register(GateTenantSpec.offline("train").request(30).build());
            CompletableFuture<Lease> off = null;   // train asks once the online stream has started
            Lease offHeld = null;
            long offUntil = 0;
            CompletableFuture<Lease> on = null;
            Lease onHeld = null;
            long onUntil = 0;
            long nextOnline = T0;
            for (long t = T0; t < T0 + seconds * S; t += MS / 2) {
                clock.at(t);
                if (onHeld != null && t >= onUntil) {
                    onHeld.close();
                    onHeld = null;
                }
                if (offHeld != null && t >= offUntil) {           // a 1 ms offline slice ends; train asks again at once
                    offHeld.close();
                    offHeld = null;
                    slices++;
                    off = gpu0.acquireAsync(train);
                }
                if (t >= nextOnline && on == null && onHeld == null) {
                    on = gpu0.acquireAsync(chat);
                    nextOnline += 11 * MS;
                }
                if (t == T0 + MS / 2) {
                    off = gpu0.acquireAsync(train);
                }
                if (on != null && on.isDone()) {
                    onHeld = on.join();
                    onUntil = t + MS;
                    on = null;
                }
                if (off != null && off.isDone()) {
                    offHeld = off.join();
                    offUntil = t + MS;
                    off = null;
                }
            }
            if (onHeld != null) {
                onHeld.close();
            }
            if (offHeld != null) {
                offHeld.close();
            }
            if (off != null) {
                off.cancel(true);
            }
        }
        return slices;
    }

    @Test
    void underTheDefaultFixedDelayASteadyOnlineStreamLeavesTheOfflineTenantNothing() {
        FakeClock clock = new FakeClock(T0);
        assertEquals(ReleasePolicy.fixed(Duration.ofMillis(100)), GateConfig.ofDefaults().preemption().releasePolicy(),
                "the default release rule is qGPU's fixed 100 ms delay");
        assertEquals(0, offlineSlices(clock.config(), clock, 5), "request 30 is no floor against online work");
    }

    @Test
    void theReadmesAdaptiveRuleGivesTheOfflineTenantTheOnlineGaps() {
        FakeClock clock = new FakeClock(T0);
        int slices = offlineSlices(clock.config().releasePolicy(ReleasePolicy.adaptive(Duration.ofMillis(1), Duration.ofMillis(200))),
                clock, 5);
        // 5 s of 11 ms periods, about 9 ms of each free: at least 3 000 of the 1 ms slices after the warm-up
        assertTrue(slices >= 3_000, "offline slices: " + slices);
    }
}
