package io.qgpu.nvml;

import io.qgpu.api.Validate;

/**
 * One MIG device (a compute instance inside a GPU instance) of a MIG-enabled GPU, as
 * {@link NvmlDevice#migDevices()} finds it. Its {@link #device()} answers UUID ({@code MIG-...}), name and
 * memory on its own handle.
 *
 * <pre>{@code
 * for (NvmlMigDevice m : gpu.migDevices()) {
 *     log.info("{}", m.device().uuid() + " " + m.device().name() + " " + m.device().memory().total());
 * }
 * }</pre>
 *
 * @param parent            the GPU
 * @param slot              its MIG device index on the parent (0 .. max MIG device count - 1)
 * @param device            the MIG device's own handle
 * @param gpuInstanceId     its GPU instance id (what processes report in {@code gpuInstanceId})
 * @param computeInstanceId its compute instance id
 *
 * <p>Thread safety: immutable.
 */
public record NvmlMigDevice(NvmlDevice parent, int slot, NvmlDevice device, int gpuInstanceId, int computeInstanceId) {

    public NvmlMigDevice {
        Validate.notNull("migDevice.parent", parent);
        Validate.atLeast("migDevice.slot", slot, 0);
        Validate.notNull("migDevice.device", device);
        Validate.atLeast("migDevice.gpuInstanceId", gpuInstanceId, 0);
        Validate.atLeast("migDevice.computeInstanceId", computeInstanceId, 0);
    }

    /** Whether a process with these instance ids (from the parent's process list) runs on this device. */
    public boolean runs(NvmlProcess p) {
        return p.gpuInstanceId() == gpuInstanceId && p.computeInstanceId() == computeInstanceId;
    }
}
