package io.qgpu.kubernetes.allocator;

/**
 * A GPU as its node's ResourceSlice of driver {@code gpu.qgpu.io} publishes it: where it is (pool and device
 * name, what an allocation result names), the UUID the ledger knows it by, and its capacities with their request
 * policies.
 *
 * @param pool     the resource pool (qgpu's driver: the node's name)
 * @param device   the device name in the pool ({@code gpu-0})
 * @param gpuUuid  the GPU's UUID (the {@code uuid} attribute); the ledger's GPU id
 * @param memory   the {@code memory} capacity, bytes
 * @param cores    the {@code cores} capacity, percent of one GPU
 * @param tenants  the {@code tenants} capacity (how many allocations the device may hold; each consumes 1), or
 *                 null when the slice publishes none
 * @param shared   whether the device allows multiple allocations ({@code allowMultipleAllocations})
 *
 * <p>Thread safety: immutable.
 */
public record PublishedGpu(String pool, String device, String gpuUuid, CapacityPolicy memory, CapacityPolicy cores,
                           CapacityPolicy tenants, boolean shared) {
}
