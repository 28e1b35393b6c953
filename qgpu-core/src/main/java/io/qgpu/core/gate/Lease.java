package io.qgpu.core.gate;

import java.util.concurrent.CompletableFuture;

/**
 * The right to run one unit of GPU work (a batch, a kernel sequence) for a tenant of a {@link Gate}.
 * Close it when the work is done; offline work runs in bounded slices and calls
 * {@link #checkpoint()} between them, which holds the thread while online work has the GPU (or the
 * tenant's turn or quota is used up) and returns when it may go on. Only the gate implements it (the
 * interface is sealed).
 *
 * <pre>{@code
 * try (Lease lease = gate.acquire(train)) {
 *     for (Batch b : epoch) {
 *         runSlice(b);          // one bounded slice of GPU work
 *         lease.checkpoint();   // blocks while online work runs
 *     }
 * }
 * }</pre>
 *
 * <p>Each acquire returns a new lease object and a lease object is never handed out again: once
 * closed, it stays closed. Closing it again, from any thread and at any time, does nothing and never
 * touches a later lease of the same thread or tenant. A lease from {@link Gate#acquire} belongs to
 * the thread that acquired it: if that thread dies with the lease open, the gate reclaims it after
 * {@link GateConfig#deadOwnerTimeoutNanos()} (a checkpoint future of the reclaimed lease then fails
 * with {@link GateStateException}). A lease from {@link Gate#acquireAsync} belongs to no thread.
 *
 * <p>Thread safety: thread-safe; {@link #close()} may be called from any thread, concurrently with
 * itself. {@link #checkpoint()} is meant for the thread doing the work.
 */
public sealed interface Lease extends AutoCloseable permits GateLease {

    /** The tenant this lease runs work for. */
    Tenant tenant();

    /** When the lease was acquired (gate ticker time). */
    long acquiredAtNanos();

    /** Whether {@link #close()} was called (or the gate reclaimed the lease). */
    boolean isClosed();

    /**
     * Whether the next {@link #checkpoint()} has to consult the gate now (its permit ran out: online
     * work claimed the GPU, the tenant's turn ended while another tenant waits, or the quota computed
     * at the last consultation is used up). The checkpoint may still let the lease go on after
     * recomputing. Never blocks.
     */
    boolean shouldYield();

    /**
     * Call between slices of work. Returns at once while the tenant may go on (a volatile read and a
     * ticker read); otherwise stops the lease (its time no longer counts), waits until the tenant may
     * run again, and returns.
     *
     * @throws InterruptedException if the thread is interrupted while waiting; the lease stays
     *                              stopped and open (close it, or call checkpoint again to wait again)
     * @throws GateStateException   if the lease is closed, also when another thread closes it while
     *                              this call waits (it then wakes and throws)
     * @throws GateClosedException  if the gate is closed
     */
    void checkpoint() throws InterruptedException;

    /**
     * The non-blocking form of {@link #checkpoint()} for asynchronous pipelines: returns a completed
     * future while the tenant may go on; otherwise stops the lease and returns a future that
     * completes (with this lease) when it may run again, or fails with {@link GateClosedException}
     * if the gate closes first, or with {@link GateStateException} if the lease is closed meanwhile.
     * Cancelling the future withdraws the request: the lease stays stopped
     * (and open) and may ask again. Do not run GPU work while the future is pending.
     *
     * @throws GateStateException  if the lease is closed or already waiting
     * @throws GateClosedException if the gate is closed
     */
    CompletableFuture<Lease> checkpointAsync();

    /**
     * Ends the lease. Calling it again, from any thread, does nothing: a closed lease stays closed and
     * its object is never reused for another lease.
     */
    @Override
    void close();
}
