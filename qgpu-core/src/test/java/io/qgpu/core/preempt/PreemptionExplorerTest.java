package io.qgpu.core.preempt;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Model checking of the standard machine and the token scheduler's choice: two online and two
 * offline tenants, every order of events and timer firings up to {@link #DEPTH} events and time
 * {@link #MAX_TIME} ns, with a preemption bound of 2 ns and a release hold of 5 ns. Each
 * deliberately broken machine below must be rejected at the same budget. A deeper run:
 * {@code -Dqgpu.explorer.depth=10}.
 */
class PreemptionExplorerTest {

    static final int DEPTH = Integer.getInteger("qgpu.explorer.depth", 8);
    static final long MAX_TIME = 12;
    static final PreemptionConfig CONFIG = new PreemptionConfig(2, 5);

    private static PreemptionExplorer.Result explore(PreemptionMachine m, PreemptionConfig declared) {
        return explore(m, declared, DEPTH);
    }

    private static PreemptionExplorer.Result explore(PreemptionMachine m, PreemptionConfig declared, int depth) {
        return new PreemptionExplorer(m, declared, 2, 2, depth, MAX_TIME).explore();
    }

    @Test
    void theStandardMachineKeepsEveryInvariantInEveryOrderOfEvents() {
        PreemptionExplorer.Result r = explore(PreemptionMachine.standard(CONFIG), CONFIG);
        System.out.printf("preemption explorer: %,d states, %,d transitions, depth %d%n", r.states(), r.transitions(), r.depthReached());
        assertNull(r.violation(), () -> r.violation() + "\n  after " + r.trace());
        assertTrue(r.states() > 10_000, "explored " + r.states() + " states");
    }

    @Test
    void theAdaptiveReleaseRuleKeepsThemToo() {
        PreemptionConfig adaptive = PreemptionConfig.custom().preemptionBound(Duration.ofNanos(2))
                .releasePolicy(new ReleasePolicy.Adaptive(3, 5, 4, 1)).build();
        PreemptionExplorer.Result r = explore(PreemptionMachine.standard(adaptive), adaptive, DEPTH - 1);
        System.out.printf("preemption explorer (adaptive release): %,d states, %,d transitions, depth %d%n", r.states(),
                r.transitions(), r.depthReached());
        assertNull(r.violation(), () -> r.violation() + "\n  after " + r.trace());
        assertTrue(r.states() > 5_000, "explored " + r.states() + " states");
    }

    @Test
    void rejectsAMachineWithoutDeadline() {
        PreemptionExplorer.Result r = explore(PreemptionMachine.standard(new PreemptionConfig(1_000, 5)), CONFIG);
        assertNotNull(r.violation());
        assertTrue(r.violation().contains("bound 2"), r.violation());
    }

    @Test
    void rejectsAMachineThatReleasesLate() {
        PreemptionExplorer.Result r = explore(PreemptionMachine.standard(new PreemptionConfig(2, 9)), CONFIG);
        assertNotNull(r.violation());
        assertTrue(r.violation().contains("release within 5"), r.violation());
    }

    /** Drops an online tenant's Idle while offline work is suspended: online work never leaves, offline never resumes. */
    @Test
    void rejectsAMachineWithAStateWithoutAWayOut() {
        PreemptionMachine standard = PreemptionMachine.standard(CONFIG);
        PreemptionMachine broken = new Decorator(standard) {
            @Override
            public Transition next(PreemptionState s, PreemptionEvent e) {
                if (e instanceof PreemptionEvent.Idle && s.priority(e.tenant()).orElse(null) == io.qgpu.api.PriorityClass.ONLINE
                        && !s.tenantsIn(TenantPhase.SUSPENDED).isEmpty()) {
                    return new Transition(s, java.util.List.of());
                }
                return standard.next(s, e);
            }
        };
        PreemptionExplorer.Result r = explore(broken, CONFIG);
        assertNotNull(r.violation());
        assertTrue(r.violation().startsWith("no way out"), r.violation());
    }

    /** Refuses Stop from a SUSPENDING tenant (its grant ended before it confirmed): a legal event refused. */
    @Test
    void rejectsAMachineThatRefusesALegalEvent() {
        PreemptionMachine standard = PreemptionMachine.standard(CONFIG);
        PreemptionMachine broken = new Decorator(standard) {
            @Override
            public Transition next(PreemptionState s, PreemptionEvent e) {
                if (e instanceof PreemptionEvent.Stop && s.phase(e.tenant()).orElse(null) == TenantPhase.SUSPENDING) {
                    throw new IllegalTransitionException(s.mode(), "SUSPENDING", e, "broken on purpose");
                }
                return standard.next(s, e);
            }
        };
        PreemptionExplorer.Result r = explore(broken, CONFIG);
        assertNotNull(r.violation());
        assertTrue(r.violation().startsWith("the machine refused a legal event Stop"), r.violation());
    }

    /** Resumes READY offline tenants on an online Submit instead of holding them: offline runs beside online. */
    @Test
    void rejectsAMachineThatLetsOfflineStartBesideOnlineWork() {
        PreemptionMachine standard = PreemptionMachine.standard(CONFIG);
        PreemptionMachine broken = new Decorator(standard) {
            @Override
            public Transition next(PreemptionState s, PreemptionEvent e) {
                Transition t = standard.next(s, e);
                if (e instanceof PreemptionEvent.Submit && t.state().mode() == GpuMode.ONLINE) {
                    TenantPhase[] phases = t.state().phases.clone();
                    for (int i = 0; i < phases.length; i++) {
                        if (phases[i] == TenantPhase.SUSPENDED && s.phases.length > i && s.phases[i] == TenantPhase.READY) {
                            phases[i] = TenantPhase.READY;
                        }
                    }
                    PreemptionState n = t.state();
                    return new Transition(new PreemptionState(n.mode, n.ids, n.classes, phases, n.since, n.belowFrom, n.index, n.timerAt,
                            n.preemptStartedAt, n.lastOnlineIdleAt, n.idleGaps, n.at, n.version), t.actions());
                }
                return t;
            }
        };
        PreemptionExplorer.Result r = explore(broken, CONFIG);
        assertNotNull(r.violation());
        assertTrue(r.violation().startsWith("invariants broken"), r.violation());
    }

    private abstract static class Decorator implements PreemptionMachine {
        private final PreemptionMachine d;

        Decorator(PreemptionMachine d) {
            this.d = d;
        }

        @Override
        public PreemptionConfig config() {
            return d.config();
        }
    }
}
