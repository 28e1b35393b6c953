package io.qgpu.core.preempt;

import io.qgpu.api.PriorityClass;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The whole preemption state of one GPU as one immutable value: the GPU's {@link GpuMode}, each
 * tenant's class and {@link TenantPhase}, the pending timer, the time of the last event and a
 * version that counts transitions. Produced by {@link PreemptionMachine#next}; compare values with
 * {@link #equals}.
 *
 * <pre>{@code
 * PreemptionState s = controller.state();
 * s.mode();                         // ONLINE
 * s.tenantsIn(TenantPhase.SUSPENDED);   // [train-1]
 * s.nextTimer();                    // OptionalLong.empty() while online runs
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public final class PreemptionState {

    static final long NO_TIMER = Long.MAX_VALUE;

    final GpuMode mode;
    final String[] ids;
    final PriorityClass[] classes;
    final TenantPhase[] phases;
    /** Online: when it last submitted. Offline: when its phase last changed. */
    final long[] since;
    /** Offline: from when it counts as below its request if it does not run ({@link PreemptionEvent.Usage}). */
    final long[] belowFrom;
    final Map<String, Integer> index;
    final long timerAt;
    final long preemptStartedAt;
    final long lastOnlineIdleAt;
    final IdleGaps idleGaps;
    final long at;
    final long version;

    PreemptionState(GpuMode mode, String[] ids, PriorityClass[] classes, TenantPhase[] phases, long[] since,
                    long[] belowFrom, Map<String, Integer> index, long timerAt, long preemptStartedAt, long lastOnlineIdleAt,
                    IdleGaps idleGaps, long at, long version) {
        this.mode = mode;
        this.ids = ids;
        this.classes = classes;
        this.phases = phases;
        this.since = since;
        this.belowFrom = belowFrom;
        this.index = index;
        this.timerAt = timerAt;
        this.preemptStartedAt = preemptStartedAt;
        this.lastOnlineIdleAt = lastOnlineIdleAt;
        this.idleGaps = idleGaps;
        this.at = at;
        this.version = version;
    }

    /** A GPU without tenants at time {@code at}, in mode {@link GpuMode#OFFLINE}. */
    public static PreemptionState initial(long at) {
        return new PreemptionState(GpuMode.OFFLINE, new String[0], new PriorityClass[0], new TenantPhase[0],
                new long[0], new long[0], Map.of(), NO_TIMER, Long.MIN_VALUE, Long.MIN_VALUE, IdleGaps.empty(0), at, 0);
    }

    public GpuMode mode() {
        return mode;
    }

    /** Time of the last event applied (or of creation). */
    public long at() {
        return at;
    }

    /** Number of events applied since {@link #initial}. */
    public long version() {
        return version;
    }

    /** When the next timer is due: the preemption deadline or the end of the release delay. */
    public OptionalLong nextTimer() {
        return timerAt == NO_TIMER ? OptionalLong.empty() : OptionalLong.of(timerAt);
    }

    /** {@link #nextTimer()} or {@link Long#MAX_VALUE} when none is pending (allocation-free). */
    public long nextTimerNanos() {
        return timerAt;
    }

    /**
     * When the last online tenant last went idle (or gave up waiting); {@link Long#MIN_VALUE} if never.
     * The release timer is due this long after it: the hold of the machine's {@link ReleasePolicy}.
     */
    public long lastOnlineIdleAt() {
        return lastOnlineIdleAt;
    }

    /**
     * The recent online idle gaps this GPU saw (kept only when the machine's {@link ReleasePolicy}
     * asks for a history).
     */
    public IdleGaps idleGaps() {
        return idleGaps;
    }

    /** When the current preemption began; meaningful in {@link GpuMode#PREEMPTING}. */
    public long preemptionStartedAt() {
        return preemptStartedAt;
    }

    /** Registered tenants, in registration order. */
    public List<String> tenants() {
        return List.of(ids);
    }

    public boolean isRegistered(String tenant) {
        return index.containsKey(tenant);
    }

    public Optional<TenantPhase> phase(String tenant) {
        Integer i = index.get(tenant);
        return i == null ? Optional.empty() : Optional.of(phases[i]);
    }

    public Optional<PriorityClass> priority(String tenant) {
        Integer i = index.get(tenant);
        return i == null ? Optional.empty() : Optional.of(classes[i]);
    }

    /**
     * From when the offline tenant counts as below its request if it does not run, as last reported
     * ({@link PreemptionEvent.Usage}); {@link Long#MAX_VALUE} (never) until reported and for online
     * tenants; empty if it is not registered.
     */
    public OptionalLong belowRequestFrom(String tenant) {
        Integer i = index.get(tenant);
        return i == null ? OptionalLong.empty() : OptionalLong.of(belowFrom[i]);
    }

    /** Tenants in {@code phase}, in registration order. */
    public List<String> tenantsIn(TenantPhase phase) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < ids.length; i++) {
            if (phases[i] == phase) {
                out.add(ids[i]);
            }
        }
        return Collections.unmodifiableList(out);
    }

    /**
     * The invariants of {@link PreemptionMachine}'s state table that this value breaks; empty for every
     * state the standard machine produces. Meant for tests and model checkers.
     */
    public List<String> invariantViolations() {
        List<String> v = new ArrayList<>();
        int onlineRunning = 0;
        int onlineWaiting = 0;
        int suspending = 0;
        for (int i = 0; i < ids.length; i++) {
            TenantPhase p = phases[i];
            if (classes[i] == PriorityClass.ONLINE) {
                if (p != TenantPhase.IDLE && p != TenantPhase.WAITING && p != TenantPhase.RUNNING) {
                    v.add("online tenant " + ids[i] + " in offline-only phase " + p);
                }
                onlineRunning += p == TenantPhase.RUNNING ? 1 : 0;
                onlineWaiting += p == TenantPhase.WAITING ? 1 : 0;
            } else {
                if (p == TenantPhase.WAITING) {
                    v.add("offline tenant " + ids[i] + " in online-only phase WAITING");
                }
                suspending += p == TenantPhase.SUSPENDING ? 1 : 0;
                boolean onGpuSide = p == TenantPhase.READY || p == TenantPhase.RUNNING;
                boolean held = p == TenantPhase.SUSPENDING || p == TenantPhase.SUSPENDED;
                if (mode == GpuMode.OFFLINE && held) {
                    v.add("offline tenant " + ids[i] + " is " + p + " in mode OFFLINE");
                }
                if (mode != GpuMode.OFFLINE && onGpuSide) {
                    v.add("offline tenant " + ids[i] + " is " + p + " in mode " + mode);
                }
                if (mode != GpuMode.PREEMPTING && p == TenantPhase.SUSPENDING) {
                    v.add("offline tenant " + ids[i] + " is SUSPENDING in mode " + mode);
                }
            }
        }
        switch (mode) {
            case OFFLINE -> {
                if (onlineRunning + onlineWaiting > 0) {
                    v.add("online work in mode OFFLINE");
                }
                if (timerAt != NO_TIMER) {
                    v.add("timer pending in mode OFFLINE");
                }
            }
            case PREEMPTING -> {
                if (onlineRunning > 0) {
                    v.add("online tenant RUNNING while PREEMPTING");
                }
                if (suspending == 0) {
                    v.add("PREEMPTING with nobody SUSPENDING");
                }
                if (timerAt == NO_TIMER) {
                    v.add("PREEMPTING without a deadline");
                }
            }
            case ONLINE -> {
                if (onlineRunning == 0) {
                    v.add("mode ONLINE with no online tenant RUNNING");
                }
                if (onlineWaiting > 0) {
                    v.add("online tenant WAITING in mode ONLINE");
                }
                if (timerAt != NO_TIMER) {
                    v.add("timer pending in mode ONLINE");
                }
            }
            case RELEASING -> {
                if (onlineRunning + onlineWaiting > 0) {
                    v.add("online work in mode RELEASING");
                }
                if (timerAt == NO_TIMER) {
                    v.add("RELEASING without a release timer");
                }
            }
        }
        return v;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof PreemptionState s)) {
            return false;
        }
        return mode == s.mode && timerAt == s.timerAt && preemptStartedAt == s.preemptStartedAt
                && lastOnlineIdleAt == s.lastOnlineIdleAt && at == s.at && version == s.version
                && Arrays.equals(ids, s.ids) && Arrays.equals(classes, s.classes) && Arrays.equals(phases, s.phases)
                && Arrays.equals(since, s.since) && Arrays.equals(belowFrom, s.belowFrom) && idleGaps.equals(s.idleGaps);
    }

    @Override
    public int hashCode() {
        return Objects.hash(mode, timerAt, at, version, Arrays.hashCode(ids), Arrays.hashCode(phases));
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("PreemptionState[").append(mode).append(" at=").append(at)
                .append(" v=").append(version);
        if (timerAt != NO_TIMER) {
            sb.append(" timer=").append(timerAt);
        }
        for (int i = 0; i < ids.length; i++) {
            sb.append(' ').append(ids[i]).append('(').append(classes[i] == PriorityClass.ONLINE ? "on" : "off")
                    .append(")=").append(phases[i]);
        }
        return sb.append(']').toString();
    }

    static Map<String, Integer> indexOf(String[] ids) {
        Map<String, Integer> m = new HashMap<>(ids.length * 2);
        for (int i = 0; i < ids.length; i++) {
            m.put(ids[i], i);
        }
        return Collections.unmodifiableMap(m);
    }
}
