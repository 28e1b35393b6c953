package io.qgpu.core.gate;

import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.api.IsolationPolicy;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Many online and offline tenants on one gate for two seconds of virtual time, driven by
 * {@link StressHarness} in an order fixed by the seed (the gate's ticker and timer are a
 * {@link FakeClock}): no quota is exceeded beyond one slice, online and offline never overlap, no
 * lease leaks, and every tenant, offline ones included, gets to run. CPU load cannot change the
 * verdict. The same audit is shown to reject a broken admission that lets everything through.
 */
@Timeout(60) // a hang guard only; no test depends on wall time for its verdict
class GateStressTest {

    private static final long WINDOW = 200_000_000L;
    private static final List<StressHarness.TenantLoad> LOAD = List.of(
            new StressHarness.TenantLoad("chat", true, 30),
            new StressHarness.TenantLoad("search", true, 100),
            new StressHarness.TenantLoad("train-a", false, 20),
            new StressHarness.TenantLoad("train-b", false, 50),
            new StressHarness.TenantLoad("etl", false, 100));

    private static long seed() {
        return Long.getLong("qgpu.seed", 20_240_601L);
    }

    /** A {@link FakeClock} as the harness's virtual time. */
    static StressHarness.VirtualTime virtualTime(FakeClock clock) {
        return new StressHarness.VirtualTime() {
            @Override
            public long now() {
                return clock.read();
            }

            @Override
            public long nextTimer() {
                return clock.timer.nextAt();
            }

            @Override
            public void advanceTo(long t) {
                clock.at(t);
            }
        };
    }

    @Test
    void noQuotaExceededBeyondOneSliceNoOverlapNoLeakEveryTenantRuns() {
        FakeClock clock = new FakeClock(1_000_000_000L);
        GateConfig config = clock.config()
                .policy(IsolationPolicy.ELASTIC)
                .token(io.qgpu.core.compute.TokenSchedulerConfig.custom().window(Duration.ofNanos(WINDOW))
                        .baseQuota(Duration.ofMillis(5)).minQuota(Duration.ofMillis(1)).build())
                .minSlice(Duration.ofMillis(1))
                .releaseDelay(Duration.ofMillis(2))
                .preemptionBound(Duration.ofSeconds(30))   // no forced suspension: overlap must be zero
                .usageReportInterval(Duration.ofMillis(50))
                .build();
        try (Gate gate = Gate.create("GPU-stress", config)) {
            RecordingListener events = new RecordingListener();
            gate.addListener(events);
            Tenant[] ts = new Tenant[LOAD.size()];
            for (int i = 0; i < ts.length; i++) {
                StressHarness.TenantLoad l = LOAD.get(i);
                ts[i] = gate.register(GateTenantSpec.builder(l.name(), l.online()
                        ? io.qgpu.api.PriorityClass.ONLINE : io.qgpu.api.PriorityClass.OFFLINE).limit(l.limitPercent()).build());
            }
            StressHarness.Admission viaGate = i -> {
                java.util.concurrent.CompletableFuture<Lease> acquired = gate.acquireAsync(ts[i]);
                java.util.concurrent.CompletableFuture<StressHarness.Handle> handle = acquired.thenApply(lease -> new StressHarness.Handle() {
                    @Override
                    public java.util.concurrent.CompletableFuture<?> checkpoint() {
                        return lease.checkpointAsync();
                    }

                    @Override
                    public void close() {
                        lease.close();
                    }
                });
                handle.whenComplete((h, ex) -> {
                    if (handle.isCancelled()) {
                        acquired.cancel(false);   // withdraws the acquire (or closes a lease that raced)
                    }
                });
                return handle;
            };
            StressHarness.Report r = new StressHarness(LOAD, WINDOW, seed()).run(viaGate, virtualTime(clock), 2,
                    2_000_000_000L);

            assertEquals(List.of(), r.quotaViolations());
            assertEquals(0, r.overlapNanos(), "online and offline slices overlapped");
            assertTrue(r.slices() > 1_000, "too little work to mean anything: " + r.slices());
            assertEquals(0, gate.openLeases(), () -> "leaked leases: " + gate.usage());
            assertEquals(0, gate.waitingAcquires());
            assertEquals(List.of(), gate.preemptionState().invariantViolations());
            for (int i = 0; i < ts.length; i++) {
                assertTrue(r.busyNanos()[i] > 0, LOAD.get(i).name() + " never ran; busy per tenant " + java.util.Arrays.toString(r.busyNanos()) + ", " + gate.usage());
                assertTrue(gate.usage(ts[i]).totalLeaseNanos() >= r.busyNanos()[i],
                        "the gate counted less than the slices ran for " + LOAD.get(i).name());
            }
            assertTrue(events.of(GateEvent.ForcedSuspension.class).isEmpty());
            assertFalse(events.of(GateEvent.Suspended.class).isEmpty(), "no preemption happened");
        }
    }

    @Test
    void theAuditRejectsABrokenAdmission() {
        StressHarness.Handle nothing = new StressHarness.Handle() {
            @Override
            public java.util.concurrent.CompletableFuture<?> checkpoint() {
                return java.util.concurrent.CompletableFuture.completedFuture(null);
            }

            @Override
            public void close() {
            }
        };
        StressHarness.Admission letsEverythingThrough = i -> java.util.concurrent.CompletableFuture.completedFuture(nothing);
        // an offline tenant limited to 20% that always has work, next to online requests: without a
        // gate it runs all the time, and online slices land on top of offline ones
        List<StressHarness.TenantLoad> load = List.of(
                new StressHarness.TenantLoad("chat", true, 100),
                new StressHarness.TenantLoad("train-a", false, 20));
        FakeClock clock = new FakeClock(0);
        StressHarness.Report r = new StressHarness(load, WINDOW / 2, seed()).run(letsEverythingThrough,
                virtualTime(clock), 2, 600_000_000L);
        assertFalse(r.quotaViolations().isEmpty(), "the audit missed quota violations");
        assertTrue(r.overlapNanos() > 0, "the audit missed online/offline overlap");
    }

    @Test
    void windowAuditArithmetic() {
        long[][] u = StressHarness.union(List.of(new long[] {0, 10}, new long[] {5, 20}, new long[] {30, 40}));
        assertArrayEquals(new long[][] {{0, 20}, {30, 40}}, u);
        assertEquals(20, StressHarness.maxWindowUsage(u, 20));
        assertEquals(25, StressHarness.maxWindowUsage(u, 35));
        assertEquals(30, StressHarness.maxWindowUsage(u, 100));
        assertEquals(5, StressHarness.overlap(u, new long[][] {{15, 25}, {40, 50}}));
        List<long[]> slices = List.of(new long[] {0, 10}, new long[] {5, 20}, new long[] {30, 40});
        // window 20, limit 5: worst window holds 20 ns; the longest overlapping slice is 15
        assertNotNull(StressHarness.audit(u, slices, 20, 4, 0));
        assertNull(StressHarness.audit(u, slices, 20, 5, 0));
    }
}
