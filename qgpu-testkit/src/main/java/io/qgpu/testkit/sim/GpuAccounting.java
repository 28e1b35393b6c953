package io.qgpu.testkit.sim;

import io.qgpu.core.preempt.GpuMode;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * What one simulated GPU measures about itself: time per mode, the time offline work had work and
 * could run or was held back, waits, release and resume delays (package-internal, single-threaded).
 */
final class GpuAccounting {

    /** The GPU entered {@code mode} at {@code at}. */
    private record ModeChange(long at, GpuMode mode) {
    }

    private final List<ModeChange> modeTimeline = new ArrayList<>();
    final LongList preemptionWaits = new LongList();
    /** Every online submission: until its work really ran (preemption, a kernel in flight, the switch). */
    final LongList onlineWaits = new LongList();
    final LongList releaseDelays = new LongList();
    final LongList resumeDelays = new LongList();
    long forced;
    long switches;
    long policyHeldNanos;
    /** Time in mode RELEASING while some offline tenant had work: the GPU idle in the release delay. */
    long releaseIdleNanos;

    private GpuMode currentMode = GpuMode.OFFLINE;
    private int offlineWithWork;
    private long accountedTo;
    private long offlineDemandNanos;
    /** The compute engine answered WaitUntil: every waiting offline tenant is held back by its policy. */
    private boolean policyHolding;

    GpuAccounting() {
        modeTimeline.add(new ModeChange(0, GpuMode.OFFLINE));
    }

    void mode(GpuMode to, long at) {
        account(at);
        currentMode = to;
        modeTimeline.add(new ModeChange(at, to));
    }

    void offlineWork(int delta, long at) {
        account(at);
        offlineWithWork += delta;
    }

    void policyHolding(boolean holding, long at) {
        if (holding != policyHolding) {
            account(at);
            policyHolding = holding;
        }
    }

    void account(long at) {
        long dt = at - accountedTo;
        if (offlineWithWork > 0) {
            if (currentMode == GpuMode.OFFLINE) {
                if (policyHolding) {
                    policyHeldNanos += dt;
                } else {
                    offlineDemandNanos += dt;
                }
            } else if (currentMode == GpuMode.RELEASING) {
                releaseIdleNanos += dt;
            }
        }
        accountedTo = at;
    }

    Map<GpuMode, Long> modeNanos(long end) {
        Map<GpuMode, Long> m = new EnumMap<>(GpuMode.class);
        for (GpuMode g : GpuMode.values()) {
            m.put(g, 0L);
        }
        for (int i = 0; i < modeTimeline.size(); i++) {
            long from = modeTimeline.get(i).at();
            long to = i + 1 < modeTimeline.size() ? modeTimeline.get(i + 1).at() : end;
            GpuMode mode = modeTimeline.get(i).mode();
            m.merge(mode, Math.max(0, Math.min(to, end) - Math.min(from, end)), Long::sum);
        }
        return m;
    }

    /**
     * Offline GPU time while in mode OFFLINE, and the time in mode OFFLINE while offline tenants had
     * work that their policy let them run.
     */
    double[] offlineUseOfOfflineMode(long end, List<BusyLog> offline) {
        double used = 0;
        for (int i = 0; i < modeTimeline.size(); i++) {
            if (modeTimeline.get(i).mode() != GpuMode.OFFLINE) {
                continue;
            }
            long from = Math.min(modeTimeline.get(i).at(), end);
            long to = i + 1 < modeTimeline.size() ? Math.min(modeTimeline.get(i + 1).at(), end) : end;
            for (BusyLog log : offline) {
                used += log.gpuNanosBetween(from, to);
            }
        }
        return new double[] {used, offlineDemandNanos};
    }
}
