package io.qgpu.core.ledger;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuState;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.Reason;
import io.qgpu.api.Validate;
import io.qgpu.core.ledger.internal.Admission;
import io.qgpu.core.ledger.internal.HostAdmission;
import java.util.List;

/**
 * The ledger's admission rules as read-only checks, for schedulers that explain or pre-filter
 * before they ask {@link Ledger#reserve} (which applies exactly these rules again, atomically).
 *
 * <pre>{@code
 * NodeState ns = ledger.node("node-a").orElseThrow();
 * if (AdmissionRules.checkNode(ns.node(), claim).isEmpty()) {
 *     for (GpuState g : ns.gpus()) {
 *         List<Reason> why = AdmissionRules.checkGpu(g, claim, claim.memoryPerGpuBytes(), ledger.rules());
 *         // empty: this GPU can take one more slice of the claim now
 *     }
 * }
 * }</pre>
 *
 * <p>A GPU takes a slice when it is healthy, not kept for the other priority class, allowed by the
 * claim's model and UUID selectors, not held exclusively (and empty for an exclusive claim, whose
 * slice is the whole device memory), has the memory free, has the claim's class's guaranteed
 * compute left (requests of one class sum to at most 100), stays within
 * {@link GranularityRules#maxTenants} with one more tenant, holds nobody with the claim's
 * anti-affinity label, and, when it has holders, they carry the claim's exclusion label (or both
 * none). A node takes the claim's host resources when its free CPU and host memory cover them
 * ({@link #checkHost}). Each failure is one {@link Reason} with its {@link io.qgpu.api.ReasonCode}. Affinity spans
 * GPUs and is checked by the ledger itself.
 *
 * <p>Thread safety: stateless; safe from any thread.
 */
public final class AdmissionRules {

    private AdmissionRules() {
    }

    /**
     * Reasons {@code gpu} cannot take a slice of {@code memoryBytes} for {@code claim}; empty when it
     * can. For an exclusive claim pass the device's memory.
     */
    public static List<Reason> checkGpu(GpuState gpu, Claim claim, long memoryBytes, GranularityRules rules) {
        Validate.notNull("gpu", gpu);
        Validate.notNull("claim", claim);
        Validate.notNull("rules", rules);
        return Admission.checkGpu(gpu, claim, memoryBytes, rules);
    }

    /**
     * Reasons the node's free host resources cannot take the claim's CPU and host memory
     * ({@code INSUFFICIENT_CPU}, {@code INSUFFICIENT_HOST_MEMORY}); empty when they can. A resource
     * the node does not declare is not tracked there and never refuses. Pass
     * {@code NodeState.empty(node)} to ask whether the claim could ever fit.
     */
    public static List<Reason> checkHost(NodeState node, Claim claim) {
        Validate.notNull("node", node);
        Validate.notNull("claim", claim);
        return HostAdmission.check(node, claim);
    }

    /** Reasons the node as a whole cannot take the claim (its labels); empty when it can. */
    public static List<Reason> checkNode(Node node, Claim claim) {
        Validate.notNull("node", node);
        Validate.notNull("claim", claim);
        return Admission.checkNode(node, claim);
    }
}
