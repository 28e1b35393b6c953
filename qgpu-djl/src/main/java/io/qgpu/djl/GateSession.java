package io.qgpu.djl;

import io.qgpu.core.gate.Lease;

/**
 * A stretch of GPU work of one thread under one lease of a {@link QgpuDjl}'s tenant. While a session is open
 * on a thread, every gated prediction of the same {@link QgpuDjl} on that thread runs under its lease and
 * calls {@link #checkpoint()} first, instead of acquiring a lease of its own: an offline loop holds one lease
 * for many batches and stops between them while online work has the GPU.
 *
 * <pre>{@code
 * try (GateSession session = djl.openSession()) {
 *     for (List<float[]> batch : batches) {
 *         predictor.batchPredict(batch);   // checkpoints the session's lease before it runs
 *     }
 * }
 * }</pre>
 *
 * <p>A session opened while another one of the same {@link QgpuDjl} is open on the thread is nested: it uses
 * the outer lease (after a checkpoint), and its {@link #close()} does nothing. Keep a session open only while
 * work runs: the lease's time counts as the tenant's GPU time while it is open and not parked.
 *
 * <p>Thread safety: {@link #close()} may be called from any thread and any number of times;
 * {@link #checkpoint()} is for the thread that opened it.
 */
public final class GateSession implements AutoCloseable {

    private final LeaseScope scope;
    private final Lease lease;
    private final boolean nested;
    private final long waitedNanos;
    private volatile boolean closed;

    GateSession(LeaseScope scope, Lease lease, boolean nested, long waitedNanos) {
        this.scope = scope;
        this.lease = lease;
        this.nested = nested;
        this.waitedNanos = waitedNanos;
    }

    /** The lease the work runs under (the outer session's for a nested one). */
    public Lease lease() {
        return lease;
    }

    /** Whether this session uses an outer session's lease. */
    public boolean isNested() {
        return nested;
    }

    /** How long opening it waited at the gate (gate ticker time): for the acquire, or the checkpoint if nested. */
    public long waitedNanos() {
        return waitedNanos;
    }

    /**
     * Call between units of work: returns at once while the tenant may go on, else holds the thread while
     * online work has the GPU (or the tenant's turn or quota is used up), its time not counting.
     *
     * @throws InterruptedException if interrupted while held; the lease stays open and parked
     */
    public void checkpoint() throws InterruptedException {
        lease.checkpoint();
    }

    /** Whether {@link #close()} was called (or, for a session that is not nested, its lease was closed). */
    public boolean isClosed() {
        return closed || (!nested && lease.isClosed());
    }

    /** Ends the session: closes its lease unless it is nested. Calling it again does nothing. */
    @Override
    public void close() {
        closed = true;
        if (!nested) {
            scope.ended(this);
            lease.close();
        }
    }
}
