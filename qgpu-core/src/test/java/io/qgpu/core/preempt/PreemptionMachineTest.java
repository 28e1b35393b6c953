package io.qgpu.core.preempt;

import static io.qgpu.api.PriorityClass.OFFLINE;
import static io.qgpu.api.PriorityClass.ONLINE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.InvalidValueException;
import io.qgpu.core.preempt.Action.ForceSuspended;
import io.qgpu.core.preempt.Action.ModeChanged;
import io.qgpu.core.preempt.Action.Resume;
import io.qgpu.core.preempt.Action.RunOnline;
import io.qgpu.core.preempt.Action.Suspend;
import io.qgpu.core.preempt.PreemptionEvent.Deregister;
import io.qgpu.core.preempt.PreemptionEvent.Idle;
import io.qgpu.core.preempt.PreemptionEvent.Register;
import io.qgpu.core.preempt.PreemptionEvent.Start;
import io.qgpu.core.preempt.PreemptionEvent.Stop;
import io.qgpu.core.preempt.PreemptionEvent.Submit;
import io.qgpu.core.preempt.PreemptionEvent.Suspended;
import io.qgpu.core.preempt.PreemptionEvent.Tick;
import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

class PreemptionMachineTest {

    static final long MS = 1_000_000L;
    static final long US = 1_000L;

    private final PreemptionMachine m = PreemptionMachine.standard(PreemptionConfig.ofDefaults());
    private PreemptionState s = m.initial(0);

    private Transition on(PreemptionEvent e) {
        Transition t = m.next(s, e);
        assertEquals(List.of(), t.state().invariantViolations(), "after " + e);
        s = t.state();
        return t;
    }

    /** infer (online), train and prep (offline), train RUNNING at time 0. */
    private void trainRunning() {
        on(new Register(0, "infer", ONLINE));
        on(new Register(0, "train", OFFLINE));
        on(new Register(0, "prep", OFFLINE));
        on(new Submit(0, "train"));
        on(new Start(0, "train"));
        assertEquals(TenantPhase.RUNNING, s.phase("train").orElseThrow());
    }

    @Test
    void onlineSubmitSuspendsRunningOfflineAndRunsWhenConfirmed() {
        trainRunning();
        on(new Submit(0, "prep"));
        Transition t = on(new Submit(10 * US, "infer"));
        assertEquals(List.of(new ModeChanged(GpuMode.OFFLINE, GpuMode.PREEMPTING, 10 * US), new Suspend("train", 10 * US)),
                t.actions());
        assertEquals(TenantPhase.WAITING, s.phase("infer").orElseThrow());
        assertEquals(TenantPhase.SUSPENDING, s.phase("train").orElseThrow());
        assertEquals(TenantPhase.SUSPENDED, s.phase("prep").orElseThrow(), "READY offline is held without a Suspend");
        assertEquals(OptionalLong.of(10 * US + MS), s.nextTimer());
        assertEquals(10 * US, s.preemptionStartedAt());

        t = on(new Suspended(50 * US, "train"));
        assertEquals(List.of(new ModeChanged(GpuMode.PREEMPTING, GpuMode.ONLINE, 50 * US),
                new RunOnline("infer", 50 * US, 40 * US)), t.actions());
        assertEquals(GpuMode.ONLINE, s.mode());
        assertEquals(OptionalLong.empty(), s.nextTimer());
        assertEquals(List.of("train", "prep"), s.tenantsIn(TenantPhase.SUSPENDED));
    }

    @Test
    void onlineRunsAtOnceWhenNoOfflineTenantRuns() {
        on(new Register(0, "infer", ONLINE));
        on(new Register(0, "train", OFFLINE));
        on(new Submit(0, "train"));                      // READY, the policy has not picked it
        Transition t = on(new Submit(5, "infer"));
        assertEquals(List.of(new ModeChanged(GpuMode.OFFLINE, GpuMode.ONLINE, 5), new RunOnline("infer", 5, 0)),
                t.actions());
        assertEquals(TenantPhase.SUSPENDED, s.phase("train").orElseThrow());
    }

    @Test
    void theDeadlineForcesSuspensionAtItsDueTime() {
        trainRunning();
        on(new Submit(0, "infer"));
        assertEquals(List.of(), on(new Tick(MS - 1)).actions());
        Transition t = on(new Tick(MS));
        assertEquals(List.of(new ForceSuspended("train", MS), new ModeChanged(GpuMode.PREEMPTING, GpuMode.ONLINE, MS),
                new RunOnline("infer", MS, MS)), t.actions());
    }

    @Test
    void aLateEventFiresTheOverdueTimerFirstAtItsDueTime() {
        trainRunning();
        on(new Submit(0, "infer"));
        Transition t = on(new Submit(7 * MS, "prep"));    // nobody ticked at 1 ms
        assertEquals(List.of(new ForceSuspended("train", MS), new ModeChanged(GpuMode.PREEMPTING, GpuMode.ONLINE, MS),
                new RunOnline("infer", MS, MS)), t.actions());
        assertEquals(TenantPhase.SUSPENDED, s.phase("prep").orElseThrow());
    }

    @Test
    void offlineResumesWhenOnlineHasBeenIdleForTheReleaseDelay() {
        trainRunning();
        on(new Submit(0, "infer"));
        on(new Suspended(20 * US, "train"));
        Transition t = on(new Idle(30 * MS, "infer"));
        assertEquals(List.of(new ModeChanged(GpuMode.ONLINE, GpuMode.RELEASING, 30 * MS)), t.actions());
        assertEquals(OptionalLong.of(130 * MS), s.nextTimer());
        assertEquals(List.of(), on(new Tick(130 * MS - 1)).actions());
        t = on(new Tick(130 * MS));
        assertEquals(List.of(new ModeChanged(GpuMode.RELEASING, GpuMode.OFFLINE, 130 * MS), new Resume("train", 130 * MS)),
                t.actions());
        assertEquals(TenantPhase.READY, s.phase("train").orElseThrow(), "the policy picks who runs next");
    }

    @Test
    void onlineWorkDuringTheReleaseDelayKeepsTheGpu() {
        trainRunning();
        on(new Submit(0, "infer"));
        on(new Suspended(20 * US, "train"));
        on(new Idle(30 * MS, "infer"));
        Transition t = on(new Submit(90 * MS, "infer"));
        assertEquals(List.of(new ModeChanged(GpuMode.RELEASING, GpuMode.ONLINE, 90 * MS), new RunOnline("infer", 90 * MS, 0)),
                t.actions());
        assertEquals(OptionalLong.empty(), s.nextTimer());
        on(new Idle(95 * MS, "infer"));
        assertEquals(OptionalLong.of(195 * MS), s.nextTimer(), "the delay restarts from the last idle");
    }

    @Test
    void onlineTenantsCompeteFreely() {
        on(new Register(0, "a", ONLINE));
        on(new Register(0, "b", ONLINE));
        on(new Submit(1, "a"));
        assertEquals(List.of(new RunOnline("b", 2, 0)), on(new Submit(2, "b")).actions());
        assertEquals(List.of(), on(new Idle(3, "a")).actions());
        assertEquals(GpuMode.ONLINE, s.mode());
        on(new Idle(4, "b"));
        assertEquals(GpuMode.RELEASING, s.mode());
    }

    @Test
    void stopOrIdleWhileSuspendingCountsAsConfirmation() {
        trainRunning();
        on(new Submit(0, "prep"));
        on(new Start(0, "prep"));                         // two running offline tenants (a policy may allow it)
        on(new Submit(1, "infer"));
        assertEquals(List.of("train", "prep"), s.tenantsIn(TenantPhase.SUSPENDING));
        assertEquals(List.of(), on(new Stop(2, "train")).actions());
        assertEquals(TenantPhase.SUSPENDED, s.phase("train").orElseThrow());
        Transition t = on(new Idle(3, "prep"));
        assertEquals(List.of(new ModeChanged(GpuMode.PREEMPTING, GpuMode.ONLINE, 3), new RunOnline("infer", 3, 2)),
                t.actions());
        assertEquals(TenantPhase.IDLE, s.phase("prep").orElseThrow());
    }

    @Test
    void ifTheOnlineWorkVanishesDuringPreemptionTheReleaseDelayCountsFromThen() {
        trainRunning();
        on(new Submit(0, "infer"));
        on(new Idle(100 * US, "infer"));
        assertEquals(GpuMode.PREEMPTING, s.mode());
        Transition t = on(new Suspended(300 * US, "train"));
        assertEquals(List.of(new ModeChanged(GpuMode.PREEMPTING, GpuMode.RELEASING, 300 * US)), t.actions());
        assertEquals(OptionalLong.of(100 * US + 100 * MS), s.nextTimer());
    }

    @Test
    void offlineWorkArrivingWhileOnlineRunsIsHeldAndResumedLater() {
        on(new Register(0, "infer", ONLINE));
        on(new Register(0, "train", OFFLINE));
        on(new Submit(0, "infer"));
        on(new Submit(1, "train"));
        assertEquals(TenantPhase.SUSPENDED, s.phase("train").orElseThrow());
        on(new Idle(2, "infer"));
        assertEquals(List.of(new ModeChanged(GpuMode.RELEASING, GpuMode.OFFLINE, 2 + 100 * MS), new Resume("train", 2 + 100 * MS)),
                on(new Tick(200 * MS)).actions());
    }

    @Test
    void deregisterResolvesWhateverTheTenantWasPartOf() {
        trainRunning();
        on(new Submit(0, "infer"));
        Transition t = on(new Deregister(5, "train"));     // the suspending tenant died
        assertEquals(List.of(new ModeChanged(GpuMode.PREEMPTING, GpuMode.ONLINE, 5), new RunOnline("infer", 5, 5)),
                t.actions());
        assertEquals(List.of("infer", "prep"), s.tenants());
        t = on(new Deregister(6, "infer"));
        assertEquals(List.of(new ModeChanged(GpuMode.ONLINE, GpuMode.RELEASING, 6)), t.actions());
        on(new Register(7, "infer", ONLINE));
        assertEquals(TenantPhase.IDLE, s.phase("infer").orElseThrow());
        assertEquals(ONLINE, s.priority("infer").orElseThrow());
    }

    @Test
    void zeroReleaseDelayReleasesInTheSameTransition() {
        PreemptionMachine eager = PreemptionMachine.standard(PreemptionConfig.custom().releaseDelay(Duration.ZERO).build());
        PreemptionState x = eager.initial(0);
        x = eager.next(x, new Register(0, "infer", ONLINE)).state();
        x = eager.next(x, new Register(0, "train", OFFLINE)).state();
        x = eager.next(x, new Submit(0, "infer")).state();
        x = eager.next(x, new Submit(0, "train")).state();
        Transition t = eager.next(x, new Idle(9, "infer"));
        assertEquals(List.of(new ModeChanged(GpuMode.ONLINE, GpuMode.RELEASING, 9), new ModeChanged(GpuMode.RELEASING, GpuMode.OFFLINE, 9),
                new Resume("train", 9)), t.actions());
    }

    @Test
    void theMachineIsPure() {
        trainRunning();
        PreemptionState before = s;
        PreemptionState copy = m.next(s, new Tick(0)).state();
        Transition a = m.next(before, new Submit(3, "infer"));
        Transition b = m.next(before, new Submit(3, "infer"));
        assertEquals(a, b);
        assertEquals(TenantPhase.RUNNING, before.phase("train").orElseThrow(), "input state untouched");
        assertEquals(copy.tenants(), before.tenants());
        assertEquals(before.version() + 1, a.state().version());
        assertEquals(3, a.state().at());
    }

    /** Sets up a state, then an event that must be refused. */
    record Illegal(String name, Consumer<PreemptionMachineTest> setup, PreemptionEvent event, String phase) {
    }

    @Test
    void everyIllegalEventGetsATypedErrorAndNoStateChange() {
        List<Illegal> cases = List.of(
                new Illegal("submit twice (online)", t -> t.on(new Submit(0, "infer")), new Submit(1, "infer"), "WAITING (online)"),
                new Illegal("submit twice (offline)", t -> t.on(new Submit(0, "prep")), new Submit(1, "prep"), "READY (offline)"),
                new Illegal("idle when idle (online)", t -> { }, new Idle(1, "infer"), "IDLE (online)"),
                new Illegal("idle when idle (offline)", t -> { }, new Idle(1, "prep"), "IDLE (offline)"),
                new Illegal("idle when suspended", t -> { t.on(new Submit(0, "infer")); t.on(new Suspended(1, "train")); },
                        new Idle(2, "train"), "SUSPENDED (offline)"),
                new Illegal("start when idle", t -> { }, new Start(1, "prep"), "IDLE (offline)"),
                new Illegal("start when running", t -> { }, new Start(1, "train"), "RUNNING (offline)"),
                new Illegal("start when suspended", t -> { t.on(new Submit(0, "infer")); t.on(new Suspended(1, "train")); },
                        new Start(2, "train"), "SUSPENDED (offline)"),
                new Illegal("start an online tenant", t -> { }, new Start(1, "infer"), "IDLE (online)"),
                new Illegal("stop when ready", t -> t.on(new Submit(0, "prep")), new Stop(1, "prep"), "READY (offline)"),
                new Illegal("stop an online tenant", t -> t.on(new Submit(0, "infer")), new Stop(1, "infer"), "WAITING (online)"),
                new Illegal("suspended without suspend", t -> { }, new Suspended(1, "train"), "RUNNING (offline)"),
                new Illegal("suspended twice", t -> { t.on(new Submit(0, "infer")); t.on(new Suspended(1, "train")); },
                        new Suspended(2, "train"), "SUSPENDED (offline)"),
                new Illegal("register twice", t -> { }, new Register(1, "train", ONLINE), "RUNNING (offline)"),
                new Illegal("unknown tenant", t -> { }, new Submit(1, "ghost"), IllegalTransitionException.UNREGISTERED),
                new Illegal("deregister unknown", t -> { }, new Deregister(1, "ghost"), IllegalTransitionException.UNREGISTERED));
        for (Illegal c : cases) {
            PreemptionMachineTest t = new PreemptionMachineTest();
            t.trainRunning();
            c.setup().accept(t);
            PreemptionState before = t.s;
            IllegalTransitionException e = assertThrows(IllegalTransitionException.class, () -> t.m.next(before, c.event()),
                    c.name());
            assertEquals(c.phase(), e.phase(), c.name());
            assertEquals(c.event(), e.event(), c.name());
            assertEquals(before.mode(), e.mode(), c.name() + " (no timer was due)");
        }
    }

    @Test
    void eventsOlderThanTheStateAreRefused() {
        on(new Register(10, "a", ONLINE));
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> m.next(s, new Tick(9)));
        assertEquals("event.at", e.field());
    }

    @Test
    void configValidatesAndNamesTheField() {
        PreemptionConfig d = PreemptionConfig.ofDefaults();
        assertEquals(Duration.ofMillis(1), d.preemptionBound());
        assertEquals(Duration.ofMillis(100), d.releaseDelay());
        assertEquals(d, d.toBuilder().build());
        assertEquals("preemption.preemptionBound", assertThrows(InvalidValueException.class,
                () -> PreemptionConfig.custom().preemptionBound(Duration.ZERO)).field());
        assertEquals("preemption.releaseDelay", assertThrows(InvalidValueException.class,
                () -> PreemptionConfig.custom().releaseDelay(Duration.ofMillis(-1))).field());
        assertEquals("preemption.releaseDelay", assertThrows(InvalidValueException.class,
                () -> new PreemptionConfig(1, -1)).field());
        assertTrue(m.toString().contains("100000000"));
    }
}
