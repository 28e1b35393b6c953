package io.qgpu.nvml.discovery;

import io.qgpu.api.Validate;

/**
 * One MIG instance of a MIG-enabled GPU, as discovery found it. With
 * {@link NvmlDiscovery.Builder#migInstancesAsDevices(boolean)} (the default) each instance is also a
 * {@link io.qgpu.api.GpuDevice} of the node, under its own UUID.
 *
 * <pre>{@code
 * for (MigInstance m : inventory.migInstances()) {
 *     log.info("{}", m.uuid() + " on GPU " + m.parentIndex() + ": " + m.name() + ", gi " + m.gpuInstanceId());
 * }
 * }</pre>
 *
 * @param uuid              {@code MIG-...}
 * @param name              as NVML names it, for example {@code NVIDIA A100-SXM4-80GB MIG 3g.40gb}
 * @param parentUuid        the GPU it is part of
 * @param parentIndex       that GPU's NVML index
 * @param slot              its MIG device index on the parent
 * @param gpuInstanceId     its GPU instance id
 * @param computeInstanceId its compute instance id
 * @param memoryTotalBytes  its device memory
 * @param nodeIndex         the {@link io.qgpu.api.GpuDevice#index()} it has in the node when instances are
 *                          devices, else -1
 *
 * <p>Thread safety: immutable.
 */
public record MigInstance(String uuid, String name, String parentUuid, int parentIndex, int slot, int gpuInstanceId,
                          int computeInstanceId, long memoryTotalBytes, int nodeIndex) {

    public MigInstance {
        Validate.notBlank("migInstance.uuid", uuid);
        Validate.notBlank("migInstance[" + uuid + "].name", name);
        Validate.notBlank("migInstance[" + uuid + "].parentUuid", parentUuid);
        Validate.atLeast("migInstance[" + uuid + "].parentIndex", parentIndex, 0);
        Validate.atLeast("migInstance[" + uuid + "].slot", slot, 0);
        Validate.atLeast("migInstance[" + uuid + "].gpuInstanceId", gpuInstanceId, 0);
        Validate.atLeast("migInstance[" + uuid + "].computeInstanceId", computeInstanceId, 0);
        Validate.atLeast("migInstance[" + uuid + "].memoryTotalBytes", memoryTotalBytes, 1);
        Validate.atLeast("migInstance[" + uuid + "].nodeIndex", nodeIndex, -1);
    }
}
