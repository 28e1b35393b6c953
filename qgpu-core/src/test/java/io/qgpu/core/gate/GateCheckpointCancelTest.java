package io.qgpu.core.gate;

import static io.qgpu.core.gate.FakeClock.MS;
import static io.qgpu.core.gate.FakeClock.S;
import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An async checkpoint cancelled at the moment the gate resumes its lease (the cancel comes from a
 * listener of the {@link GateEvent.Resumed} event, which the gate publishes before it completes the
 * future): the lease is parked again, as the cancellation asked, and says why; and an async
 * checkpoint on a closed gate fails rather than waiting for ever. Manual clock, one thread.
 */
@Timeout(60) // a hang guard only; no test depends on wall time for its verdict
class GateCheckpointCancelTest {

    private static final long T0 = 3 * S;

    @Test
    void aCheckpointCancelledAsTheGateResumesItLeavesTheLeaseParked() {
        cancelledAsTheGateResumes(gate -> gate.tryAcquire(gate.tenants().get(1)).orElseThrow());
    }

    /** The same with a lease of an async acquire, which belongs to no thread. */
    @Test
    void aCheckpointOfAnAsyncLeaseCancelledAsTheGateResumesItLeavesTheLeaseParked() {
        cancelledAsTheGateResumes(gate -> gate.acquireAsync(gate.tenants().get(1)).join());
    }

    private static void cancelledAsTheGateResumes(Function<Gate, Lease> offlineLease) {
        FakeClock clock = new FakeClock(T0);
        try (Gate gate = Gate.create("GPU-c", clock.config().usageReportInterval(Duration.ZERO).build())) {
            Tenant chat = gate.register(GateTenantSpec.online("chat").build());
            Tenant train = gate.register(GateTenantSpec.offline("train").build());
            RecordingListener events = new RecordingListener();
            gate.addListener(events);
            AtomicReference<CompletableFuture<Lease>> toCancel = new AtomicReference<>();
            gate.addListener(e -> {
                if (e instanceof GateEvent.Resumed && toCancel.get() != null) {
                    toCancel.get().cancel(false);
                }
            });

            Lease off = offlineLease.apply(gate);
            assertSame(train, off.tenant());
            CompletableFuture<Lease> online = gate.acquireAsync(chat);
            CompletableFuture<Lease> parked = off.checkpointAsync();
            toCancel.set(parked);
            clock.at(T0 + 10 * MS);
            online.join().close();
            clock.at(T0 + 110 * MS);                        // the release delay ends: the gate resumes train
            assertTrue(parked.isCancelled());
            List<GateEvent.Suspended> s = events.of(GateEvent.Suspended.class);
            assertEquals(List.of(
                    new GateEvent.Suspended("GPU-c", "train", T0, GateEvent.SuspendReason.PREEMPTED),
                    new GateEvent.Suspended("GPU-c", "train", T0 + 110 * MS, GateEvent.SuspendReason.CHECKPOINT_CANCELLED)), s);
            TenantUsage u = gate.usage(train);
            assertEquals(0, u.runningLeases(), "parked again, not running");
            assertEquals(1, u.parkedLeases());
            assertEquals(1, u.openLeases());
            assertEquals(1, gate.openLeases());

            toCancel.set(null);
            clock.at(T0 + 200 * MS);
            assertEquals(0, gate.usage(train).usageNanos(), "no time counted while parked");
            CompletableFuture<Lease> again = off.checkpointAsync();
            assertTrue(again.isDone(), "the GPU is free: asking again resumes at once");
            assertEquals(1, gate.usage(train).runningLeases());
            clock.at(T0 + 250 * MS);
            off.close();
            assertEquals(50 * MS, gate.usage(train).usageNanos());
        }
    }

    @Test
    void anAsyncCheckpointOnAClosedGateFails() {
        FakeClock clock = new FakeClock(T0);
        Gate gate = Gate.create("GPU-c", clock.config().usageReportInterval(Duration.ZERO).build());
        Tenant train = gate.register(GateTenantSpec.offline("train").build());
        Lease off = gate.tryAcquire(train).orElseThrow();
        gate.close();
        GateClosedException e = assertThrows(GateClosedException.class, off::checkpointAsync);
        assertEquals("gate GPU-c is closed", e.getMessage());
        assertThrows(GateClosedException.class, off::checkpoint);
    }
}
