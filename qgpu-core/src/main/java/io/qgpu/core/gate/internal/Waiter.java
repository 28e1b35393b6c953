package io.qgpu.core.gate.internal;

import io.qgpu.core.gate.GateTimer;
import java.util.concurrent.CompletableFuture;

/** A blocked acquire: a thread waiting on its tenant's condition, or an async future. Guarded by the gate's lock. */
final class Waiter {
    final CompletableFuture<LeaseImpl> future;
    final long startedAt;
    /** For a parked lease waiting to resume (an async checkpoint), the lease; else null. */
    final LeaseImpl resume;
    GateTimer.Task timeoutTask;
    boolean timedOut;

    Waiter(CompletableFuture<LeaseImpl> future, long startedAt) {
        this(future, startedAt, null);
    }

    Waiter(CompletableFuture<LeaseImpl> future, long startedAt, LeaseImpl resume) {
        this.future = future;
        this.startedAt = startedAt;
        this.resume = resume;
    }

    boolean isAsync() {
        return future != null;
    }
}
