package io.qgpu.djl;

import static org.junit.jupiter.api.Assertions.*;

import ai.djl.Model;
import ai.djl.metric.Metrics;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.core.gate.Gate;
import io.qgpu.core.gate.GateConfig;
import io.qgpu.core.gate.GateEvent;
import io.qgpu.core.gate.GateTenantSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What the gate promises, through the DJL adapter, with the real model (ONNX Runtime on the CPU) computing and
 * the gate on a virtual clock: an online prediction waits for the offline slice in progress only, and each
 * tenant stays within its limit over every window (plus at most one slice).
 *
 * <p>Seeded bug, checked by hand: with the checkpoint between slices removed from
 * {@code GatedPredictor.batchPredict}, {@link #anOnlinePredictionWaitsForTheOfflineSliceInProgressOnly} fails
 * (the offline job starts its next slice while the online prediction still waits) and
 * {@link #anOfflineBatchStaysWithinItsLimitInEveryWindow} fails (the batch is never stopped at its limit: it
 * holds its lease through its whole 800 ms of slices, over its 500 ms limit).
 */
@Timeout(60) // a hang guard only
class GatePromisesOnTheModelTest {

    private static final long MS = 1_000_000L;

    @Test
    void anOnlinePredictionWaitsForTheOfflineSliceInProgressOnly() throws Exception {
        VirtualGpu v = new VirtualGpu();
        Gate gate = v.gate(GateConfig.custom().preemptionBound(Duration.ofSeconds(1)).releaseDelay(Duration.ofMillis(100)));
        List<GateEvent> events = new CopyOnWriteArrayList<>();
        gate.addListener(events::add);
        QgpuDjl chat = QgpuDjl.create(gate, GateTenantSpec.online("chat").build());
        QgpuDjl batch = QgpuDjl.create(gate, GateTenantSpec.offline("batch").build());
        BlockingQueue<Integer> sliceStarts = new LinkedBlockingQueue<>();
        Semaphore go = new Semaphore(0);
        int[] slice = {0};
        try (Model model = OrtFixture.load();
             GatedPredictor<float[], float[]> offline = batch.newPredictor(model,
                     new Stepped(new OrtFixture.RowTranslator(), () -> {
                         sliceStarts.add(slice[0]++);
                         go.acquireUninterruptibly();
                     }));
             GatedPredictor<float[], float[]> online = chat.newPredictor(model, new OrtFixture.RowTranslator())) {
            offline.setSliceSize(2);
            Metrics metrics = new Metrics();
            online.setMetrics(metrics);
            List<float[]> rows = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                rows.add(OrtFixture.row(i));
            }
            CompletableFuture<List<float[]>> job = CompletableFuture.supplyAsync(() -> call(() -> offline.batchPredict(rows)), VirtualGpu.THREADS);
            assertEquals(0, sliceStarts.poll(10, TimeUnit.SECONDS));
            v.now.addAndGet(5 * MS);                         // slice 0 takes 5 ms
            go.release();
            assertEquals(1, sliceStarts.poll(10, TimeUnit.SECONDS));   // slice 1 runs, its lease running
            v.now.addAndGet(1 * MS);                         // 1 ms into slice 1 a request comes
            float[] request = OrtFixture.row(99);
            CompletableFuture<float[]> answer = CompletableFuture.supplyAsync(() -> call(() -> online.predict(request)), VirtualGpu.THREADS);
            await(() -> gate.waitingAcquires() == 1);
            v.now.addAndGet(4 * MS);                         // slice 1 ends 5 ms after it began
            go.release();
            await(() -> answer.isDone() || !sliceStarts.isEmpty());
            assertTrue(answer.isDone(), "the online prediction ran before the next offline slice started");
            assertTrue(sliceStarts.isEmpty());
            assertArrayEquals(OrtFixture.MLP.forward(request), answer.get(), 1e-5f);

            GateEvent.LeaseGranted granted = events.stream().filter(e -> e instanceof GateEvent.LeaseGranted g
                    && g.tenant().equals("chat")).map(GateEvent.LeaseGranted.class::cast).findFirst().orElseThrow();
            assertEquals(4 * MS, granted.waitedNanos(), "waited for the rest of the slice in progress: 4 of its 5 ms");
            assertEquals(4000.0, metrics.getMetric("QgpuGateWait").get(0).getValue().doubleValue(),
                    "reported in DJL's metrics, microseconds");
            assertEquals(1, metrics.getMetric("QgpuLease").size(), "and the time under the lease, once per call");
            assertEquals(1, events.stream().filter(e -> e instanceof GateEvent.Suspended s && s.tenant().equals("batch")
                    && s.reason() == GateEvent.SuspendReason.PREEMPTED).count());
            await(() -> gate.usage(batch.tenant()).parkedLeases() == 1);

            v.now.addAndGet(100 * MS);                       // the release delay passes: the job resumes
            v.timer.runDue();
            assertEquals(2, sliceStarts.poll(10, TimeUnit.SECONDS));
            go.release();
            List<float[]> out = job.get(10, TimeUnit.SECONDS);
            for (int i = 0; i < rows.size(); i++) {
                assertArrayEquals(OrtFixture.MLP.forward(rows.get(i)), out.get(i), 1e-5f);
            }
            assertEquals(0, gate.openLeases());
        } finally {
            gate.close();
        }
    }

    @Test
    void onlinePredictionsStayWithinTheirLimitInEveryWindow() throws Exception {
        VirtualGpu v = new VirtualGpu();
        Gate gate = v.gate(GateConfig.custom().policy(IsolationPolicy.ELASTIC).window(Duration.ofSeconds(1)));
        List<GateEvent> events = new CopyOnWriteArrayList<>();
        gate.addListener(events::add);
        QgpuDjl chat = QgpuDjl.create(gate, GateTenantSpec.online("chat").limit(30).build());
        try (Model model = OrtFixture.load();
             GatedPredictor<float[], float[]> online = chat.newPredictor(model, v.timed(new OrtFixture.RowTranslator(), 10 * MS))) {
            CompletableFuture<Void> worker = CompletableFuture.runAsync(() -> {
                for (int i = 0; i < 120; i++) {
                    float[] row = OrtFixture.row(i);
                    call(() -> online.predict(row));
                }
            }, VirtualGpu.THREADS);
            v.drive(worker, () -> gate.waitingAcquires() > 0);
            worker.get();
        } finally {
            gate.close();
        }
        assertEquals(120, v.periods.size());
        assertTrue(events.stream().anyMatch(e -> e instanceof GateEvent.QuotaExhausted), "the limit was reached");
        long allowed = 300 * MS + v.longestPeriod();
        assertTrue(v.maxInWindow(1000 * MS) <= allowed, v.maxInWindow(1000 * MS) + " ns > " + allowed);
        // 1.2 s of work at 30% of each 1 s window cannot end in less than 3.2 s
        long span = v.periods.get(v.periods.size() - 1)[1] - v.periods.get(0)[0];
        assertTrue(span >= 3_200 * MS, "span " + span);
    }

    @Test
    void anOfflineBatchStaysWithinItsLimitInEveryWindow() throws Exception {
        VirtualGpu v = new VirtualGpu();
        Gate gate = v.gate(GateConfig.custom().policy(IsolationPolicy.ELASTIC).window(Duration.ofSeconds(1)));
        List<GateEvent> events = new CopyOnWriteArrayList<>();
        gate.addListener(events::add);
        QgpuDjl batch = QgpuDjl.create(gate, GateTenantSpec.offline("batch").limit(50).build());
        List<float[]> rows = new ArrayList<>();
        for (int i = 0; i < 80; i++) {
            rows.add(OrtFixture.row(i));
        }
        List<float[]> out;
        try (Model model = OrtFixture.load();
             GatedPredictor<float[], float[]> offline = batch.newPredictor(model, v.timed(new OrtFixture.RowTranslator(), 10 * MS))) {
            offline.setSliceSize(1);
            CompletableFuture<List<float[]>> worker = CompletableFuture.supplyAsync(() -> call(() -> offline.batchPredict(rows)), VirtualGpu.THREADS);
            v.drive(worker, () -> gate.waitingAcquires() > 0 || gate.usage(batch.tenant()).parkedLeases() > 0);
            out = worker.get();
        } finally {
            gate.close();
        }
        assertEquals(80, v.periods.size(), "one forward pass per slice");
        assertTrue(events.stream().anyMatch(e -> e instanceof GateEvent.Suspended s
                && s.reason() == GateEvent.SuspendReason.QUOTA), "stopped at a checkpoint by its limit");
        long allowed = 500 * MS + v.longestPeriod();
        assertTrue(v.maxInWindow(1000 * MS) <= allowed, v.maxInWindow(1000 * MS) + " ns > " + allowed);
        for (int i = 0; i < rows.size(); i++) {
            assertArrayEquals(OrtFixture.MLP.forward(rows.get(i)), out.get(i), 1e-5f);
        }
    }

    interface Call<T> {
        T run() throws Exception;
    }

    static <T> T call(Call<T> c) {
        try {
            return c.run();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static void await(java.util.function.BooleanSupplier condition) {
        long hang = System.nanoTime() + 20_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > hang) {
                fail("condition not reached");
            }
            Thread.yield();
        }
    }
}
