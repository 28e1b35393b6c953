package io.qgpu.kubernetes.dra;

import io.qgpu.api.Placement;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A claim this driver prepared (or is about to): the ResourceClaim it is, the qgpu placement reserved for
 * it (tenant id = the claim's uid), and the devices answered to the kubelet.
 *
 * @param uid       the ResourceClaim's uid
 * @param namespace its namespace
 * @param name      its name
 * @param placement what the ledger holds for it
 * @param devices   the devices of this driver in its allocation, in result order
 *
 * <p>Thread safety: immutable.
 */
record PreparedClaim(String uid, String namespace, String name, Placement placement, List<Device> devices) {

    PreparedClaim {
        Objects.requireNonNull(uid, "uid");
        Objects.requireNonNull(namespace, "namespace");
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(placement, "placement");
        devices = List.copyOf(devices);
        if (!placement.tenantId().equals(uid)) {
            throw new IllegalArgumentException("placement tenant " + placement.tenantId() + " must be the claim uid " + uid);
        }
    }

    /** {@code namespace/name}. */
    String key() {
        return namespace + "/" + name;
    }

    /** The same claim with these devices (their CDI ids filled in). */
    PreparedClaim withDevices(List<Device> d) {
        return new PreparedClaim(uid, namespace, name, placement, d);
    }

    /**
     * One device of the claim.
     *
     * @param requestNames the claim's requests it serves
     * @param pool         its pool (the node)
     * @param device       its published name ({@code gpu-<index>})
     * @param shareId      the allocation result's share id, for a share of a device
     * @param gpuUuid      the physical GPU
     * @param cdiIds       the CDI ids the runtime injects
     */
    record Device(List<String> requestNames, String pool, String device, Optional<String> shareId, String gpuUuid,
                  List<String> cdiIds) {
        Device {
            requestNames = List.copyOf(requestNames);
            Objects.requireNonNull(pool, "pool");
            Objects.requireNonNull(device, "device");
            Objects.requireNonNull(shareId, "shareId");
            Objects.requireNonNull(gpuUuid, "gpuUuid");
            cdiIds = List.copyOf(cdiIds);
        }

        Device withCdiIds(List<String> ids) {
            return new Device(requestNames, pool, device, shareId, gpuUuid, ids);
        }
    }
}
