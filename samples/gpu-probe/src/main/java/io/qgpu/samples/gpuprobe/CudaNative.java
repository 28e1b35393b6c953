package io.qgpu.samples.gpuprobe;

import com.sun.jna.Library;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.FloatByReference;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;

/**
 * The CUDA driver API entry points the probe calls, bound by JNA under the symbol names
 * {@code libcuda.so.1} exports. {@code cuda.h} maps the unversioned names of several calls to versioned
 * symbols ({@code cuCtxCreate} to {@code cuCtxCreate_v2}, {@code cuMemAlloc} to {@code cuMemAlloc_v2},
 * {@code cuMemFree} to {@code cuMemFree_v2}, {@code cuCtxDestroy} to {@code cuCtxDestroy_v2},
 * {@code cuMemGetInfo} to {@code cuMemGetInfo_v2}, {@code cuEventDestroy} to {@code cuEventDestroy_v2});
 * the binding names those directly. CUDA 13's headers map {@code cuCtxCreate} to a newer variant with
 * a parameter block, but drivers keep exporting {@code cuCtxCreate_v2}. {@code size_t} and
 * {@code CUdeviceptr} are 64-bit ({@code long}) on the 64-bit Linux the probe runs on; handles
 * ({@code CUcontext}, {@code CUmodule}, {@code CUfunction}, {@code CUevent}) are opaque pointers.
 *
 * <p>Thread safety: the driver API is thread-safe; the probe calls it from one thread.
 */
public interface CudaNative extends Library {

    /** Every symbol the probe needs; {@link Cuda#load} checks them all before the first call. */
    String[] SYMBOLS = {
        "cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName", "cuDeviceGetAttribute",
        "cuCtxCreate_v2", "cuCtxDestroy_v2", "cuCtxSynchronize", "cuMemGetInfo_v2", "cuMemAlloc_v2", "cuMemFree_v2",
        "cuModuleLoadData", "cuModuleGetFunction", "cuModuleUnload", "cuLaunchKernel",
        "cuEventCreate", "cuEventRecord", "cuEventSynchronize", "cuEventElapsedTime", "cuEventDestroy_v2",
        "cuGetErrorName",
    };

    /** {@code CUDA_SUCCESS}. */
    int CUDA_SUCCESS = 0;
    /** {@code CUDA_ERROR_OUT_OF_MEMORY}. */
    int CUDA_ERROR_OUT_OF_MEMORY = 2;
    /** {@code CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT}. */
    int ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
    /** {@code CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR}. */
    int ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
    /** {@code CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR}. */
    int ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

    int cuInit(int flags);

    int cuDriverGetVersion(IntByReference version);

    int cuDeviceGetCount(IntByReference count);

    int cuDeviceGet(IntByReference device, int ordinal);

    int cuDeviceGetName(byte[] name, int len, int device);

    int cuDeviceGetAttribute(IntByReference value, int attribute, int device);

    int cuCtxCreate_v2(PointerByReference context, int flags, int device);

    int cuCtxDestroy_v2(Pointer context);

    int cuCtxSynchronize();

    int cuMemGetInfo_v2(LongByReference free, LongByReference total);

    int cuMemAlloc_v2(LongByReference devicePointer, long bytes);

    int cuMemFree_v2(long devicePointer);

    int cuModuleLoadData(PointerByReference module, Pointer image);

    int cuModuleGetFunction(PointerByReference function, Pointer module, String name);

    int cuModuleUnload(Pointer module);

    int cuLaunchKernel(Pointer function, int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ,
                       int sharedMemBytes, Pointer stream, Pointer kernelParams, Pointer extra);

    int cuEventCreate(PointerByReference event, int flags);

    int cuEventRecord(Pointer event, Pointer stream);

    int cuEventSynchronize(Pointer event);

    int cuEventElapsedTime(FloatByReference milliseconds, Pointer start, Pointer end);

    int cuEventDestroy_v2(Pointer event);

    int cuGetErrorName(int error, PointerByReference name);
}
