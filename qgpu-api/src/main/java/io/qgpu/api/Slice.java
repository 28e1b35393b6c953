package io.qgpu.api;

/**
 * The part of one GPU a tenant holds.
 *
 * @param gpuUuid        the physical GPU
 * @param memoryBytes    memory reserved on it (the whole device for an exclusive claim)
 * @param computeRequest guaranteed compute in percent
 * @param computeLimit   maximum compute in percent
 *
 * <p>Thread safety: immutable.
 */
public record Slice(String gpuUuid, long memoryBytes, int computeRequest, int computeLimit) {
    public Slice {
        Validate.notBlank("slice.gpuUuid", gpuUuid);
        // the field names are built only for a message: the engine makes a slice per GPU of every placement
        if (memoryBytes < 1) {
            Validate.atLeast("slice[" + gpuUuid + "].memoryBytes", memoryBytes, 1);
        }
        if (computeRequest < 0 || computeRequest > 100) {
            Validate.between("slice[" + gpuUuid + "].computeRequest", computeRequest, 0, 100);
        }
        if (computeLimit < Math.max(1, computeRequest) || computeLimit > 100) {
            Validate.between("slice[" + gpuUuid + "].computeLimit", computeLimit, Math.max(1, computeRequest), 100);
        }
    }
}
