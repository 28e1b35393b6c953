package io.qgpu.core.ledger.internal;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuState;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Holding;
import io.qgpu.api.HostState;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Slice;
import java.util.ArrayList;
import java.util.List;

/**
 * The ledger's admission rules as pure functions: whether a GPU can take one more slice, and the
 * next state of a node after a reservation. The placement engine filters with the same functions,
 * so what it proposes is exactly what the ledger accepts. Not exported: callers outside the module
 * use the read-only checks through {@code io.qgpu.core.ledger.AdmissionRules}.
 *
 * <p>A GPU takes a slice when all of these hold (each failure is one {@link Reason}):
 * <ul>
 *   <li>it is healthy ({@code UNHEALTHY});</li>
 *   <li>it is not kept for the other priority class ({@code RESERVED_FOR_OTHER_CLASS});</li>
 *   <li>the claim's GPU model and UUID selectors allow it ({@code MODEL_NOT_SELECTED},
 *       {@code UUID_NOT_SELECTED});</li>
 *   <li>nobody holds it exclusively, and for an exclusive claim it is empty ({@code EXCLUSIVE});</li>
 *   <li>free memory covers the slice ({@code INSUFFICIENT_MEMORY});</li>
 *   <li>the claim's class has enough guaranteed compute left: the sum of requests of one class never
 *       exceeds 100 ({@code INSUFFICIENT_COMPUTE});</li>
 *   <li>unless {@link GranularityRules#admitZeroRequestOnBookedGpu()}: no tenant with compute request
 *       0 ends up on a GPU whose guaranteed compute for its class is fully booked, where it would
 *       starve: a zero-request claim needs 1% of its class left, and a claim may not book the last
 *       percent next to a zero-request tenant of its class ({@code INSUFFICIENT_COMPUTE});</li>
 *   <li>one more tenant stays within {@link GranularityRules#maxTenants(GpuDevice)} ({@code TOO_MANY_TENANTS});
 *       for a MIG instance ({@link GpuDevice#migInstance()}) that is 1, unless
 *       {@link GranularityRules#shareMigInstances()}: an instance in use is refused with
 *       {@code MIG_INSTANCE_IN_USE};</li>
 *   <li>no holder has the claim's anti-affinity label ({@code ANTI_AFFINITY});</li>
 *   <li>if the GPU has holders, they carry the claim's exclusion label, or both have none ({@code EXCLUSION}).</li>
 * </ul>
 * The node takes the claim's host resources when its free CPU and host memory cover them, for each
 * resource the node tracks ({@code INSUFFICIENT_CPU}, {@code INSUFFICIENT_HOST_MEMORY}; see
 * {@link HostAdmission}); they are installed in the same new node state as the slices, so the one
 * compare-and-set that commits the slices commits the host resources too.
 * Affinity spans GPUs and is enforced by the ledger itself ({@link Reservations}).
 *
 * <p>Thread safety: stateless.
 */
public final class Admission {

    private Admission() {
    }

    /** Outcome of {@link #reserve}. */
    public sealed interface Result {
    }

    /** The node state after the reservation. */
    public record Admitted(NodeState next) implements Result {
    }

    /** Why the reservation cannot be made. */
    public record Rejected(List<Reason> reasons) implements Result {
        public Rejected {
            reasons = List.copyOf(reasons);
        }
    }

    /**
     * Reasons {@code gpu} cannot take a slice of {@code memoryBytes} for {@code claim}; empty when it can.
     * For an exclusive claim pass the device's memory.
     */
    public static List<Reason> checkGpu(GpuState gpu, Claim claim, long memoryBytes, GranularityRules rules) {
        List<Reason> reasons = null;
        GpuDevice d = gpu.device();
        String id = d.uuid();
        if (!d.healthy()) {
            reasons = add(reasons, Reason.of(ReasonCode.UNHEALTHY, id, "GPU is unhealthy"));
        }
        if (d.reservedFor().isPresent() && d.reservedFor().get() != claim.priority()) {
            reasons = add(reasons, Reason.of(ReasonCode.RESERVED_FOR_OTHER_CLASS, id,
                    "kept for " + d.reservedFor().get().wireName() + " tenants"));
        }
        if (!claim.selectors().allowsModel(d)) {
            reasons = add(reasons, Reason.of(ReasonCode.MODEL_NOT_SELECTED, id, "model " + d.model()));
        }
        if (!claim.selectors().allowsUuid(d)) {
            reasons = add(reasons, Reason.of(ReasonCode.UUID_NOT_SELECTED, id, "uuid not selected"));
        }
        if (gpu.heldExclusively()) {
            reasons = add(reasons, Reason.of(ReasonCode.EXCLUSIVE, id, "held exclusively"));
        } else if (claim.exclusive() && !gpu.isEmpty()) {
            reasons = add(reasons, Reason.shortOf(ReasonCode.EXCLUSIVE, id, 0, gpu.tenants()));
        }
        if (claim.exclusive() && memoryBytes != d.memoryBytes()) {
            reasons = add(reasons, new Reason(ReasonCode.EXCLUSIVE, id, memoryBytes, d.memoryBytes(),
                    "an exclusive slice holds the whole device memory"));
        }
        if (memoryBytes > gpu.memoryFree()) {
            reasons = add(reasons, Reason.shortOf(ReasonCode.INSUFFICIENT_MEMORY, id, memoryBytes, gpu.memoryFree()));
        }
        PriorityClass p = claim.priority();
        if (claim.computeRequest() > gpu.computeFree(p)) {
            reasons = add(reasons, new Reason(ReasonCode.INSUFFICIENT_COMPUTE, id, claim.computeRequest(),
                    gpu.computeFree(p), p.wireName() + " guaranteed compute, percent"));
        } else if (!rules.admitZeroRequestOnBookedGpu()) {
            Reason starves = zeroRequestStarves(gpu, claim);
            if (starves != null) {
                reasons = add(reasons, starves);
            }
        }
        int max = rules.maxTenants(d);
        if (gpu.tenants() + 1 > max) {
            reasons = add(reasons, rules.keepsWhole(d)
                    ? Reason.of(ReasonCode.MIG_INSTANCE_IN_USE, id, "a MIG instance is a whole device and this one"
                            + " holds " + gpu.tenants() + (gpu.tenants() == 1 ? " tenant" : " tenants")
                            + " (the granularity rule shareMigInstances lets tenants share an instance)")
                    : new Reason(ReasonCode.TOO_MANY_TENANTS, id, 1, max - gpu.tenants(), "at most " + max + " tenants"));
        }
        if (claim.locality().antiAffinity().isPresent() && gpu.hasAntiAffinity(claim.locality().antiAffinity().get())) {
            reasons = add(reasons, Reason.of(ReasonCode.ANTI_AFFINITY, id,
                    "holds a tenant labelled " + claim.locality().antiAffinity().get()));
        }
        if (!gpu.isEmpty() && !gpu.exclusionLabel().equals(claim.locality().exclusion())) {
            reasons = add(reasons, Reason.of(ReasonCode.EXCLUSION, id, "dedicated to exclusion label "
                    + gpu.exclusionLabel().orElse("(none)") + ", claim has " + claim.locality().exclusion().orElse("(none)")));
        }
        return reasons == null ? List.of() : reasons;
    }

    /**
     * The zero-request rule: a tenant with compute request 0 of a class on a GPU whose guaranteed
     * compute for that class is fully booked would starve behind the guaranteed tenants. So a
     * zero-request claim needs at least 1% of its class left, and a claim that would book its class's
     * last percent is refused while a zero-request tenant of that class holds the GPU. Both keep the
     * state invariant "no zero-request tenant on a GPU whose guaranteed compute for its class is at
     * 100%", whatever the order of admissions. Null when the claim passes.
     */
    private static Reason zeroRequestStarves(GpuState gpu, Claim claim) {
        PriorityClass p = claim.priority();
        int free = gpu.computeFree(p);
        String id = gpu.device().uuid();
        if (claim.computeRequest() == 0 && free <= 0) {
            return new Reason(ReasonCode.INSUFFICIENT_COMPUTE, id, 0, free, p.wireName()
                    + " guaranteed compute is fully booked: a tenant with request 0 would starve"
                    + " (the granularity rule admitZeroRequestOnBookedGpu admits it)");
        }
        if (!claim.exclusive() && claim.computeRequest() > 0 && claim.computeRequest() == free && holdsZeroRequest(gpu, p)) {
            return new Reason(ReasonCode.INSUFFICIENT_COMPUTE, id, claim.computeRequest(), free - 1, p.wireName()
                    + " guaranteed compute: booking the last " + free + "% would starve the tenant(s) with request 0"
                    + " here (the granularity rule admitZeroRequestOnBookedGpu admits it)");
        }
        return null;
    }

    /** Whether a tenant of class {@code p} with compute request 0 holds the GPU. */
    public static boolean holdsZeroRequest(GpuState gpu, PriorityClass p) {
        for (Holding h : gpu.holdings()) {
            if (h.computeRequest() == 0 && h.priority() == p) {
                return true;
            }
        }
        return false;
    }

    /** Reasons the node as a whole cannot take the claim (node labels); empty when it can. */
    public static List<Reason> checkNode(Node node, Claim claim) {
        if (!claim.selectors().matchesNode(node)) {
            return List.of(Reason.of(ReasonCode.NODE_LABELS_MISMATCH, node.name(),
                    "needs " + claim.selectors().nodeLabels()));
        }
        return List.of();
    }

    /**
     * The pure next-state function: {@code state} with the placement's slices added, or the reasons
     * it cannot be. Checks the granularity rules, the node and every GPU of the placement.
     */
    public static Result reserve(NodeState state, Placement placement, GranularityRules rules) {
        Claim claim = placement.claim();
        List<Reason> reasons = new ArrayList<>();
        try {
            rules.validate(claim);
        } catch (InvalidValueException e) {
            reasons.add(Reason.of(ReasonCode.GRANULARITY, claim.tenantId(), e.getMessage()));
            return new Rejected(reasons);
        }
        if (!state.name().equals(placement.nodeName())) {
            reasons.add(Reason.of(ReasonCode.UNKNOWN_TARGET, placement.nodeName(), "placement is for another node"));
            return new Rejected(reasons);
        }
        reasons.addAll(checkNode(state.node(), claim));
        GpuState[] next = state.gpus().toArray(new GpuState[0]);
        for (Slice s : placement.slices()) {
            int pos = state.node().positionOf(s.gpuUuid());
            if (pos < 0) {
                reasons.add(Reason.of(ReasonCode.UNKNOWN_TARGET, s.gpuUuid(), "no such GPU on node " + state.name()));
                continue;
            }
            List<Reason> gpuReasons = checkGpu(next[pos], claim, s.memoryBytes(), rules);
            if (gpuReasons.isEmpty()) {
                next[pos] = next[pos].with(Holding.of(placement, s));
            } else {
                reasons.addAll(gpuReasons);
            }
        }
        reasons.addAll(HostAdmission.check(state, claim));
        if (!reasons.isEmpty()) {
            return new Rejected(reasons);
        }
        return new Admitted(new NodeState(state.node(), List.of(next), HostAdmission.with(state.host(), placement)));
    }

    /** The node state without the tenant's holdings (its GPU slices and its host resources). */
    // without() returns the same instance when the tenant held nothing there: identity is the "unchanged" test
    @SuppressWarnings("ReferenceEquality")
    public static NodeState release(NodeState state, String tenantId) {
        List<GpuState> next = new ArrayList<>(state.gpus().size());
        boolean changed = false;
        for (GpuState g : state.gpus()) {
            GpuState n = g.without(tenantId);
            changed |= n != g;
            next.add(n);
        }
        HostState host = state.host().without(tenantId);
        changed |= host != state.host();
        return changed ? new NodeState(state.node(), next, host) : state;
    }

    private static List<Reason> add(List<Reason> list, Reason r) {
        List<Reason> l = list == null ? new ArrayList<>(2) : list;
        l.add(r);
        return l;
    }
}
