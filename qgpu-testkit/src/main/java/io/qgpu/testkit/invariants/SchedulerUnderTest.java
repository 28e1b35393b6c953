package io.qgpu.testkit.invariants;

import io.qgpu.api.Claim;
import io.qgpu.api.PlacementResult;

/**
 * The two calls the checkers need from any scheduler: place a claim, release a tenant. Adapt your
 * scheduler with a few lines; the contract suite and {@link Replay} drive it.
 *
 * <pre>{@code
 * SchedulerUnderTest adapter = new SchedulerUnderTest() {
 *     public PlacementResult place(Claim claim) { return myScheduler.schedule(claim); }
 *     public void release(String tenantId) { myScheduler.free(tenantId); }
 * };
 * }</pre>
 *
 * <p>Thread safety: the checkers call an instance from one thread at a time.
 */
public interface SchedulerUnderTest {

    /** Places the claim and commits it, or answers why not. Must not throw for a claim on the grid. */
    PlacementResult place(Claim claim);

    /** Releases the tenant; releasing an unknown or already released tenant does nothing. */
    void release(String tenantId);

    /** qgpu's own placement engine as a scheduler under test. */
    static SchedulerUnderTest of(io.qgpu.core.placement.PlacementEngine engine) {
        return new SchedulerUnderTest() {
            @Override
            public PlacementResult place(Claim claim) {
                return engine.place(claim);
            }

            @Override
            public void release(String tenantId) {
                engine.release(tenantId);
            }
        };
    }
}
