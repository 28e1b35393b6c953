package io.qgpu.samples.gpuprobe;

/**
 * Device-memory allocation, as {@link MemoryCeiling} needs it; {@link Cuda} implements it with
 * {@code cuMemAlloc_v2} and {@code cuMemFree_v2}.
 */
public interface DeviceMemory {

    /**
     * Allocates this many bytes.
     *
     * @return the device pointer
     * @throws CudaException when the driver refuses
     */
    long alloc(long bytes) throws CudaException;

    /** Frees what {@link #alloc} returned. */
    void free(long pointer) throws CudaException;
}
