package io.qgpu.kubernetes.deviceplugin;

import io.qgpu.api.Placement;
import io.qgpu.api.Validate;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What one container got: the virtual ids the kubelet allocated, the physical GPU each is on, and the
 * qgpu placement behind them (the extender's, or the plugin's own).
 *
 * @param deviceIds the virtual ids, in request order
 * @param gpuOf     virtual id to physical GPU UUID; one distinct GPU per id
 * @param placement the placement (tenant, slices, limits)
 * @param pod       {@code namespace/name} of the pod whose extender annotation was applied; empty when
 *                  the plugin chose the GPUs itself
 *
 * <p>Thread safety: immutable.
 */
public record Allocation(List<String> deviceIds, Map<String, String> gpuOf, Placement placement, Optional<String> pod) {

    public Allocation {
        deviceIds = List.copyOf(Validate.notNull("allocation.deviceIds", deviceIds));
        gpuOf = Map.copyOf(Validate.notNull("allocation.gpuOf", gpuOf));
        Validate.notNull("allocation.placement", placement);
        Validate.notNull("allocation.pod", pod);
        if (!gpuOf.keySet().equals(new LinkedHashSet<>(deviceIds)) || deviceIds.size() != gpuOf.size()) {
            throw new IllegalArgumentException("allocation.gpuOf must map each of " + deviceIds + " once: " + gpuOf);
        }
        if (!new LinkedHashSet<>(gpuOf.values()).equals(new LinkedHashSet<>(placement.gpuUuids()))) {
            throw new IllegalArgumentException("allocation.gpuOf " + gpuOf + " must use the placement's GPUs "
                    + placement.gpuUuids());
        }
    }

    /** The placement's tenant id. */
    public String tenantId() {
        return placement.tenantId();
    }

    /** The physical GPUs in the placement's order. */
    public List<String> gpus() {
        return placement.gpuUuids();
    }
}
