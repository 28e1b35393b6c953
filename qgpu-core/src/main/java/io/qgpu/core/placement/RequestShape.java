package io.qgpu.core.placement;

import io.qgpu.api.Claim;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Validate;
import java.util.Set;

/**
 * The shape of one request as the fragmentation term sees it: how many GPUs, how much of each GPU
 * (compute percent, 100 for a whole GPU), how much host CPU, and which GPU models it may use.
 * Memory is not part of the shape: the fragmentation term measures GPU capacity in compute shares,
 * as the paper it follows measures it in thousandths of a GPU. A <b>host-only</b> shape (0 GPUs, share 0,
 * no models; {@link #hostOnly}) stands for requests that take host CPU only: no GPU capacity is usable
 * by them, so for such a shape all of a node's free GPU capacity counts as fragmentation (the paper's
 * experiments count CPU-only pods among their typical pods this way).
 *
 * <pre>{@code
 * RequestShape share = new RequestShape(1, 25, 4000, Set.of());          // a quarter of any GPU, 4 CPUs
 * RequestShape twoV100 = new RequestShape(2, 100, 16000, Set.of("V100"));  // two whole V100s
 * RequestShape cpuOnly = RequestShape.hostOnly(2000);                      // 2 CPUs, no GPU
 * RequestShape fromClaim = RequestShape.of(claim);
 * }</pre>
 *
 * @param gpus           GPUs asked for (>= 0; 0 only for a host-only shape)
 * @param computePercent share of each GPU, 1..100 (100: the whole GPU); 0 exactly when {@code gpus} is 0
 * @param cpuMillis      host CPU in millicores (>= 0)
 * @param models         GPU models it may run on; empty means any
 *
 * <p>Thread safety: immutable.
 */
public record RequestShape(int gpus, int computePercent, long cpuMillis, Set<String> models) {

    public RequestShape {
        Validate.between("requestShape.gpus", gpus, 0, 1024);
        if (gpus == 0) {
            if (computePercent != 0) {
                throw new InvalidValueException("requestShape.computePercent", computePercent, "must be 0 for a host-only shape (gpus 0)");
            }
        } else {
            Validate.between("requestShape.computePercent", computePercent, 1, 100);
        }
        if (cpuMillis < 0) {
            throw new InvalidValueException("requestShape.cpuMillis", cpuMillis, "must be >= 0");
        }
        models = Set.copyOf(Validate.notNull("requestShape.models", models));
        if (gpus == 0 && !models.isEmpty()) {
            throw new InvalidValueException("requestShape.models", models, "must be empty for a host-only shape (gpus 0)");
        }
    }

    /** A host-only shape: {@code cpuMillis} of host CPU and no GPU. */
    public static RequestShape hostOnly(long cpuMillis) {
        return new RequestShape(0, 0, cpuMillis, Set.of());
    }

    /** Whether this shape asks no GPU. */
    public boolean isHostOnly() {
        return gpus == 0;
    }

    /**
     * The shape of a claim: its GPU count, its compute request per GPU (100 when exclusive; a
     * zero request counts as 1, the least share a tenant holds), its host CPU and its allowed models;
     * for a host-only claim (no GPU), {@link #hostOnly} of its CPU.
     */
    public static RequestShape of(Claim claim) {
        if (claim.gpuCount() == 0) {
            return hostOnly(claim.host().cpuMillis());
        }
        int share = claim.exclusive() ? 100 : Math.max(1, Math.min(100, claim.computeRequest()));
        return new RequestShape(claim.gpuCount(), share, claim.host().cpuMillis(), claim.selectors().includeModels());
    }

    /**
     * The record's own equality, written out: the {@link RequestSample} looks a shape up twice per claim
     * the engine is asked to place, and the generated method went through a chain of method handles.
     */
    @Override
    public boolean equals(Object o) {
        return o instanceof RequestShape r && gpus == r.gpus && computePercent == r.computePercent
                && cpuMillis == r.cpuMillis && models.equals(r.models);
    }

    /**
     * The record's own hash, written out, to the same value ({@code 31 * h + component} over the
     * components in order, from 0), so that maps of shapes keep their order.
     */
    @Override
    public int hashCode() {
        return 31 * (31 * (31 * gpus + computePercent) + Long.hashCode(cpuMillis)) + models.hashCode();
    }

    /** Whether a GPU of {@code model} may serve this shape. */
    boolean allows(String model) {
        return models.isEmpty() || models.contains(model);
    }
}
