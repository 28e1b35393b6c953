package io.qgpu.core.preempt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.PriorityClass;
import io.qgpu.api.Ticker;
import io.qgpu.core.compute.ManualTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class PreemptionControllerTest {

    @Test
    void drivesTheMachineWithTheTickersTime() {
        ManualTicker clock = new ManualTicker(1_000);
        PreemptionController c = PreemptionController.create(PreemptionConfig.ofDefaults(), clock);
        c.register("infer", PriorityClass.ONLINE);
        c.register("train", PriorityClass.OFFLINE);
        c.submit("train");
        c.start("train");
        clock.advance(500);
        Transition t = c.submit("infer");
        assertEquals(List.of(new Action.ModeChanged(GpuMode.OFFLINE, GpuMode.PREEMPTING, 1_500), new Action.Suspend("train", 1_500)),
                t.actions());
        clock.advance(200_000);
        t = c.suspended("train");
        assertEquals(new Action.RunOnline("infer", 201_500, 200_000), t.actions().get(1));
        clock.advance(10_000_000);
        c.idle("infer");
        long due = c.state().nextTimer().orElseThrow();
        assertEquals(clock.read() + 100_000_000, due);
        clock.set(due);
        t = c.tick();
        assertEquals(new Action.Resume("train", due), t.actions().get(1));
        assertEquals(GpuMode.OFFLINE, c.state().mode());
    }

    @Test
    void anIllegalEventCommitsNothing() {
        ManualTicker clock = new ManualTicker(0);
        PreemptionController c = PreemptionController.create(PreemptionConfig.ofDefaults(), clock);
        c.register("train", PriorityClass.OFFLINE);
        PreemptionState before = c.state();
        clock.advance(5);
        assertThrows(IllegalTransitionException.class, () -> c.start("train"));
        assertSame(before, c.state());
    }

    /**
     * Real threads hammer one controller. Events on a thread's own tenant that the table always
     * allows must never be refused (a lost update would make them illegal), every published state
     * keeps the invariants, and the version counts exactly the successful calls.
     */
    @Test
    void staysConsistentUnderContention() throws InterruptedException {
        PreemptionController c = PreemptionController.create(PreemptionConfig.custom()
                .preemptionBound(Duration.ofMillis(1)).releaseDelay(Duration.ZERO).build(), Ticker.system());
        int onlineThreads = 2;
        int offlineThreads = 2;
        int rounds = 20_000;
        for (int i = 0; i < onlineThreads; i++) {
            c.register("on" + i, PriorityClass.ONLINE);
        }
        for (int i = 0; i < offlineThreads; i++) {
            c.register("off" + i, PriorityClass.OFFLINE);
        }
        long registered = c.state().version();
        AtomicLong successes = new AtomicLong();
        AtomicBoolean onlineDone = new AtomicBoolean();
        ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        CountDownLatch onlineFinished = new CountDownLatch(onlineThreads);
        for (int i = 0; i < onlineThreads; i++) {
            String me = "on" + i;
            threads.add(new Thread(() -> {
                try {
                    go.await();
                    for (int r = 0; r < rounds; r++) {
                        record(c.submit(me), successes, failures);
                        record(c.idle(me), successes, failures);
                    }
                } catch (Throwable e) {
                    failures.add(me + ": " + e);
                } finally {
                    onlineFinished.countDown();
                }
            }));
        }
        for (int i = 0; i < offlineThreads; i++) {
            String me = "off" + i;
            threads.add(new Thread(() -> {
                try {
                    go.await();
                    while (!onlineDone.get()) {
                        TenantPhase p = c.state().phase(me).orElseThrow();
                        try {
                            Transition t = switch (p) {
                                case IDLE -> c.submit(me);
                                case READY -> c.start(me);
                                case RUNNING -> (System.nanoTime() & 1) == 0 ? c.stop(me) : c.idle(me);
                                case SUSPENDING -> c.suspended(me);
                                default -> c.tick();
                            };
                            record(t, successes, failures);
                        } catch (IllegalTransitionException raced) {
                            if (p == TenantPhase.IDLE) {
                                failures.add(me + ": submit from IDLE refused: " + raced.getMessage());
                            }
                        }
                    }
                } catch (Throwable e) {
                    failures.add(me + ": " + e);
                }
            }));
        }
        threads.forEach(Thread::start);
        go.countDown();
        onlineFinished.await();
        onlineDone.set(true);
        for (Thread t : threads) {
            t.join(60_000);
        }
        assertEquals(List.of(), new ArrayList<>(failures));
        PreemptionState end = c.state();
        assertEquals(List.of(), end.invariantViolations());
        assertEquals(registered + successes.get(), end.version(), "every successful call is one transition");
        assertTrue(successes.get() >= 4L * rounds);
    }

    private static void record(Transition t, AtomicLong successes, ConcurrentLinkedQueue<String> failures) {
        successes.incrementAndGet();
        List<String> v = t.state().invariantViolations();
        if (!v.isEmpty()) {
            failures.add(v + " in " + t.state());
        }
    }
}
