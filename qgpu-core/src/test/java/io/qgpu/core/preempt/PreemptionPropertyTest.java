package io.qgpu.core.preempt;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.PriorityClass;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Random walks over the machine; each check is also run on a deliberately broken machine. */
class PreemptionPropertyTest {

    private static final PreemptionConfig CONFIG = PreemptionConfig.custom()
            .preemptionBound(Duration.ofMillis(1)).releaseDelay(Duration.ofMillis(100)).build();

    @Test
    void theStandardMachineKeepsTheTableAndItsTimingOnRandomWalks() {
        long base = Long.getLong("qgpu.seed", 20251121L);
        for (long seed = base; seed < base + 10; seed++) {
            assertNull(PreemptionWalk.run(PreemptionMachine.standard(CONFIG), CONFIG, seed, 2_000), "seed " + seed);
        }
    }

    @Test
    void catchesAMachineThatLeavesReadyOfflineTenantsRunnable() {
        String v = firstViolation(new LeavesReadyOffline(PreemptionMachine.standard(CONFIG)));
        assertNotNull(v);
        assertTrue(v.contains("READY in mode"), v);
    }

    @Test
    void catchesAMachineWithoutAPreemptionDeadline() {
        PreemptionMachine noDeadline = PreemptionMachine.standard(CONFIG.toBuilder().preemptionBound(Duration.ofHours(1)).build());
        String v = firstViolation(noDeadline);
        assertNotNull(v);
        assertTrue(v.contains("waited") || v.contains("still PREEMPTING"), v);
    }

    @Test
    void catchesAMachineThatReleasesEarly() {
        PreemptionMachine early = PreemptionMachine.standard(CONFIG.toBuilder().releaseDelay(Duration.ofMillis(50)).build());
        String v = firstViolation(early);
        assertNotNull(v);
        assertTrue(v.contains("resumed at"), v);
    }

    @Test
    void catchesAMachineThatReleasesLate() {
        PreemptionMachine late = PreemptionMachine.standard(CONFIG.toBuilder().releaseDelay(Duration.ofMillis(150)).build());
        String v = firstViolation(late);
        assertNotNull(v);
        assertTrue(v.contains("resumed late"), v);
    }

    @Test
    void catchesAMachineThatAcceptsAnIllegalEvent() {
        String v = firstViolation(new StartsAnything(PreemptionMachine.standard(CONFIG)));
        assertNotNull(v);
        assertTrue(v.contains("accepted but the table forbids it"), v);
    }

    private static String firstViolation(PreemptionMachine m) {
        for (long seed = 1; seed < 40; seed++) {
            String v = PreemptionWalk.run(m, CONFIG, seed, 2_000);
            if (v != null) {
                return v;
            }
        }
        return null;
    }

    /** Broken on purpose: on an online submit, offline tenants that were READY stay READY. */
    static final class LeavesReadyOffline implements PreemptionMachine {
        private final PreemptionMachine delegate;

        LeavesReadyOffline(PreemptionMachine delegate) {
            this.delegate = delegate;
        }

        @Override
        public PreemptionConfig config() {
            return delegate.config();
        }

        @Override
        public Transition next(PreemptionState s, PreemptionEvent e) {
            Transition t = delegate.next(s, e);
            if (!(e instanceof PreemptionEvent.Submit) || s.priority(e.tenant()).orElse(null) != PriorityClass.ONLINE) {
                return t;
            }
            PreemptionState n = t.state();
            TenantPhase[] phases = n.phases.clone();
            for (int i = 0; i < n.ids.length; i++) {
                if (s.phase(n.ids[i]).orElse(null) == TenantPhase.READY && phases[i] == TenantPhase.SUSPENDED) {
                    phases[i] = TenantPhase.READY;
                }
            }
            return new Transition(new PreemptionState(n.mode, n.ids, n.classes, phases, n.since, n.belowFrom, n.index, n.timerAt,
                    n.preemptStartedAt, n.lastOnlineIdleAt, n.idleGaps, n.at, n.version), t.actions());
        }
    }

    /** Broken on purpose: Start is accepted in any phase (a silent state change). */
    static final class StartsAnything implements PreemptionMachine {
        private final PreemptionMachine delegate;

        StartsAnything(PreemptionMachine delegate) {
            this.delegate = delegate;
        }

        @Override
        public PreemptionConfig config() {
            return delegate.config();
        }

        @Override
        public Transition next(PreemptionState s, PreemptionEvent e) {
            try {
                return delegate.next(s, e);
            } catch (IllegalTransitionException ex) {
                if (e instanceof PreemptionEvent.Start) {
                    return delegate.next(s, new PreemptionEvent.Tick(e.at()));
                }
                throw ex;
            }
        }
    }
}
