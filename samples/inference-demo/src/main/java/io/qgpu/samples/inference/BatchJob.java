package io.qgpu.samples.inference;

import io.qgpu.core.gate.Gate;
import io.qgpu.core.gate.GateClosedException;
import io.qgpu.core.gate.Lease;
import io.qgpu.core.gate.Tenant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An offline batch job (training, preprocessing): worker threads run bounded slices on the shared
 * {@link FakeGpu} without end; with a gate, each worker holds a lease of the offline tenant and calls
 * {@link Lease#checkpoint()} between slices, where it waits while online work has the GPU.
 *
 * <p>Thread safety: start and stop from one thread; {@link #slices()} from any.
 */
final class BatchJob {
    private final List<Thread> workers = new ArrayList<>();
    private final AtomicLong slices = new AtomicLong();
    private volatile boolean stop;

    BatchJob(FakeGpu gpu, int threads, long sliceNanos, Gate gate, Tenant offline) {
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(() -> {
                if (gate == null) {
                    while (!stop) {
                        gpu.run(sliceNanos);
                        slices.incrementAndGet();
                    }
                    return;
                }
                try (Lease lease = gate.acquire(offline)) {
                    while (!stop) {
                        gpu.run(sliceNanos);
                        slices.incrementAndGet();
                        lease.checkpoint();
                    }
                } catch (InterruptedException | GateClosedException e) {
                    // stopped
                }
            }, "batch-" + i);
            t.setDaemon(true);
            workers.add(t);
        }
    }

    void start() {
        workers.forEach(Thread::start);
    }

    long slices() {
        return slices.get();
    }

    void stop() throws InterruptedException {
        stop = true;
        for (Thread t : workers) {
            t.interrupt();
            t.join();
        }
    }
}
