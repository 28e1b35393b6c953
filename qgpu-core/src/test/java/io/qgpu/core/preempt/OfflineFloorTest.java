package io.qgpu.core.preempt;

import static io.qgpu.api.PriorityClass.OFFLINE;
import static io.qgpu.api.PriorityClass.ONLINE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.core.preempt.PreemptionEvent.Deregister;
import io.qgpu.core.preempt.PreemptionEvent.Idle;
import io.qgpu.core.preempt.PreemptionEvent.Register;
import io.qgpu.core.preempt.PreemptionEvent.Start;
import io.qgpu.core.preempt.PreemptionEvent.Submit;
import io.qgpu.core.preempt.PreemptionEvent.Suspended;
import io.qgpu.core.preempt.PreemptionEvent.Usage;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/**
 * The offline floor in the pure machine: in RELEASING the release is due at the earlier of the
 * release rule's hold and the time a held (SUSPENDED) offline tenant is below its request
 * ({@link Usage}); tenants never reported, and every tenant with the floor off, wait for the hold.
 */
class OfflineFloorTest {

    private static final long MS = 1_000_000L;
    private static final long NEVER = Long.MAX_VALUE;

    private static Transition step(PreemptionMachine m, PreemptionState s, PreemptionEvent e) {
        Transition t = m.next(s, e);
        assertEquals(List.of(), t.state().invariantViolations(), "after " + e);
        return t;
    }

    private static PreemptionMachine machine(boolean floor) {
        return PreemptionMachine.standard(PreemptionConfig.custom().offlineFloor(floor).build());   // fixed 100 ms
    }

    /** train ran and was preempted by infer at 10 ms; infer runs; train reported below its request from {@code belowFrom}. */
    private static PreemptionState onlineRunningTrainHeld(PreemptionMachine m, long belowFrom) {
        PreemptionState s = m.initial(0);
        s = step(m, s, new Register(0, "infer", ONLINE)).state();
        s = step(m, s, new Register(0, "train", OFFLINE)).state();
        s = step(m, s, new Submit(0, "train")).state();
        s = step(m, s, new Start(0, "train")).state();
        s = step(m, s, new Submit(10 * MS, "infer")).state();
        s = step(m, s, new Suspended(10 * MS, "train")).state();
        if (belowFrom != NEVER) {
            s = step(m, s, new Usage(10 * MS, "train", belowFrom)).state();
        }
        assertEquals(GpuMode.ONLINE, s.mode());
        return s;
    }

    @Test
    void belowItsRequestOnlineGoingIdleResumesOfflineWorkAtOnce() {
        PreemptionMachine m = machine(true);
        Transition t = step(m, onlineRunningTrainHeld(m, 0), new Idle(11 * MS, "infer"));
        assertEquals(GpuMode.OFFLINE, t.state().mode());
        assertEquals(List.of(new Action.ModeChanged(GpuMode.ONLINE, GpuMode.RELEASING, 11 * MS),
                new Action.ModeChanged(GpuMode.RELEASING, GpuMode.OFFLINE, 11 * MS),
                new Action.Resume("train", 11 * MS)), t.actions());
    }

    @Test
    void withTheFloorOffOrNoUsageReportedTheHoldApplies() {
        PreemptionMachine off = machine(false);
        assertEquals(OptionalLong.of(111 * MS),
                step(off, onlineRunningTrainHeld(off, 0), new Idle(11 * MS, "infer")).state().nextTimer());
        PreemptionMachine on = machine(true);
        assertEquals(OptionalLong.of(111 * MS),
                step(on, onlineRunningTrainHeld(on, NEVER), new Idle(11 * MS, "infer")).state().nextTimer());
        assertEquals(OptionalLong.of(NEVER), onlineRunningTrainHeld(on, NEVER).belowRequestFrom("train"));
    }

    @Test
    void aTenantThatFallsBelowDuringTheHoldIsReleasedThen() {
        PreemptionMachine m = machine(true);
        PreemptionState s = step(m, onlineRunningTrainHeld(m, 40 * MS), new Idle(11 * MS, "infer")).state();
        assertEquals(GpuMode.RELEASING, s.mode());
        assertEquals(OptionalLong.of(40 * MS), s.nextTimer());
        Transition t = step(m, s, new PreemptionEvent.Tick(40 * MS));
        assertEquals(GpuMode.OFFLINE, t.state().mode());
        assertTrue(t.actions().contains(new Action.Resume("train", 40 * MS)));
    }

    @Test
    void aReportDuringTheHoldMovesTheReleaseAndLeavingMovesItBack() {
        PreemptionMachine m = machine(true);
        PreemptionState s = step(m, onlineRunningTrainHeld(m, NEVER), new Idle(11 * MS, "infer")).state();
        s = step(m, s, new Register(12 * MS, "eval", OFFLINE)).state();
        s = step(m, s, new Submit(12 * MS, "eval")).state();                  // eval held, never reported
        assertEquals(OptionalLong.of(111 * MS), s.nextTimer());
        s = step(m, s, new Usage(13 * MS, "train", 50 * MS)).state();
        assertEquals(OptionalLong.of(50 * MS), s.nextTimer());
        s = step(m, s, new Deregister(14 * MS, "train")).state();             // the tenant below leaves
        assertEquals(OptionalLong.of(111 * MS), s.nextTimer());
        Transition t = step(m, s, new Usage(15 * MS, "eval", 15 * MS));     // eval is below now: released at once
        assertEquals(GpuMode.OFFLINE, t.state().mode());
        assertTrue(t.actions().contains(new Action.Resume("eval", 15 * MS)));
    }

    @Test
    void onlyHeldTenantsCountAndOfflineWorkArrivingBelowItsRequestIsReleasedAtOnce() {
        PreemptionMachine m = machine(true);
        PreemptionState s = m.initial(0);
        s = step(m, s, new Register(0, "infer", ONLINE)).state();
        s = step(m, s, new Register(0, "train", OFFLINE)).state();
        s = step(m, s, new Usage(0, "train", 0)).state();                     // below, but no work
        s = step(m, s, new Submit(1 * MS, "infer")).state();
        s = step(m, s, new Idle(2 * MS, "infer")).state();
        assertEquals(GpuMode.RELEASING, s.mode(), "an idle offline tenant below its request waits for nothing");
        assertEquals(OptionalLong.of(102 * MS), s.nextTimer());
        Transition t = step(m, s, new Submit(3 * MS, "train"));
        assertEquals(GpuMode.OFFLINE, t.state().mode());
        assertTrue(t.actions().contains(new Action.Resume("train", 3 * MS)));
    }

    @Test
    void usageIsForOfflineTenants() {
        PreemptionMachine m = machine(true);
        PreemptionState s = step(m, m.initial(0), new Register(0, "infer", ONLINE)).state();
        PreemptionState before = s;
        assertThrows(IllegalTransitionException.class, () -> m.next(before, new Usage(0, "infer", 0)));
        assertThrows(IllegalTransitionException.class, () -> m.next(before, new Usage(0, "nobody", 0)));
    }
}
