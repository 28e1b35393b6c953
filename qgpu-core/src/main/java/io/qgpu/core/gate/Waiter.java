package io.qgpu.core.gate;

import java.util.concurrent.CompletableFuture;

/** A blocked acquire: a thread waiting on its tenant's condition, or an async future. Guarded by the gate's lock. */
final class Waiter {
    final CompletableFuture<Lease> future;
    final long startedAt;
    GateTimer.Task timeoutTask;
    boolean timedOut;

    Waiter(CompletableFuture<Lease> future, long startedAt) {
        this.future = future;
        this.startedAt = startedAt;
    }

    boolean isAsync() {
        return future != null;
    }
}
