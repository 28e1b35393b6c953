package io.qgpu.core.gate;

import io.qgpu.core.preempt.GpuMode;

/**
 * What a {@link Gate} reports to its {@link GateListener}s: queue waits, grants, preemptions and
 * usage. Events are built only while at least one listener is registered, so an unobserved gate pays
 * nothing for them. Times are nanoseconds of the gate's {@link io.qgpu.api.Ticker}.
 *
 * <pre>{@code
 * gate.addListener(e -> {
 *     if (e instanceof GateEvent.LeaseGranted g) {
 *         queueWait.record(g.waitedNanos());
 *     } else if (e instanceof GateEvent.Suspended s) {
 *         preemptions.increment();
 *     }
 * });
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public sealed interface GateEvent {

    /** The GPU the gate is bound to. */
    String gpu();

    /** When it happened. */
    long atNanos();

    /** A lease was granted after waiting {@code waitedNanos} in the gate's queue (0 on the fast path). */
    record LeaseGranted(String gpu, String tenant, long atNanos, long waitedNanos) implements GateEvent {
    }

    /** A lease was closed after {@code heldNanos}, parked time included. */
    record LeaseReleased(String gpu, String tenant, long atNanos, long heldNanos) implements GateEvent {
    }

    /** Why an acquire gave up. */
    enum Abandon {
        /** Its timeout passed. */
        TIMEOUT,
        /** Its thread was interrupted. */
        INTERRUPTED,
        /** Its future was cancelled or completed by someone else. */
        CANCELLED,
        /** The gate was closed. */
        CLOSED
    }

    /** An acquire left the queue without a lease. */
    record AcquireAbandoned(String gpu, String tenant, long atNanos, long waitedNanos, Abandon reason)
            implements GateEvent {
    }

    /** Why a lease was held at a checkpoint. */
    enum SuspendReason {
        /** Online work preempted this offline tenant. */
        PREEMPTED,
        /** Another offline tenant's turn: the tenant's grant of the GPU token ended. */
        GRANT_ENDED,
        /** The tenant used its limit in the sliding window. */
        QUOTA,
        /**
         * The future of an async checkpoint was cancelled after the gate had resumed the lease: the
         * lease is parked again, as the cancellation asked.
         */
        CHECKPOINT_CANCELLED
    }

    /** A lease stopped at a checkpoint: the working thread saw the suspension and now waits. */
    record Suspended(String gpu, String tenant, long atNanos, SuspendReason reason) implements GateEvent {
    }

    /** A lease held at a checkpoint goes on after {@code suspendedNanos}. */
    record Resumed(String gpu, String tenant, long atNanos, long suspendedNanos) implements GateEvent {
    }

    /**
     * The preemption bound passed before {@code tenant}'s running leases reached a checkpoint: online
     * work runs anyway, next to the offline slice that overran; the slice stops at its next checkpoint.
     */
    record ForcedSuspension(String gpu, String tenant, long atNanos) implements GateEvent {
    }

    /** The GPU's mode changed (offline, preempting, online, releasing). */
    record ModeChanged(String gpu, GpuMode from, GpuMode to, long atNanos) implements GateEvent {
    }

    /** A tenant reached its limit in the window and waits until {@code retryAtNanos} or later. */
    record QuotaExhausted(String gpu, String tenant, long atNanos, long usageNanos, long limitNanos,
                          long retryAtNanos) implements GateEvent {
    }

    /** Periodic usage of one tenant: lease time in the window, and after the NVML correction. */
    record UsageReport(String gpu, String tenant, long atNanos, long usageNanos, long correctedUsageNanos,
                       long windowNanos, double correctionFactor) implements GateEvent {
        /** Corrected usage divided by the window. */
        public double share() {
            return (double) correctedUsageNanos / windowNanos;
        }
    }

    /** Leases whose owner thread died were closed by the gate. */
    record LeaseReclaimed(String gpu, String tenant, long atNanos, String ownerThread, int leases)
            implements GateEvent {
    }
}
