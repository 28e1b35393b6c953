package io.qgpu.core.placement;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.NodeState;
import java.util.Locale;
import java.util.OptionalLong;

/**
 * The explanation line of a candidate's host resources: what the claim asks for and what the node has
 * free. Weight 0: host resources decide feasibility, not the score. Not exported.
 *
 * <p>Thread safety: stateless.
 */
final class HostTerms {

    static final String NAME = "host-resources";

    private HostTerms() {
    }

    /** The term for {@code claim} on {@code state}: value 1 (it fits, or the node would not be a candidate), weight 0. */
    static PlacementExplanation.Term term(NodeState state, Claim claim) {
        String why = "fits (not scored): CPU requested " + claim.host().cpuMillis() + " millicores, "
                + free(state.cpuMillisFree(), state.node().host().cpuMillis(), false) + "; host memory requested "
                + gib(claim.host().memoryBytes()) + ", " + free(state.hostMemoryFree(), state.node().host().memoryBytes(), true);
        return new PlacementExplanation.Term(PlacementExplanation.Level.NODE, NAME, 1.0, 0.0, why);
    }

    private static String free(OptionalLong free, OptionalLong capacity, boolean bytes) {
        if (free.isEmpty()) {
            return "not tracked on this node";
        }
        return bytes ? "free " + gib(free.getAsLong()) + " of " + gib(capacity.getAsLong())
                : "free " + free.getAsLong() + " of " + capacity.getAsLong() + " millicores";
    }

    private static String gib(long bytes) {
        return String.format(Locale.ROOT, "%.2f GiB", bytes / (double) GpuDevice.GIB);
    }
}
