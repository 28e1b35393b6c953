package io.qgpu.core.gate;

import static io.qgpu.core.gate.FakeClock.MS;
import static io.qgpu.core.gate.FakeClock.S;
import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.core.preempt.TenantPhase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An offline slice that reaches its checkpoint exactly at the preemption deadline (default bound
 * 1 ms): the deadline wins the tie, and the verdict (events and their times) is the same whether the timer thread is punctual
 * or late (the next event then fires the deadline first, at its own time). Manual clock.
 */
@Timeout(60) // a hang guard only; no test depends on wall time for its verdict
class GateDeadlineTieTest {

    private static final long T0 = 9 * S;

    private static List<GateEvent> sliceEndsAtTheDeadline(boolean lateTimer) {
        FakeClock clock = new FakeClock(T0);
        try (Gate gate = Gate.create("GPU-d", clock.config().usageReportInterval(Duration.ZERO).build())) {
            Tenant chat = gate.register(GateTenantSpec.online("chat").build());
            Tenant train = gate.register(GateTenantSpec.offline("train").build());
            RecordingListener events = new RecordingListener();
            gate.addListener(events);
            Lease off = gate.tryAcquire(train).orElseThrow();
            CompletableFuture<Lease> on = gate.acquireAsync(chat);
            if (lateTimer) {
                clock.jump(T0 + MS);
            } else {
                clock.at(T0 + MS);
            }
            CompletableFuture<Lease> parked = off.checkpointAsync();
            assertTrue(on.isDone());
            assertFalse(parked.isDone());
            assertEquals(TenantPhase.SUSPENDED, gate.preemptionState().phase("train").orElseThrow());
            on.join().close();
            off.close();
            return events.all();
        }
    }

    private static List<String> sorted(List<GateEvent> events) {
        return events.stream().map(GateEvent::toString).sorted().toList();
    }

    @Test
    void theDeadlineWinsATieWithTheSlicesEndPunctualTimerOrLate() {
        List<GateEvent> punctual = sliceEndsAtTheDeadline(false);
        List<GateEvent> late = sliceEndsAtTheDeadline(true);
        assertEquals(List.of(new GateEvent.ForcedSuspension("GPU-d", "train", T0 + MS)),
                punctual.stream().filter(GateEvent.ForcedSuspension.class::isInstance).toList());
        // the same events at the same times; only the late case publishes the lease's park (which
        // the checkpoint records before it brings the engines up to date) ahead of the forced suspension
        assertEquals(sorted(punctual), sorted(late));
    }
}
