package io.qgpu.kubernetes.deviceplugin;

import io.qgpu.api.Placement;
import io.qgpu.api.Validate;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What one container got: the virtual ids the kubelet allocated, the physical GPU each is on, and the
 * qgpu placement behind them (the extender's, or the plugin's own).
 *
 * <p>Usually the placement itself is reserved in the ledger and each id is on a distinct GPU. When a
 * container's ids are more than the GPUs that can take one, they are <b>replicas</b> stacked on the
 * GPUs ({@code io.qgpu.api.Gang#replicas}): then {@code replicas} holds the reservations, one
 * single-GPU placement per id, and {@code placement} is what the container sees: its distinct GPUs,
 * with on each the replicas' memory summed (the same number of replicas on every GPU).
 *
 * @param deviceIds the virtual ids, in request order
 * @param gpuOf     virtual id to physical GPU UUID; one distinct GPU per id, or with replicas the
 *                  GPU of the id's replica
 * @param placement the placement (tenant, slices, limits)
 * @param pod       {@code namespace/name} of the pod whose extender annotation was applied; empty when
 *                  the plugin chose the GPUs itself
 * @param replicas  the reservations behind a stacked container, one per id; empty when
 *                  {@code placement} is the reservation
 *
 * <p>Thread safety: immutable.
 */
public record Allocation(List<String> deviceIds, Map<String, String> gpuOf, Placement placement, Optional<String> pod,
                         List<Placement> replicas) {

    public Allocation {
        deviceIds = List.copyOf(Validate.notNull("allocation.deviceIds", deviceIds));
        gpuOf = Map.copyOf(Validate.notNull("allocation.gpuOf", gpuOf));
        Validate.notNull("allocation.placement", placement);
        Validate.notNull("allocation.pod", pod);
        replicas = List.copyOf(Validate.notNull("allocation.replicas", replicas));
        if (!gpuOf.keySet().equals(new LinkedHashSet<>(deviceIds)) || deviceIds.size() != gpuOf.size()) {
            throw new IllegalArgumentException("allocation.gpuOf must map each of " + deviceIds + " once: " + gpuOf);
        }
        if (!new LinkedHashSet<>(gpuOf.values()).equals(new LinkedHashSet<>(placement.gpuUuids()))) {
            throw new IllegalArgumentException("allocation.gpuOf " + gpuOf + " must use the placement's GPUs "
                    + placement.gpuUuids());
        }
        if (!replicas.isEmpty()) {
            Map<String, Integer> byIds = new HashMap<>();
            gpuOf.values().forEach(g -> byIds.merge(g, 1, Integer::sum));
            Map<String, Integer> byReplicas = new HashMap<>();
            for (Placement r : replicas) {
                if (r.gpuUuids().size() != 1) {
                    throw new IllegalArgumentException("allocation.replicas: " + r.tenantId() + " has "
                            + r.gpuUuids().size() + " GPUs; a replica has one");
                }
                byReplicas.merge(r.gpuUuids().get(0), 1, Integer::sum);
            }
            if (replicas.size() != deviceIds.size() || !byIds.equals(byReplicas)) {
                throw new IllegalArgumentException("allocation.replicas " + byReplicas + " (GPU: replicas) must match "
                        + "allocation.gpuOf " + byIds + " (GPU: ids)");
            }
        }
    }

    /** An allocation whose placement is its reservation (no stacked replicas). */
    public Allocation(List<String> deviceIds, Map<String, String> gpuOf, Placement placement, Optional<String> pod) {
        this(deviceIds, gpuOf, placement, pod, List.of());
    }

    /** The placement's tenant id. */
    public String tenantId() {
        return placement.tenantId();
    }

    /** The physical GPUs in the placement's order. */
    public List<String> gpus() {
        return placement.gpuUuids();
    }

    /** What the ledger holds for this container: the replicas, or else the placement. */
    public List<Placement> reservations() {
        return replicas.isEmpty() ? List.of(placement) : replicas;
    }
}
