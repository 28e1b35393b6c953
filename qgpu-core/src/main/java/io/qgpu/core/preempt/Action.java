package io.qgpu.core.preempt;

import io.qgpu.api.Validate;

/**
 * An output of the {@link PreemptionMachine}: what the caller must do (suspend, resume, let run) or
 * should know (a mode change). Each carries the time it took effect, which is earlier than the
 * event's time when a timer that was due fired first.
 *
 * <pre>{@code
 * for (Action a : transition.actions()) {
 *     if (a instanceof Action.Suspend s) {
 *         offlineWorker(s.tenant()).suspend();      // then report PreemptionEvent.Suspended
 *     } else if (a instanceof Action.RunOnline r) {
 *         onlineWorker(r.tenant()).go();
 *     }
 * }
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public sealed interface Action {

    /** When it took effect. */
    long at();

    /** The GPU's mode changed. */
    record ModeChanged(GpuMode from, GpuMode to, long at) implements Action {
        public ModeChanged {
            Validate.notNull("modeChanged.from", from);
            Validate.notNull("modeChanged.to", to);
        }
    }

    /** A running offline tenant must suspend at once, keeping its progress, and confirm ({@code Suspended}). */
    record Suspend(String tenant, long at) implements Action {
        public Suspend {
            Validate.notBlank("suspend.tenant", tenant);
        }
    }

    /**
     * The preemption bound passed before {@code tenant} confirmed: it now counts as suspended and the
     * enforcement layer must stop it by force.
     */
    record ForceSuspended(String tenant, long at) implements Action {
        public ForceSuspended {
            Validate.notBlank("forceSuspended.tenant", tenant);
        }
    }

    /** A suspended offline tenant may run again, from where it stopped, when its policy picks it. */
    record Resume(String tenant, long at) implements Action {
        public Resume {
            Validate.notBlank("resume.tenant", tenant);
        }
    }

    /** An online tenant may run now; it waited {@code waitedNanos} since it submitted. */
    record RunOnline(String tenant, long at, long waitedNanos) implements Action {
        public RunOnline {
            Validate.notBlank("runOnline.tenant", tenant);
            Validate.atLeast("runOnline.waitedNanos", waitedNanos, 0);
        }
    }
}
