package io.qgpu.core.preempt;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Validate;
import io.qgpu.core.internal.Saturating;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** The rules documented on {@link PreemptionMachine}. Immutable. */
final class StandardPreemptionMachine implements PreemptionMachine {

    private final PreemptionConfig config;

    StandardPreemptionMachine(PreemptionConfig config) {
        this.config = config;
    }

    @Override
    public PreemptionConfig config() {
        return config;
    }

    @Override
    public Transition next(PreemptionState state, PreemptionEvent event) {
        Validate.notNull("preemption.state", state);
        Validate.notNull("preemption.event", event);
        long at = event.at();
        if (at < state.at) {
            throw new InvalidValueException("event.at", at, "must not be before the state's time " + state.at);
        }
        Draft d = new Draft(state);
        fireTimers(d, at);
        apply(d, event);
        fireTimers(d, at);
        return new Transition(d.build(at, state.version + 1), d.actions);
    }

    @Override
    public String toString() {
        return "StandardPreemptionMachine[" + config + "]";
    }

    private void apply(Draft d, PreemptionEvent e) {
        long at = e.at();
        if (e instanceof PreemptionEvent.Tick) {
            return;
        }
        if (e instanceof PreemptionEvent.Register r) {
            if (d.indexOf(r.tenant()) >= 0) {
                throw illegal(d, e, "the tenant is already registered");
            }
            d.add(r.tenant(), r.priority(), at);
            return;
        }
        int i = d.indexOf(e.tenant());
        if (i < 0) {
            throw new IllegalTransitionException(d.mode, IllegalTransitionException.UNREGISTERED, e,
                    "the tenant is not registered");
        }
        boolean online = d.classes[i] == PriorityClass.ONLINE;
        TenantPhase p = d.phases[i];
        if (e instanceof PreemptionEvent.Usage u) {
            if (online) {
                throw illegal(d, e, "Usage is for offline tenants (online work is never held)");
            }
            d.belowFrom[i] = u.belowFrom();
            floorCheck(d, at);
        } else if (e instanceof PreemptionEvent.Deregister) {
            d.remove(i);
            if (online && p == TenantPhase.RUNNING) {
                d.lastOnlineIdleAt = at;
                if (d.count(PriorityClass.ONLINE, TenantPhase.RUNNING) == 0) {
                    enterReleasing(d, at);
                }
            } else if (online && p == TenantPhase.WAITING) {
                d.lastOnlineIdleAt = at;
            } else if (!online && p == TenantPhase.SUSPENDING) {
                completeIfResolved(d, at);
            } else if (!online) {
                floorCheck(d, at);
            }
        } else if (e instanceof PreemptionEvent.Submit) {
            if (p != TenantPhase.IDLE) {
                throw illegal(d, e, "only an IDLE tenant submits work (this one already has work)");
            }
            if (online) {
                submitOnline(d, i, at);
            } else {
                d.set(i, d.mode == GpuMode.OFFLINE ? TenantPhase.READY : TenantPhase.SUSPENDED, at);
                floorCheck(d, at);
            }
        } else if (e instanceof PreemptionEvent.Idle) {
            if (online) {
                if (p == TenantPhase.RUNNING) {
                    d.set(i, TenantPhase.IDLE, at);
                    d.lastOnlineIdleAt = at;
                    if (d.count(PriorityClass.ONLINE, TenantPhase.RUNNING) == 0) {
                        enterReleasing(d, at);
                    }
                } else if (p == TenantPhase.WAITING) {
                    d.set(i, TenantPhase.IDLE, at);
                    d.lastOnlineIdleAt = at;
                } else {
                    throw illegal(d, e, "the tenant is already IDLE");
                }
            } else if (p == TenantPhase.READY || p == TenantPhase.RUNNING) {
                d.set(i, TenantPhase.IDLE, at);
            } else if (p == TenantPhase.SUSPENDING) {
                d.set(i, TenantPhase.IDLE, at);
                completeIfResolved(d, at);
            } else if (p == TenantPhase.SUSPENDED) {
                throw illegal(d, e, "a SUSPENDED tenant cannot finish its work (deregister it to drop the work)");
            } else {
                throw illegal(d, e, "the tenant is already IDLE");
            }
        } else if (e instanceof PreemptionEvent.Start) {
            if (online) {
                throw illegal(d, e, "online tenants run on Submit; Start is for offline tenants");
            }
            if (p != TenantPhase.READY) {
                throw illegal(d, e, "only a READY offline tenant can start (GPU mode must be OFFLINE)");
            }
            d.set(i, TenantPhase.RUNNING, at);
        } else if (e instanceof PreemptionEvent.Stop) {
            if (online) {
                throw illegal(d, e, "Stop is for offline tenants; online tenants report Idle");
            }
            if (p == TenantPhase.RUNNING) {
                d.set(i, TenantPhase.READY, at);
            } else if (p == TenantPhase.SUSPENDING) {
                d.set(i, TenantPhase.SUSPENDED, at);
                completeIfResolved(d, at);
            } else {
                throw illegal(d, e, "only a RUNNING or SUSPENDING offline tenant can stop");
            }
        } else if (e instanceof PreemptionEvent.Suspended) {
            if (online || p != TenantPhase.SUSPENDING) {
                throw illegal(d, e, "only a SUSPENDING offline tenant confirms a suspension");
            }
            d.set(i, TenantPhase.SUSPENDED, at);
            completeIfResolved(d, at);
        } else {
            throw new IllegalArgumentException("unknown event type " + e.getClass());
        }
    }

    private void submitOnline(Draft d, int i, long at) {
        int history = config.releasePolicy().history();
        if (history > 0 && (d.mode == GpuMode.OFFLINE || d.mode == GpuMode.RELEASING) && d.lastOnlineIdleAt != Long.MIN_VALUE) {
            IdleGaps g = d.idleGaps.capacity() == history ? d.idleGaps : IdleGaps.empty(history);
            d.idleGaps = g.plus(Math.max(0, at - d.lastOnlineIdleAt));
        }
        switch (d.mode) {
            case OFFLINE -> {
                boolean anyRunning = false;
                for (int k = 0; k < d.size; k++) {
                    if (d.classes[k] == PriorityClass.OFFLINE && d.phases[k] == TenantPhase.RUNNING) {
                        anyRunning = true;
                        break;
                    }
                }
                if (anyRunning) {
                    d.mode(GpuMode.PREEMPTING, at);
                    d.timerAt = timerAt(at, config.preemptionBoundNanos());
                    d.preemptStartedAt = at;
                    holdOffline(d, at);
                    d.set(i, TenantPhase.WAITING, at);
                } else {
                    d.mode(GpuMode.ONLINE, at);
                    holdOffline(d, at);
                    runOnline(d, i, at, at);
                }
            }
            case PREEMPTING -> d.set(i, TenantPhase.WAITING, at);
            case ONLINE -> runOnline(d, i, at, at);
            case RELEASING -> {
                d.mode(GpuMode.ONLINE, at);
                d.timerAt = PreemptionState.NO_TIMER;
                runOnline(d, i, at, at);
            }
        }
    }

    /** Offline RUNNING to SUSPENDING (Suspend), READY to SUSPENDED. */
    private static void holdOffline(Draft d, long at) {
        for (int k = 0; k < d.size; k++) {
            if (d.classes[k] != PriorityClass.OFFLINE) {
                continue;
            }
            if (d.phases[k] == TenantPhase.RUNNING) {
                d.set(k, TenantPhase.SUSPENDING, at);
                d.actions.add(new Action.Suspend(d.ids[k], at));
            } else if (d.phases[k] == TenantPhase.READY) {
                d.set(k, TenantPhase.SUSPENDED, at);
            }
        }
    }

    private static void runOnline(Draft d, int i, long at, long submittedAt) {
        d.phases[i] = TenantPhase.RUNNING;
        d.actions.add(new Action.RunOnline(d.ids[i], at, at - submittedAt));
        d.since[i] = submittedAt;
    }

    private void enterReleasing(Draft d, long at) {
        d.mode(GpuMode.RELEASING, at);
        d.timerAt = releaseAt(d, at);
    }

    /**
     * When the release delay ends: the release rule's hold after online last went idle, or, with the
     * offline floor, as soon as a held (SUSPENDED) offline tenant is below its request, whichever is
     * first; never before {@code at}.
     */
    private long releaseAt(Draft d, long at) {
        long due = timerAt(d.lastOnlineIdleAt, config.releasePolicy().holdNanos(d.idleGaps));
        if (config.offlineFloor()) {
            for (int k = 0; k < d.size; k++) {
                if (d.classes[k] == PriorityClass.OFFLINE && d.phases[k] == TenantPhase.SUSPENDED) {
                    due = Math.min(due, d.belowFrom[k]);
                }
            }
        }
        return Math.max(at, due);
    }

    /** In RELEASING, re-decides the release after the held offline tenants or their usage changed. */
    private void floorCheck(Draft d, long at) {
        if (d.mode == GpuMode.RELEASING) {
            d.timerAt = releaseAt(d, at);
        }
    }

    private void completeIfResolved(Draft d, long at) {
        if (d.mode == GpuMode.PREEMPTING && d.count(PriorityClass.OFFLINE, TenantPhase.SUSPENDING) == 0) {
            completePreemption(d, at);
        }
    }

    private void completePreemption(Draft d, long at) {
        d.timerAt = PreemptionState.NO_TIMER;
        if (d.count(PriorityClass.ONLINE, TenantPhase.WAITING) > 0) {
            d.mode(GpuMode.ONLINE, at);
            for (int k = 0; k < d.size; k++) {
                if (d.phases[k] == TenantPhase.WAITING) {
                    runOnline(d, k, at, d.since[k]);
                }
            }
        } else {
            enterReleasing(d, at);
        }
    }

    private void fireTimers(Draft d, long now) {
        while (d.timerAt <= now) {
            long t = d.timerAt;
            if (d.mode == GpuMode.PREEMPTING) {
                for (int k = 0; k < d.size; k++) {
                    if (d.phases[k] == TenantPhase.SUSPENDING) {
                        d.set(k, TenantPhase.SUSPENDED, t);
                        d.actions.add(new Action.ForceSuspended(d.ids[k], t));
                    }
                }
                completePreemption(d, t);
            } else if (d.mode == GpuMode.RELEASING) {
                d.timerAt = PreemptionState.NO_TIMER;
                d.mode(GpuMode.OFFLINE, t);
                for (int k = 0; k < d.size; k++) {
                    if (d.phases[k] == TenantPhase.SUSPENDED) {
                        d.set(k, TenantPhase.READY, t);
                        d.actions.add(new Action.Resume(d.ids[k], t));
                    }
                }
            } else {
                throw new IllegalStateException("timer pending in mode " + d.mode);
            }
        }
    }

    private static IllegalTransitionException illegal(Draft d, PreemptionEvent e, String rule) {
        int i = d.indexOf(e.tenant());
        String phase = i < 0 ? IllegalTransitionException.UNREGISTERED
                : d.phases[i] + " (" + d.classes[i].wireName() + ")";
        return new IllegalTransitionException(d.mode, phase, e, rule);
    }

    /** {@code at + delay}, saturated, and never {@link PreemptionState#NO_TIMER} (which means "no timer"). */
    private static long timerAt(long at, long delay) {
        return Math.min(Saturating.add(at, delay), PreemptionState.NO_TIMER - 1);
    }

    /** A mutable copy of a state, built into a new immutable one. */
    private static final class Draft {
        GpuMode mode;
        String[] ids;
        PriorityClass[] classes;
        TenantPhase[] phases;
        long[] since;
        long[] belowFrom;
        Map<String, Integer> index;
        boolean membershipChanged;
        int size;
        long timerAt;
        long preemptStartedAt;
        long lastOnlineIdleAt;
        IdleGaps idleGaps;
        final List<Action> actions = new ArrayList<>(4);

        Draft(PreemptionState s) {
            mode = s.mode;
            ids = s.ids;
            classes = s.classes;
            phases = s.phases.clone();
            since = s.since.clone();
            belowFrom = s.belowFrom.clone();
            index = s.index;
            size = s.ids.length;
            timerAt = s.timerAt;
            preemptStartedAt = s.preemptStartedAt;
            lastOnlineIdleAt = s.lastOnlineIdleAt;
            idleGaps = s.idleGaps;
        }

        /** The tenant's slot, or -1 when it is not registered or is null (a {@code Tick} names none). */
        int indexOf(@Nullable String tenant) {
            if (tenant == null) {
                return -1;
            }
            if (membershipChanged) {
                for (int k = 0; k < size; k++) {
                    if (ids[k].equals(tenant)) {
                        return k;
                    }
                }
                return -1;
            }
            Integer k = index.get(tenant);
            return k == null ? -1 : k;
        }

        void set(int i, TenantPhase p, long at) {
            phases[i] = p;
            since[i] = at;
        }

        void mode(GpuMode to, long at) {
            if (to != mode) {
                actions.add(new Action.ModeChanged(mode, to, at));
                mode = to;
            }
        }

        int count(PriorityClass c, TenantPhase p) {
            int n = 0;
            for (int k = 0; k < size; k++) {
                if (classes[k] == c && phases[k] == p) {
                    n++;
                }
            }
            return n;
        }

        void add(String id, PriorityClass c, long at) {
            ids = Arrays.copyOf(ids, size + 1);
            classes = Arrays.copyOf(classes, size + 1);
            phases = Arrays.copyOf(phases, size + 1);
            since = Arrays.copyOf(since, size + 1);
            belowFrom = Arrays.copyOf(belowFrom, size + 1);
            belowFrom[size] = Long.MAX_VALUE;
            ids[size] = id;
            classes[size] = c;
            phases[size] = TenantPhase.IDLE;
            since[size] = at;
            size++;
            membershipChanged = true;
        }

        void remove(int i) {
            ids = without(ids, i, new String[size - 1]);
            classes = without(classes, i, new PriorityClass[size - 1]);
            phases = without(phases, i, new TenantPhase[size - 1]);
            long[] s = new long[size - 1];
            System.arraycopy(since, 0, s, 0, i);
            System.arraycopy(since, i + 1, s, i, size - 1 - i);
            since = s;
            long[] b = new long[size - 1];
            System.arraycopy(belowFrom, 0, b, 0, i);
            System.arraycopy(belowFrom, i + 1, b, i, size - 1 - i);
            belowFrom = b;
            size--;
            membershipChanged = true;
        }

        private static <T> T[] without(T[] a, int i, T[] out) {
            System.arraycopy(a, 0, out, 0, i);
            System.arraycopy(a, i + 1, out, i, a.length - 1 - i);
            return out;
        }

        PreemptionState build(long at, long version) {
            Map<String, Integer> idx = membershipChanged ? PreemptionState.indexOf(ids) : index;
            return new PreemptionState(mode, ids, classes, phases, since, belowFrom, idx, timerAt, preemptStartedAt,
                    lastOnlineIdleAt, idleGaps, at, version);
        }
    }
}
