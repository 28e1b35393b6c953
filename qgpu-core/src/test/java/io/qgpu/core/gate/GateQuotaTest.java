package io.qgpu.core.gate;

import static io.qgpu.core.gate.FakeClock.MS;
import static io.qgpu.core.gate.FakeClock.S;
import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.IsolationPolicy;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Exact quota enforcement with a manual ticker and a hand-cranked timer (no wall time). */
@Timeout(60) // a hang guard only; no test depends on wall time for its verdict
class GateQuotaTest {

    private static final long T0 = 5_000 * S;

    private static Gate gate(FakeClock clock, IsolationPolicy policy) {
        return Gate.create("GPU-q", clock.config().policy(policy).window(Duration.ofSeconds(10))
                .minSlice(Duration.ofMillis(1)).usageReportInterval(Duration.ZERO).build());
    }

    @Test
    void onlineTenantAtItsLimitWaitsExactlyUntilASliceFitsAgain() throws Exception {
        FakeClock clock = new FakeClock(T0);
        Gate gate = gate(clock, IsolationPolicy.ELASTIC);
        RecordingListener events = new RecordingListener();
        gate.addListener(events);
        Tenant chat = gate.register(GateTenantSpec.online("chat").limit(30).build());

        Lease a = gate.acquire(chat);
        clock.at(T0 + 2 * S);
        a.close();
        Lease b = gate.acquire(chat);          // 1 s of the 3 s limit left: granted at once
        clock.at(T0 + 3_500 * MS);             // runs 0.5 s past the limit: one slice
        b.close();
        assertEquals(3_500 * MS, gate.usage(chat).usageNanos());

        CompletableFuture<Lease> c = gate.acquireAsync(chat);
        assertFalse(c.isDone());
        // usage(t) = 3.5 s - (t - T0 - 10 s); a 1 ms slice fits when usage <= 2.999 s: t = T0 + 10.501 s
        long fits = T0 + 10_501 * MS;
        clock.at(fits - 1);
        assertFalse(c.isDone());
        clock.at(fits);
        assertTrue(c.isDone());
        GateEvent.QuotaExhausted q = events.of(GateEvent.QuotaExhausted.class).get(0);
        assertEquals(3_500 * MS, q.usageNanos());
        assertEquals(3 * S, q.limitNanos());
        assertEquals(fits, q.retryAtNanos());
        GateEvent.LeaseGranted g = events.of(GateEvent.LeaseGranted.class).get(2);
        assertEquals(fits - (T0 + 3_500 * MS), g.waitedNanos());
        c.join().close();
        assertEquals(2_999 * MS, gate.usage(chat).usageNanos());
        gate.close();
    }

    @Test
    void offlineTenantStopsAtTheCheckpointWhereItsLimitEndsAndResumesExactly() throws Exception {
        FakeClock clock = new FakeClock(T0);
        Gate gate = gate(clock, IsolationPolicy.ELASTIC);
        RecordingListener events = new RecordingListener();
        gate.addListener(events);
        Tenant train = gate.register(GateTenantSpec.offline("train").request(10).limit(20).build());

        Lease lease = gate.acquire(train);
        for (int i = 1; i < 20; i++) {                 // slices of 100 ms up to 1.9 s
            clock.at(T0 + i * 100 * MS);
            assertFalse(lease.shouldYield());
            lease.checkpoint();
        }
        clock.at(T0 + 2 * S - 1);
        assertFalse(lease.shouldYield());
        clock.at(T0 + 2 * S);                           // 2 s = 20% of 10 s
        assertTrue(lease.shouldYield());

        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread worker = new Thread(() -> {
            try {
                lease.checkpoint();
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "train-worker");
        worker.start();
        Await.blocked(worker);
        assertEquals(1, gate.usage(train).parkedLeases());
        // usage(t) = 2 s - (t - T0 - 10 s) once t > T0 + 10 s; 1 ms fits at T0 + 10.001 s
        clock.at(T0 + 10_001 * MS - 1);
        assertTrue(worker.isAlive());
        clock.at(T0 + 10_001 * MS);
        worker.join();
        assertNull(failure.get());
        GateEvent.Suspended s = events.of(GateEvent.Suspended.class).get(0);
        assertEquals(GateEvent.SuspendReason.QUOTA, s.reason());
        assertEquals(T0 + 2 * S, s.atNanos());
        GateEvent.Resumed r = events.of(GateEvent.Resumed.class).get(0);
        assertEquals(8_001 * MS, r.suspendedNanos());

        // running on in 1 ms slices: old usage leaves the window as fast as new usage comes, so it
        // may run until the whole first 2 s have left: T0 + 12.001 s
        for (long t = T0 + 10_002 * MS; t <= T0 + 12_000 * MS; t += MS) {
            clock.at(t);
            assertTrue(lease.checkpointAsync().isDone(), "runs on at " + (t - T0));
        }
        clock.at(T0 + 12_001 * MS);
        CompletableFuture<Lease> parked = lease.checkpointAsync();
        assertFalse(parked.isDone());
        assertEquals(1, gate.usage(train).parkedLeases());
        lease.close();
        assertTrue(parked.isCompletedExceptionally());
        assertEquals(0, gate.usage(train).openLeases());
        assertEquals(2 * S, gate.usage(train).usageNanos());
        assertEquals(4 * S, gate.usage(train).totalLeaseNanos());
        gate.close();
    }

    @Test
    void concurrentLeasesOfOneTenantCountOnce() throws Exception {
        FakeClock clock = new FakeClock(T0);
        Gate gate = gate(clock, IsolationPolicy.ELASTIC);
        Tenant chat = gate.register(GateTenantSpec.online("chat").limit(50).build());
        Lease a = gate.acquire(chat);
        clock.at(T0 + S);
        Lease b = gate.acquire(chat);
        clock.at(T0 + 2 * S);
        a.close();
        clock.at(T0 + 3 * S);
        b.close();
        clock.at(T0 + 4 * S);
        Lease c = gate.acquire(chat);
        clock.at(T0 + 4_500 * MS);
        c.close();
        TenantUsage u = gate.usage(chat);
        assertEquals(3_500 * MS, u.usageNanos());      // [0, 3) and [4, 4.5)
        assertEquals(0, u.openLeases());
        gate.close();
    }

    @Test
    void fixedShareLimitsToTheRequestEvenOnAnIdleGpu() throws Exception {
        FakeClock clock = new FakeClock(T0);
        Gate gate = gate(clock, IsolationPolicy.FIXED_SHARE);
        Tenant a = gate.register(GateTenantSpec.online("a").request(25).limit(100).build());
        Lease l = gate.acquire(a);
        clock.at(T0 + 2_500 * MS);
        l.close();
        assertTrue(gate.tryAcquire(a).isEmpty());
        assertEquals(2_500 * MS, gate.usage(a).limitNanos());
        InvalidValueException e = assertThrows(InvalidValueException.class,
                () -> gate.register(GateTenantSpec.online("b").build()));
        assertEquals("share.requestPercent", e.field());
        gate.close();
    }

    @Test
    void bestEffortAndBurstShareHaveNoLimitBelowTheWholeGpu() throws Exception {
        for (IsolationPolicy p : new IsolationPolicy[] {IsolationPolicy.BEST_EFFORT, IsolationPolicy.BURST_SHARE}) {
            FakeClock clock = new FakeClock(T0);
            Gate gate = gate(clock, p);
            Tenant train = gate.register(GateTenantSpec.offline("train").request(20).limit(30).build());
            Lease l = gate.acquire(train);
            for (int i = 1; i <= 300; i++) {          // 30 s of 100 ms slices: 3 windows
                clock.at(T0 + i * 100 * MS);
                assertFalse(l.shouldYield(), p + " at slice " + i);
                l.checkpoint();
            }
            assertEquals(10 * S, gate.usage(train).usageNanos());
            l.close();
            gate.close();
        }
    }

    @Test
    void twoOfflineTenantsShareTheTokenByTheirRequests() throws Exception {
        FakeClock clock = new FakeClock(T0);
        Gate gate = gate(clock, IsolationPolicy.BURST_SHARE);
        Tenant a = gate.register(GateTenantSpec.offline("a").request(70).build());
        Tenant b = gate.register(GateTenantSpec.offline("b").request(30).build());
        Tenant[] ts = {a, b};
        // deterministic driver: both always have work; each runs 10 ms slices and checkpoints
        // between them without blocking (checkpointAsync); a parked lease waits for its future
        Lease[] leases = new Lease[2];
        CompletableFuture<?>[] pending = new CompletableFuture<?>[2];
        for (int i = 0; i < 2; i++) {
            pending[i] = gate.acquireAsync(ts[i]);
        }
        long[] busy = new long[2];
        long end = T0 + 60 * S;
        for (long now = T0; now < end; ) {
            boolean[] runs = new boolean[2];
            for (int i = 0; i < 2; i++) {
                if (pending[i] != null && pending[i].isDone()) {
                    leases[i] = (Lease) pending[i].join();
                    pending[i] = null;
                }
                runs[i] = pending[i] == null;
            }
            assertFalse(runs[0] && runs[1], "both offline tenants run at once");
            now += 10 * MS;
            clock.at(now);
            for (int i = 0; i < 2; i++) {
                if (runs[i]) {
                    busy[i] += 10 * MS;
                    CompletableFuture<Lease> c = leases[i].checkpointAsync();
                    pending[i] = c.isDone() ? null : c;
                }
            }
        }
        double shareA = (double) busy[0] / (60 * S);
        double shareB = (double) busy[1] / (60 * S);
        assertEquals(1.0, shareA + shareB, 0.001, "the GPU never idles while both have work");
        assertEquals(0.70, shareA, 0.03);
        assertEquals(0.30, shareB, 0.03);
        gate.close();
    }
}
