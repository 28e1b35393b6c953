package io.qgpu.core.gate;

import static io.qgpu.core.gate.FakeClock.MS;
import static io.qgpu.core.gate.FakeClock.S;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.IsolationPolicy;
import io.qgpu.core.preempt.PreemptionConfig;
import io.qgpu.core.preempt.ReleasePolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 30 item 6, on the manual clock: the README's gate setup (elastic; chat online 20/60, train
 * offline request 30; the default 10 s usage window, 1 ms preemption bound and qGPU's fixed 100 ms
 * release delay) under a steady online stream of 1 ms of work every 11 ms. Train asks for 1 ms
 * slices back to back.
 *
 * <p>The offline floor (on by default) makes train's request 30 a floor on its share of the window:
 * while train is below it, online going idle returns the GPU to train at once, so train gets at least
 * 30% of every 10 s window once the first window has passed, less at most 2 ms (when its usage slides
 * below its request while chat runs, train waits for that 1 ms online burst, and slices start on the
 * test's 0.5 ms steps; measured: 1.5 ms below at worst); and at most 30% plus one online period (11 ms;
 * measured: 9 ms above), because once train is at its request the 100 ms delay holds again and never
 * runs out between two online requests, so train keeps only the gap it was already given. Chat waits
 * at most one offline slice (1 ms, here also the preemption bound) for the GPU (measured: 1 ms).
 *
 * <p>Without the floor ({@code PreemptionConfig.offlineFloor(false)}, checked here too) the same run
 * gives train no slice at all. Both floor tests fail with the floor removed, checked by hand by making
 * {@code StandardPreemptionMachine.releaseAt} ignore it: train's least usage in a window is 0 ns, and
 * no slice comes after its usage slid below its request at T0 + 12 s.
 */
@Timeout(60) // a hang guard only; no verdict depends on wall time
class ReadmeGateOfflineTest {

    private static final long T0 = 100 * S;
    private static final long WINDOW = 10 * S;
    private static final long REQUEST = 3 * S;        // 30% of the 10 s window
    private static final long PERIOD = 11 * MS;       // one online period: the tolerance above the request
    private static final long BELOW = 2 * MS;         // one online burst plus one slice: the tolerance below it

    /** What a run of the stream gave: train's slices as [start, end) pairs, chat's waits. */
    private record Run(List<long[]> slices, List<Long> onlineWaits) {

        /** Train's busy time in (t - window, t]. */
        long usage(long t) {
            long u = 0;
            for (long[] s : slices) {
                u += Math.max(0, Math.min(s[1], t) - Math.max(s[0], t - WINDOW));
            }
            return u;
        }

        long maxOnlineWait() {
            return onlineWaits.stream().mapToLong(Long::longValue).max().orElse(0);
        }
    }

    /**
     * Train asks from {@code T0 + 0.5 ms}; the online stream runs from {@code streamFrom} to the end,
     * {@code seconds} after T0. Steps of 0.5 ms; waits are read on the clock when the future completes.
     */
    private static Run run(GateConfig.Builder config, FakeClock clock, long streamFrom, int seconds) {
        List<long[]> slices = new ArrayList<>();
        List<Long> waits = new ArrayList<>();
        try (Gate gpu0 = Gate.create("GPU-0", config.policy(IsolationPolicy.ELASTIC).usageReportInterval(Duration.ZERO).build())) {
            Tenant chat = gpu0.register(GateTenantSpec.online("chat").request(20).limit(60).build());
            Tenant train = gpu0.register(GateTenantSpec.offline("train").request(30).build());
            CompletableFuture<Lease> off = null;
            Lease offHeld = null;
            long offFrom = 0;
            long offUntil = 0;
            CompletableFuture<Lease> on = null;
            long[] onDone = new long[1];
            long onAsked = 0;
            Lease onHeld = null;
            long onUntil = 0;
            long nextOnline = streamFrom;
            for (long t = T0; t < T0 + seconds * S; t += MS / 2) {
                clock.at(t);
                if (onHeld != null && t >= onUntil) {
                    onHeld.close();
                    onHeld = null;
                }
                if (offHeld != null && t >= offUntil) {           // a 1 ms offline slice ends; train asks again at once
                    offHeld.close();
                    offHeld = null;
                    slices.add(new long[] {offFrom, t});
                    off = gpu0.acquireAsync(train);
                }
                if (t >= nextOnline && on == null && onHeld == null) {
                    onAsked = t;
                    on = gpu0.acquireAsync(chat);
                    on.thenRun(() -> onDone[0] = clock.read());
                    nextOnline += PERIOD;
                }
                if (t == T0 + MS / 2) {
                    off = gpu0.acquireAsync(train);
                }
                if (on != null && on.isDone()) {
                    onHeld = on.join();
                    waits.add(onDone[0] - onAsked);
                    onUntil = t + MS;
                    on = null;
                }
                if (off != null && off.isDone()) {
                    offHeld = off.join();
                    offFrom = t;
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
        return new Run(slices, waits);
    }

    @Test
    void theDefaultIsQgpusFixedDelayWithTheFloor() {
        PreemptionConfig p = GateConfig.ofDefaults().preemption();
        assertEquals(ReleasePolicy.fixed(Duration.ofMillis(100)), p.releasePolicy(), "qGPU's fixed 100 ms delay");
        assertTrue(p.offlineFloor(), "an offline request is a floor by default");
    }

    @Test
    void underTheDefaultsTheOfflineTenantGetsItsRequestOfEveryWindowAndNoMore() {
        FakeClock clock = new FakeClock(T0);
        Run r = run(clock.config(), clock, T0, 30);
        long min = Long.MAX_VALUE;
        long max = 0;
        for (long t = T0 + WINDOW; t < T0 + 30 * S; t += 10 * MS) {   // every 10 ms after the first window
            long u = r.usage(t);
            min = Math.min(min, u);
            max = Math.max(max, u);
        }
        assertTrue(min >= REQUEST - BELOW, "train's least usage in a 10 s window: " + min + " ns");
        assertTrue(max <= REQUEST + PERIOD, "above its request the 100 ms delay holds again: " + max + " ns");
        assertTrue(r.maxOnlineWait() <= MS, "chat waits at most one offline slice: " + r.maxOnlineWait() + " ns");
        assertTrue(r.onlineWaits().size() >= 2_700, "the stream ran: " + r.onlineWaits().size());
    }

    @Test
    void aboveItsRequestTheReleaseDelayHoldsUntilItsUsageSlidesBelow() {
        FakeClock clock = new FakeClock(T0);
        // train runs alone for 5 s (usage 5 s), then the stream starts; its first 2 s of slices leave
        // the window at T0 + 12 s, when its usage falls below 3 s
        Run r = run(clock.config(), clock, T0 + 5 * S, 14);
        long firstAfter = Long.MAX_VALUE;
        int during = 0;
        for (long[] s : r.slices()) {
            if (s[0] >= T0 + 5 * S + MS && s[0] < T0 + 12 * S) {
                during++;
            }
            if (s[0] >= T0 + 12 * S) {
                firstAfter = Math.min(firstAfter, s[0]);
            }
        }
        assertEquals(0, during, "above its request train gets nothing while online comes back within 100 ms");
        assertTrue(firstAfter <= T0 + 12 * S + PERIOD, "below its request again, train runs: first slice at "
                + (firstAfter - T0) + " ns after T0");
        assertTrue(r.maxOnlineWait() <= MS, "chat waits at most one offline slice: " + r.maxOnlineWait() + " ns");
    }

    @Test
    void withoutTheFloorTheFixedDelayLeavesTheOfflineTenantNothing() {
        FakeClock clock = new FakeClock(T0);
        Run r = run(clock.config().preemption(PreemptionConfig.custom().offlineFloor(false).build()), clock, T0, 5);
        assertEquals(0, r.slices().size(), "the bare 100 ms delay never runs out between two online requests");
    }

    @Test
    void theAdaptiveRuleGivesTheOfflineTenantTheOnlineGapsWithoutTheFloorToo() {
        FakeClock clock = new FakeClock(T0);
        Run r = run(clock.config().preemption(PreemptionConfig.custom()
                .releasePolicy(ReleasePolicy.adaptive(Duration.ofMillis(1), Duration.ofMillis(200))).offlineFloor(false).build()),
                clock, T0, 5);
        // 5 s of 11 ms periods, about 9 ms of each free: at least 3 000 of the 1 ms slices after the warm-up
        assertTrue(r.slices().size() >= 3_000, "offline slices: " + r.slices().size());
    }
}
