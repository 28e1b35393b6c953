package io.qgpu.samples.djl;

import ai.djl.Model;
import ai.djl.inference.Predictor;
import io.qgpu.core.gate.GateClosedException;
import io.qgpu.djl.GateSession;
import io.qgpu.djl.QgpuDjl;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The offline batch job: worker threads predict batches of rows without end, each with a predictor of its own.
 * With the gate, each worker opens a {@link GateSession} of the offline tenant and its predictor checkpoints
 * the session's lease before every batch, where it waits while online work has the GPU.
 *
 * <p>Thread safety: start and stop from one thread; {@link #rows()} from any.
 */
final class OfflineJob {
    private final List<Thread> workers = new ArrayList<>();
    private final AtomicLong rows = new AtomicLong();
    private volatile boolean stop;

    OfflineJob(Model model, DemoConfig c, QgpuDjl offline) {
        for (int i = 0; i < c.offlineWorkers(); i++) {
            float[][] batch = Rows.make(c.offlineRows(), 256, 1000 + i);
            Thread t = new Thread(() -> {
                try (Predictor<float[][], float[][]> p = offline == null ? model.newPredictor(new Rows())
                        : offline.newPredictor(model, new Rows())) {
                    if (offline == null) {
                        while (!stop) {
                            p.predict(batch);
                            rows.addAndGet(batch.length);
                        }
                        return;
                    }
                    try (GateSession session = offline.openSession()) {
                        while (!stop) {
                            p.predict(batch);          // checkpoints the session's lease first
                            rows.addAndGet(batch.length);
                        }
                    }
                } catch (InterruptedException | GateClosedException e) {
                    // stopped
                } catch (Exception e) {
                    if (!stop) {
                        throw new IllegalStateException(e);
                    }
                }
            }, "offline-" + i);
            t.setDaemon(true);
            workers.add(t);
        }
    }

    void start() {
        workers.forEach(Thread::start);
    }

    long rows() {
        return rows.get();
    }

    void stop() throws InterruptedException {
        stop = true;
        for (Thread t : workers) {
            t.join();
        }
    }
}
