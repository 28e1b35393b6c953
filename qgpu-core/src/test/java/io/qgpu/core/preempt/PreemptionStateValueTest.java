package io.qgpu.core.preempt;

import static io.qgpu.api.PriorityClass.OFFLINE;
import static io.qgpu.api.PriorityClass.ONLINE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.PriorityClass;
import io.qgpu.core.preempt.PreemptionEvent.Deregister;
import io.qgpu.core.preempt.PreemptionEvent.Register;
import io.qgpu.core.preempt.PreemptionEvent.Start;
import io.qgpu.core.preempt.PreemptionEvent.Submit;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The state as a value (equality, text), membership changes in the middle, and what the invariant check reports. */
class PreemptionStateValueTest {

    private final PreemptionMachine m = PreemptionMachine.standard(PreemptionConfig.ofDefaults());

    private PreemptionState run(PreemptionEvent... events) {
        PreemptionState s = m.initial(0);
        for (PreemptionEvent e : events) {
            s = m.next(s, e).state();
        }
        return s;
    }

    @Test
    void statesReachedByTheSameEventsAreEqualAndOthersAreNot() {
        PreemptionState a = run(new Register(0, "x", OFFLINE), new Submit(1, "x"));
        PreemptionState b = run(new Register(0, "x", OFFLINE), new Submit(1, "x"));
        assertEquals(a, b);
        assertEquals(a.hashCode(), b.hashCode());
        assertEquals(a, a);
        assertNotEquals(a, run(new Register(0, "x", OFFLINE)));
        assertNotEquals(a, run(new Register(0, "x", ONLINE), new Submit(1, "x")));
        assertNotEquals(a, "a string");
        assertNotEquals(a, null);
    }

    @Test
    void toStringShowsModeTimeVersionTimerAndEveryTenant() {
        PreemptionState s = run(new Register(0, "x", OFFLINE), new Register(0, "y", ONLINE), new Submit(0, "x"),
                new Start(0, "x"), new Submit(10, "y"));
        assertEquals("PreemptionState[PREEMPTING at=10 v=5 timer=1000010 x(off)=SUSPENDING y(on)=WAITING]", s.toString());
        assertEquals("PreemptionState[OFFLINE at=0 v=1 x(off)=IDLE]", run(new Register(0, "x", OFFLINE)).toString());
    }

    @Test
    void deregisteringATenantInTheMiddleKeepsTheOthersAndTheirPhases() {
        PreemptionState s = run(new Register(0, "a", OFFLINE), new Register(0, "b", OFFLINE), new Register(0, "c", ONLINE),
                new Register(0, "d", OFFLINE), new Submit(1, "d"), new Deregister(2, "b"));
        assertEquals(Optional.empty(), s.phase("b"));
        assertEquals(Optional.of(TenantPhase.IDLE), s.phase("a"));
        assertEquals(Optional.of(TenantPhase.READY), s.phase("d"));
        assertEquals(Optional.of(PriorityClass.ONLINE), s.priority("c"));
        assertEquals(List.of(), s.invariantViolations());
        // the same transition again on the result: lookups by id still find the moved tenants
        PreemptionState t = m.next(s, new Deregister(3, "c")).state();
        assertEquals(Optional.of(TenantPhase.READY), t.phase("d"));
        assertEquals(Optional.of(PriorityClass.OFFLINE), t.priority("a"));
        PreemptionState u = m.next(t, new Register(4, "b", ONLINE)).state();
        assertEquals(Optional.of(PriorityClass.ONLINE), u.priority("b"));
        assertEquals(Optional.of(TenantPhase.READY), u.phase("d"));
    }

    private static PreemptionState state(GpuMode mode, long timer, String[] ids, PriorityClass[] classes, TenantPhase[] phases) {
        return new PreemptionState(mode, ids, classes, phases, new long[ids.length], new long[ids.length], PreemptionState.indexOf(ids),
                timer, 0, 0, IdleGaps.empty(0), 0, 1);
    }

    @Test
    void theInvariantCheckCountsOnlineWorkAndSuspendingTenants() {
        String[] ids = {"on1", "on2", "off"};
        PriorityClass[] classes = {ONLINE, ONLINE, OFFLINE};
        assertTrue(state(GpuMode.OFFLINE, PreemptionState.NO_TIMER, ids, classes,
                new TenantPhase[] {TenantPhase.RUNNING, TenantPhase.IDLE, TenantPhase.IDLE})
                .invariantViolations().contains("online work in mode OFFLINE"));
        assertTrue(state(GpuMode.RELEASING, 5, ids, classes,
                new TenantPhase[] {TenantPhase.IDLE, TenantPhase.WAITING, TenantPhase.SUSPENDED})
                .invariantViolations().contains("online work in mode RELEASING"));
        assertEquals(List.of(), state(GpuMode.PREEMPTING, 5, ids, classes,
                new TenantPhase[] {TenantPhase.IDLE, TenantPhase.WAITING, TenantPhase.SUSPENDING}).invariantViolations());
        assertTrue(state(GpuMode.PREEMPTING, 5, ids, classes,
                new TenantPhase[] {TenantPhase.IDLE, TenantPhase.WAITING, TenantPhase.SUSPENDED})
                .invariantViolations().contains("PREEMPTING with nobody SUSPENDING"));
        assertEquals(Map.of("a", 0, "b", 1), PreemptionState.indexOf(new String[] {"a", "b"}));
    }

    @Test
    void aControllerReturnsEachTransitionAndNamesItsMachine() {
        AtomicLong now = new AtomicLong(7);
        PreemptionController c = new PreemptionController(m, now::get);
        assertSame(m, c.machine());
        Transition r = c.register("x", OFFLINE);
        assertEquals(Optional.of(TenantPhase.IDLE), r.state().phase("x"));
        assertSame(r.state(), c.state());
        Transition d = c.deregister("x");
        assertEquals(Optional.empty(), d.state().phase("x"));
        assertSame(d.state(), c.state());
    }

    @Test
    void aTickNamesNoTenantAndItsIllegalUseSaysSo() {
        assertNull(new PreemptionEvent.Tick(3).tenant());
        IllegalTransitionException e = new IllegalTransitionException(GpuMode.ONLINE, null, new PreemptionEvent.Tick(3), "rule");
        assertEquals("Tick at 3 is illegal in mode ONLINE: rule", e.getMessage());
        IllegalTransitionException f = new IllegalTransitionException(GpuMode.ONLINE, "IDLE", new Submit(4, "x"), "rule");
        assertEquals("Submit(x) at 4 is illegal in mode ONLINE with tenant phase IDLE: rule", f.getMessage());
    }
}
