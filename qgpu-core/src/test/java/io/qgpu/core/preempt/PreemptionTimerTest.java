package io.qgpu.core.preempt;

import static io.qgpu.api.PriorityClass.OFFLINE;
import static io.qgpu.api.PriorityClass.ONLINE;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.qgpu.core.preempt.PreemptionEvent.Idle;
import io.qgpu.core.preempt.PreemptionEvent.Register;
import io.qgpu.core.preempt.PreemptionEvent.Start;
import io.qgpu.core.preempt.PreemptionEvent.Submit;
import io.qgpu.core.preempt.PreemptionEvent.Suspended;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/**
 * Timers far in the future saturate instead of wrapping into the past, and a pending timer is never
 * confused with "no timer".
 */
class PreemptionTimerTest {

    private static final long T = 1_000L;

    private static PreemptionState step(PreemptionMachine m, PreemptionState s, PreemptionEvent e) {
        Transition t = m.next(s, e);
        assertEquals(List.of(), t.state().invariantViolations(), "after " + e);
        return t.state();
    }

    private static PreemptionState offlineRunningThenOnlineSubmits(PreemptionMachine m) {
        PreemptionState s = m.initial(0);
        s = step(m, s, new Register(0, "infer", ONLINE));
        s = step(m, s, new Register(0, "train", OFFLINE));
        s = step(m, s, new Submit(0, "train"));
        s = step(m, s, new Start(0, "train"));
        return step(m, s, new Submit(T, "infer"));
    }

    @Test
    void aPreemptionBoundPastTheEndOfTimeGivesTheLatestTimerNotNoTimer() {
        PreemptionMachine m = PreemptionMachine.standard(new PreemptionConfig(Long.MAX_VALUE, 0));
        PreemptionState s = offlineRunningThenOnlineSubmits(m);
        assertEquals(GpuMode.PREEMPTING, s.mode());
        assertEquals(OptionalLong.of(Long.MAX_VALUE - 1), s.nextTimer());
        assertEquals(Long.MAX_VALUE - 1, s.nextTimerNanos());
    }

    @Test
    void aBoundThatEndsExactlyAtTheLastNanosecondIsKeptBelowNoTimer() {
        PreemptionMachine m = PreemptionMachine.standard(new PreemptionConfig(Long.MAX_VALUE - T, 0));
        assertEquals(OptionalLong.of(Long.MAX_VALUE - 1), offlineRunningThenOnlineSubmits(m).nextTimer());
    }

    @Test
    void anOrdinaryBoundIsAddedExactly() {
        PreemptionMachine m = PreemptionMachine.standard(new PreemptionConfig(5 * T, 0));
        assertEquals(OptionalLong.of(6 * T), offlineRunningThenOnlineSubmits(m).nextTimer());
    }

    @Test
    void aReleaseDelayPastTheEndOfTimeSaturates() {
        PreemptionMachine m = PreemptionMachine.standard(new PreemptionConfig(5 * T, Long.MAX_VALUE));
        PreemptionState s = offlineRunningThenOnlineSubmits(m);
        s = step(m, s, new Suspended(2 * T, "train"));
        s = step(m, s, new Idle(3 * T, "infer"));
        assertEquals(GpuMode.RELEASING, s.mode());
        assertEquals(OptionalLong.of(Long.MAX_VALUE - 1), s.nextTimer());
    }
}
