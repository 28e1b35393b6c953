package io.qgpu.core.gate;

import static io.qgpu.core.gate.FakeClock.MS;
import static io.qgpu.core.gate.FakeClock.S;
import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.core.preempt.GpuMode;
import io.qgpu.core.preempt.TenantPhase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Online/offline preemption through the gate, on a manual ticker. */
@Timeout(60) // a hang guard only; no test depends on wall time for its verdict
class GatePreemptionTest {

    private static final long T0 = 77 * S;
    private FakeClock clock;
    private Gate gate;
    private RecordingListener events;
    private Tenant chat;
    private Tenant train;

    @BeforeEach
    void setUp() {
        clock = new FakeClock(T0);
        gate = Gate.create("GPU-p", clock.config().usageReportInterval(Duration.ZERO).build());
        events = new RecordingListener();
        gate.addListener(events);
        chat = gate.register(GateTenantSpec.online("chat").build());
        train = gate.register(GateTenantSpec.offline("train").build());
    }

    @Test
    void onlineWaitsForTheOfflineSliceInProgressAndNoLonger() {
        Lease off = gate.tryAcquire(train).orElseThrow();
        assertNotNull(off);
        clock.at(T0 + 10 * MS);
        CompletableFuture<Lease> on = gate.acquireAsync(chat);
        assertFalse(on.isDone());
        assertEquals(GpuMode.PREEMPTING, gate.mode());
        assertTrue(off.shouldYield(), "the offline side sees the suspension at its next checkpoint");
        clock.at(T0 + 10 * MS + 300_000);               // the slice ends 0.3 ms later
        CompletableFuture<Lease> parked = off.checkpointAsync();
        assertFalse(parked.isDone());
        assertTrue(on.isDone(), "online runs as soon as the slice ended");
        assertEquals(GpuMode.ONLINE, gate.mode());
        GateEvent.LeaseGranted g = last(GateEvent.LeaseGranted.class);
        assertEquals("chat", g.tenant());
        assertEquals(300_000, g.waitedNanos());
        GateEvent.Suspended s = last(GateEvent.Suspended.class);
        assertEquals(GateEvent.SuspendReason.PREEMPTED, s.reason());
        assertEquals(T0 + 10 * MS + 300_000, s.atNanos());
        assertEquals(TenantPhase.SUSPENDED, gate.preemptionState().phase("train").orElseThrow());

        clock.at(T0 + 15 * MS);
        on.join().close();                              // online idle: release delay starts
        assertEquals(GpuMode.RELEASING, gate.mode());
        clock.at(T0 + 115 * MS - 1);
        assertFalse(parked.isDone());
        clock.at(T0 + 115 * MS);                        // 100 ms later offline resumes
        assertTrue(parked.isDone());
        assertEquals(GpuMode.OFFLINE, gate.mode());
        GateEvent.Resumed r = last(GateEvent.Resumed.class);
        assertEquals(115 * MS - (10 * MS + 300_000), r.suspendedNanos());
        off.close();
        assertEquals(0, gate.openLeases());
        assertEquals(10 * MS + 300_000, gate.usage(train).usageNanos());
        assertEquals(5 * MS - 300_000, gate.usage(chat).usageNanos());
        assertEquals(List.of(), gate.preemptionState().invariantViolations());
    }

    @Test
    void onlineRunsAtOnceWhenNoOfflineLeaseRunsAndOfflineWaitsForTheReleaseDelay() {
        Lease on = gate.tryAcquire(chat).orElseThrow();
        assertNotNull(on);
        assertEquals(GpuMode.ONLINE, gate.mode());
        CompletableFuture<Lease> off = gate.acquireAsync(train);
        clock.at(T0 + 2 * MS);
        on.close();
        clock.at(T0 + 102 * MS - 1);
        assertFalse(off.isDone());
        clock.at(T0 + 102 * MS);
        assertTrue(off.isDone());
        // while offline runs, tryAcquire does not preempt it; a blocking/async acquire does
        assertTrue(gate.tryAcquire(chat).isEmpty());
        assertEquals(GpuMode.OFFLINE, gate.mode());
        CompletableFuture<Lease> again = gate.acquireAsync(chat);
        assertEquals(GpuMode.PREEMPTING, gate.mode());
        off.join().close();
        assertEquals(GpuMode.ONLINE, gate.mode());
        assertTrue(again.isDone());
        again.join().close();
        assertEquals(0, gate.openLeases());
    }

    @Test
    void anIdleOfflineTokenHolderDoesNotDelayOnline() {
        Lease off = gate.tryAcquire(train).orElseThrow();
        clock.at(T0 + 5 * MS);
        off.close();                                    // idle, still recorded as running (lazily)
        clock.at(T0 + 50 * MS);
        Lease on = gate.tryAcquire(chat).orElseThrow();
        assertNotNull(on, "no offline lease runs: online needs no preemption");
        assertEquals(GpuMode.ONLINE, gate.mode());
        assertTrue(events.of(GateEvent.ForcedSuspension.class).isEmpty());
        on.close();
        assertEquals(5 * MS, gate.usage(train).usageNanos(), "the idle time was not charged");
    }

    @Test
    void anOfflineSliceLongerThanThePreemptionBoundIsOverrunByForce() {
        Lease off = gate.tryAcquire(train).orElseThrow();
        clock.at(T0 + MS);
        CompletableFuture<Lease> on = gate.acquireAsync(chat);
        clock.at(T0 + 2 * MS - 1);
        assertFalse(on.isDone());
        clock.at(T0 + 2 * MS);                          // bound: 1 ms
        assertTrue(on.isDone());
        GateEvent.ForcedSuspension f = last(GateEvent.ForcedSuspension.class);
        assertEquals("train", f.tenant());
        assertEquals(T0 + 2 * MS, f.atNanos());
        assertEquals(MS, last(GateEvent.LeaseGranted.class).waitedNanos());
        clock.at(T0 + 3 * MS);
        CompletableFuture<Lease> parked = off.checkpointAsync();  // the overrunning slice ends
        assertFalse(parked.isDone());
        on.join().close();
        clock.at(T0 + 103 * MS);
        assertTrue(parked.isDone());
        off.close();
        assertEquals(3 * MS, gate.usage(train).usageNanos());
        assertEquals(List.of(), gate.preemptionState().invariantViolations());
    }

    @Test
    void aLateTimerThreadFiresTheDeadlineBeforeTheNextEvent() {
        // regression: the offline slice ended after the preemption deadline, before the timer ran
        Lease off = gate.tryAcquire(train).orElseThrow();
        CompletableFuture<Lease> on = gate.acquireAsync(chat);
        clock.jump(T0 + 3 * MS);
        CompletableFuture<Lease> parked = off.checkpointAsync();
        assertFalse(parked.isDone());
        assertTrue(on.isDone());
        GateEvent.ForcedSuspension f = last(GateEvent.ForcedSuspension.class);
        assertEquals(T0 + MS, f.atNanos(), "the deadline fired at its own time");
        assertEquals(TenantPhase.SUSPENDED, gate.preemptionState().phase("train").orElseThrow());
        clock.at(T0 + 4 * MS);
        on.join().close();
        clock.jump(T0 + 200 * MS);                      // the release timer is late too
        Lease on2 = gate.tryAcquire(chat).orElseThrow();              // the next event fires it first
        assertNotNull(on2);
        on2.close();
        clock.at(T0 + 300 * MS);
        assertTrue(parked.isDone());
        off.close();
        assertEquals(0, gate.openLeases());
        assertEquals(List.of(), gate.preemptionState().invariantViolations());
    }

    @Test
    void severalOnlineTenantsRunTogetherAndOfflineResumesAfterTheLast() {
        Tenant search = gate.register(GateTenantSpec.online("search").build());
        Lease off = gate.tryAcquire(train).orElseThrow();
        CompletableFuture<Lease> a = gate.acquireAsync(chat);
        CompletableFuture<Lease> b = gate.acquireAsync(search);
        clock.at(T0 + 100_000);
        CompletableFuture<Lease> parked = off.checkpointAsync();
        assertTrue(a.isDone() && b.isDone());
        clock.at(T0 + MS);
        a.join().close();
        clock.at(T0 + 50 * MS);
        b.join().close();
        clock.at(T0 + 150 * MS - 1);
        assertFalse(parked.isDone());
        clock.at(T0 + 150 * MS);
        assertTrue(parked.isDone());
        off.close();
        List<GpuMode> modes = events.of(GateEvent.ModeChanged.class).stream().map(GateEvent.ModeChanged::to).toList();
        assertEquals(List.of(GpuMode.PREEMPTING, GpuMode.ONLINE, GpuMode.RELEASING, GpuMode.OFFLINE), modes);
    }

    @Test
    void blockingCheckpointHoldsTheOfflineThreadUntilResumed() throws Exception {
        Lease off = gate.tryAcquire(train).orElseThrow();
        CompletableFuture<Lease> on = gate.acquireAsync(chat);
        assertFalse(on.isDone());
        Thread worker = new Thread(() -> {
            try {
                off.checkpoint();
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }, "offline");
        worker.start();
        Await.until("online granted", on::isDone);
        Await.blocked(worker);
        assertEquals(GpuMode.ONLINE, gate.mode());
        clock.at(T0 + 3 * MS);
        on.join().close();
        clock.at(T0 + 103 * MS - 1);
        assertTrue(worker.isAlive());
        clock.at(T0 + 103 * MS);
        worker.join();
        assertFalse(off.shouldYield());
        off.close();
        assertEquals(0, gate.openLeases());
    }

    private <T extends GateEvent> T last(Class<T> type) {
        List<T> l = events.of(type);
        assertFalse(l.isEmpty(), "no " + type.getSimpleName());
        return l.get(l.size() - 1);
    }
}
