package io.qgpu.samples.inference;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A simulated GPU: one device that runs kernels one after another, in the order they were
 * submitted (a fair lock is its queue), each for its simulated duration on the real clock. Work from
 * all threads of the process shares it, as CUDA work from one process shares a GPU without MPS.
 *
 * <p>Thread safety: thread-safe.
 */
final class FakeGpu {
    private final ReentrantLock queue = new ReentrantLock(true);
    private final AtomicLong busyNanos = new AtomicLong();
    private final AtomicLong kernels = new AtomicLong();
    private final AtomicInteger running = new AtomicInteger();
    private final AtomicInteger mostAtOnce = new AtomicInteger();

    /** Queues a kernel of {@code nanos} and returns when it has run. */
    void run(long nanos) {
        queue.lock();
        try {
            mostAtOnce.accumulateAndGet(running.incrementAndGet(), Math::max);
            long start = System.nanoTime();
            long end = start + nanos;
            for (long left = nanos; left > 0; left = end - System.nanoTime()) {
                LockSupport.parkNanos(left);
            }
            busyNanos.addAndGet(System.nanoTime() - start);
            kernels.incrementAndGet();
            running.decrementAndGet();
        } finally {
            queue.unlock();
        }
    }

    long busyNanos() {
        return busyNanos.get();
    }

    /** The most kernels that ever ran at the same time (1 for a device that serializes). */
    int mostAtOnce() {
        return mostAtOnce.get();
    }

    long kernels() {
        return kernels.get();
    }
}
