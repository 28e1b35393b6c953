package io.qgpu.core.preempt;

import io.qgpu.api.PriorityClass;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A seeded random walk over a preemption machine that checks the documented table and the timing
 * promises after every event. Returns the first violation, or null.
 */
final class PreemptionWalk {

    private static final String[] ONLINE = {"on-a", "on-b"};
    private static final String[] OFFLINE = {"off-a", "off-b", "off-c"};

    private PreemptionWalk() {
    }

    static String run(PreemptionMachine machine, PreemptionConfig declared, long seed, int steps) {
        SplittableRandom rnd = new SplittableRandom(seed);
        PreemptionState s = machine.initial(0);
        long now = 0;
        long lastOnlineIdle = Long.MIN_VALUE;
        long bound = declared.preemptionBoundNanos();
        long delay = declared.releaseDelayNanos();
        for (int step = 0; step < steps; step++) {
            long dt = switch (rnd.nextInt(4)) {
                case 0 -> 0;
                case 1 -> rnd.nextLong(bound);
                case 2 -> rnd.nextLong(3 * bound);
                default -> rnd.nextLong(2 * delay + 1);
            };
            long target = now + dt;
            // timers are delivered on time, as the simulator and a timer thread do
            while (s.nextTimerNanos() <= target) {
                long due = s.nextTimerNanos();
                Transition t = machine.next(s, new PreemptionEvent.Tick(due));
                String v = check(t, s, declared, lastOnlineIdle, "tick at " + due);
                if (v != null) {
                    return "step " + step + ": " + v;
                }
                s = t.state();
            }
            now = target;
            PreemptionEvent e = randomEvent(rnd, now);
            boolean legal = legal(s, e);
            Transition t;
            try {
                t = machine.next(s, e);
            } catch (IllegalTransitionException ex) {
                if (legal) {
                    return "step " + step + ": " + e + " refused but the table allows it in " + s + ": " + ex.getMessage();
                }
                continue;
            }
            if (!legal) {
                return "step " + step + ": " + e + " accepted but the table forbids it in " + s;
            }
            String v = check(t, s, declared, lastOnlineIdle, e.toString());
            if (v != null) {
                return "step " + step + ": " + v;
            }
            PreemptionState before = s;
            s = t.state();
            if (e.tenant() != null && isOnline(e.tenant())) {
                boolean wasBusy = busy(before, e.tenant());
                boolean isBusy = s.isRegistered(e.tenant()) && busy(s, e.tenant());
                if (wasBusy && !isBusy) {
                    lastOnlineIdle = now;
                }
            }
        }
        return null;
    }

    private static String check(Transition t, PreemptionState before, PreemptionConfig declared, long lastOnlineIdle,
                                String what) {
        PreemptionState s = t.state();
        List<String> broken = s.invariantViolations();
        if (!broken.isEmpty()) {
            return what + " broke " + broken + " in " + s;
        }
        if (s.version() != before.version() + 1) {
            return what + ": version " + before.version() + " -> " + s.version();
        }
        if (s.mode() == GpuMode.PREEMPTING && s.at() - s.preemptionStartedAt() >= declared.preemptionBoundNanos()) {
            return what + ": still PREEMPTING " + (s.at() - s.preemptionStartedAt()) + " ns after it began";
        }
        for (Action a : t.actions()) {
            if (a instanceof Action.RunOnline r && r.waitedNanos() > declared.preemptionBoundNanos()) {
                return what + ": " + r.tenant() + " waited " + r.waitedNanos() + " ns for the GPU";
            }
            if (a instanceof Action.Resume r) {
                if (r.at() < lastOnlineIdle + declared.releaseDelayNanos()) {
                    return what + ": " + r.tenant() + " resumed at " + r.at() + ", online idle only since " + lastOnlineIdle;
                }
                if (r.at() > Math.max(lastOnlineIdle, 0) + declared.releaseDelayNanos() + declared.preemptionBoundNanos()) {
                    return what + ": " + r.tenant() + " resumed late at " + r.at() + ", online idle since " + lastOnlineIdle;
                }
            }
        }
        return null;
    }

    /** The documented table, written independently of the machine. */
    static boolean legal(PreemptionState s, PreemptionEvent e) {
        if (e instanceof PreemptionEvent.Tick) {
            return true;
        }
        if (e instanceof PreemptionEvent.Register) {
            return !s.isRegistered(e.tenant());
        }
        if (!s.isRegistered(e.tenant())) {
            return false;
        }
        TenantPhase p = s.phase(e.tenant()).orElseThrow();
        boolean online = s.priority(e.tenant()).orElseThrow() == PriorityClass.ONLINE;
        if (e instanceof PreemptionEvent.Deregister) {
            return true;
        }
        if (e instanceof PreemptionEvent.Submit) {
            return p == TenantPhase.IDLE;
        }
        if (e instanceof PreemptionEvent.Idle) {
            return online ? p == TenantPhase.RUNNING || p == TenantPhase.WAITING
                    : p == TenantPhase.READY || p == TenantPhase.RUNNING || p == TenantPhase.SUSPENDING;
        }
        if (e instanceof PreemptionEvent.Start) {
            return !online && p == TenantPhase.READY;
        }
        if (e instanceof PreemptionEvent.Stop) {
            return !online && (p == TenantPhase.RUNNING || p == TenantPhase.SUSPENDING);
        }
        if (e instanceof PreemptionEvent.Suspended) {
            return !online && p == TenantPhase.SUSPENDING;
        }
        throw new IllegalArgumentException(String.valueOf(e));
    }

    private static PreemptionEvent randomEvent(SplittableRandom rnd, long at) {
        boolean online = rnd.nextInt(3) == 0;
        String tenant = online ? ONLINE[rnd.nextInt(ONLINE.length)] : OFFLINE[rnd.nextInt(OFFLINE.length)];
        return switch (rnd.nextInt(20)) {
            case 0, 1 -> new PreemptionEvent.Register(at, tenant, online ? PriorityClass.ONLINE : PriorityClass.OFFLINE);
            case 2 -> new PreemptionEvent.Deregister(at, tenant);
            case 3, 4, 5, 6 -> new PreemptionEvent.Submit(at, tenant);
            case 7, 8, 9 -> new PreemptionEvent.Idle(at, tenant);
            case 10, 11, 12 -> new PreemptionEvent.Start(at, tenant);
            case 13, 14 -> new PreemptionEvent.Stop(at, tenant);
            case 15, 16, 17 -> new PreemptionEvent.Suspended(at, tenant);
            default -> new PreemptionEvent.Tick(at);
        };
    }

    private static boolean isOnline(String tenant) {
        return tenant.startsWith("on-");
    }

    private static boolean busy(PreemptionState s, String tenant) {
        TenantPhase p = s.phase(tenant).orElse(TenantPhase.IDLE);
        return p == TenantPhase.RUNNING || p == TenantPhase.WAITING;
    }
}
