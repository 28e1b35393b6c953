package io.qgpu.core.compute;

/**
 * What a release recorded: the hold, corrected for early return and measured overrun, and the quota
 * the tenant's next grant will have.
 *
 * <pre>{@code
 * ReleaseReport r = engine.release("job-a", overrunNanos);
 * r.usedNanos();        // counted as GPU time in the window
 * r.nextQuotaNanos();   // 0.5 * burst + 0.5 * previous quota, clamped
 * }</pre>
 *
 * @param tenant         who released
 * @param startNanos     start of the hold
 * @param endNanos       end of the hold as counted: the release time if earlier than the expiry,
 *                       else {@code min(release time, expiry + overrun)}
 * @param burstNanos     the burst the quota was adapted to
 * @param nextQuotaNanos the tenant's quota from now on
 *
 * <p>Thread safety: immutable.
 */
public record ReleaseReport(String tenant, long startNanos, long endNanos, long burstNanos, long nextQuotaNanos) {

    /** GPU time counted for this hold. */
    public long usedNanos() {
        return endNanos - startNanos;
    }
}
