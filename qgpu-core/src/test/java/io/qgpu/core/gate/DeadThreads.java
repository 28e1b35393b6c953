package io.qgpu.core.gate;

import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.concurrent.atomic.AtomicReference;

/** Runs work on a thread of its own that then dies: the owner thread of leases the gate may reclaim. */
final class DeadThreads {
    private DeadThreads() {
    }

    /** Runs {@code body} on a thread named {@code name} and waits for the thread to die. */
    static void onDeadThread(String name, ThrowingRunnable body) throws InterruptedException {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                body.run();
            } catch (Throwable e) {
                failure.set(e);
            }
        }, name);
        t.start();
        t.join();
        assertNull(failure.get());
    }

    interface ThrowingRunnable {
        void run() throws Exception;
    }
}
