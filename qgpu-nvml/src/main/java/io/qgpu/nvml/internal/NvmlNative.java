package io.qgpu.nvml.internal;

import com.sun.jna.Library;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;
import java.util.List;

/**
 * The raw C entry points of libnvidia-ml bound by JNA, with NVML's versioned symbol names.
 * Not for use outside qgpu-nvml: {@link io.qgpu.nvml.Nvml} wraps every call with return-code checks,
 * the init reference count and the translation of link errors.
 *
 * <p>{@code unsigned int} values come back in {@code int}s; read them with
 * {@link Integer#toUnsignedLong(int)}. Handles ({@code nvmlDevice_t}, {@code nvmlEventSet_t}) are
 * opaque {@link Pointer}s.
 *
 * <p>Thread safety: NVML is documented thread-safe; so is JNA's dispatch.
 */
public interface NvmlNative extends Library {

    /** Functions {@link io.qgpu.nvml.Nvml} checks for when it loads the library; missing ones fail the load. */
    List<String> REQUIRED = List.of(
        "nvmlInit_v2", "nvmlInitWithFlags", "nvmlShutdown", "nvmlErrorString",
        "nvmlSystemGetDriverVersion", "nvmlSystemGetNVMLVersion",
        "nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByUUID",
        "nvmlDeviceGetUUID", "nvmlDeviceGetName", "nvmlDeviceGetIndex", "nvmlDeviceGetMinorNumber",
        "nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetUtilizationRates",
        "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetProcessUtilization",
        "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetTopologyCommonAncestor",
        "nvmlDeviceGetNvLinkState", "nvmlDeviceGetNvLinkRemotePciInfo_v2",
        "nvmlDeviceGetMigMode", "nvmlDeviceGetCudaComputeCapability",
        "nvmlEventSetCreate", "nvmlEventSetFree", "nvmlDeviceRegisterEvents", "nvmlEventSetWait_v2",
        "nvmlDeviceGetMPSComputeRunningProcesses_v3", "nvmlDeviceGetNvLinkRemoteDeviceType",
        "nvmlDeviceGetMemoryAffinity", "nvmlDeviceGetCpuAffinityWithinScope",
        "nvmlDeviceGetMaxMigDeviceCount", "nvmlDeviceGetMigDeviceHandleByIndex", "nvmlDeviceIsMigDeviceHandle",
        "nvmlDeviceGetGpuInstanceId", "nvmlDeviceGetComputeInstanceId", "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
        "nvmlDeviceGetComputeMode", "nvmlDeviceSetComputeMode"
    );

    /** Functions that may be missing (older drivers); a call then reports "not available". */
    List<String> OPTIONAL = List.of("nvmlDeviceGetNumaNodeId");

    int nvmlInit_v2();

    int nvmlInitWithFlags(int flags);

    int nvmlShutdown();

    String nvmlErrorString(int result);

    int nvmlSystemGetDriverVersion(byte[] version, int length);

    int nvmlSystemGetNVMLVersion(byte[] version, int length);

    int nvmlDeviceGetCount_v2(IntByReference count);

    int nvmlDeviceGetHandleByIndex_v2(int index, PointerByReference device);

    int nvmlDeviceGetHandleByUUID(String uuid, PointerByReference device);

    int nvmlDeviceGetUUID(Pointer device, byte[] uuid, int length);

    int nvmlDeviceGetName(Pointer device, byte[] name, int length);

    int nvmlDeviceGetIndex(Pointer device, IntByReference index);

    int nvmlDeviceGetMinorNumber(Pointer device, IntByReference minor);

    int nvmlDeviceGetMemoryInfo_v2(Pointer device, NvmlStructs.Memory memory);

    int nvmlDeviceGetUtilizationRates(Pointer device, NvmlStructs.Utilization utilization);

    /** {@code infos} is null for the count query, else the first element of a {@code toArray} block. */
    int nvmlDeviceGetComputeRunningProcesses_v3(Pointer device, IntByReference count, NvmlStructs.ProcessInfo[] infos);

    /** {@code samples} is null for the count query, else the first element of a {@code toArray} block. */
    int nvmlDeviceGetProcessUtilization(Pointer device, NvmlStructs.ProcessUtilizationSample[] samples,
                                        IntByReference count, long lastSeenTimeStamp);

    int nvmlDeviceGetPciInfo_v3(Pointer device, NvmlStructs.PciInfo pci);

    int nvmlDeviceGetTopologyCommonAncestor(Pointer device1, Pointer device2, IntByReference level);

    int nvmlDeviceGetNvLinkState(Pointer device, int link, IntByReference isActive);

    int nvmlDeviceGetNvLinkRemotePciInfo_v2(Pointer device, int link, NvmlStructs.PciInfo pci);

    int nvmlDeviceGetMigMode(Pointer device, IntByReference current, IntByReference pending);

    int nvmlDeviceGetCudaComputeCapability(Pointer device, IntByReference major, IntByReference minor);

    int nvmlDeviceGetNumaNodeId(Pointer device, IntByReference node);

    /** {@code mode} receives an {@code nvmlComputeMode_t} (a C enum: an int). */
    int nvmlDeviceGetComputeMode(Pointer device, IntByReference mode);

    /** {@code mode}: an {@code nvmlComputeMode_t}; NVML requires root (admin) rights for it. */
    int nvmlDeviceSetComputeMode(Pointer device, int mode);

    /** As {@link #nvmlDeviceGetComputeRunningProcesses_v3}, for MPS clients. */
    int nvmlDeviceGetMPSComputeRunningProcesses_v3(Pointer device, IntByReference count, NvmlStructs.ProcessInfo[] infos);

    /** {@code type} receives an {@code nvmlIntNvLinkDeviceType_t} (a C enum: an int). */
    int nvmlDeviceGetNvLinkRemoteDeviceType(Pointer device, int link, IntByReference type);

    /** {@code nodeSet}: {@code nodeSetSize} C {@code unsigned long}s; {@code scope}: {@code nvmlAffinityScope_t}. */
    int nvmlDeviceGetMemoryAffinity(Pointer device, int nodeSetSize, Pointer nodeSet, int scope);

    /** {@code cpuSet}: {@code cpuSetSize} C {@code unsigned long}s; {@code scope}: {@code nvmlAffinityScope_t}. */
    int nvmlDeviceGetCpuAffinityWithinScope(Pointer device, int cpuSetSize, Pointer cpuSet, int scope);

    int nvmlDeviceGetMaxMigDeviceCount(Pointer device, IntByReference count);

    int nvmlDeviceGetMigDeviceHandleByIndex(Pointer device, int index, PointerByReference migDevice);

    int nvmlDeviceIsMigDeviceHandle(Pointer device, IntByReference isMigDevice);

    int nvmlDeviceGetGpuInstanceId(Pointer device, IntByReference id);

    int nvmlDeviceGetComputeInstanceId(Pointer device, IntByReference id);

    int nvmlDeviceGetDeviceHandleFromMigDeviceHandle(Pointer migDevice, PointerByReference device);

    int nvmlEventSetCreate(PointerByReference set);

    int nvmlEventSetFree(Pointer set);

    int nvmlDeviceRegisterEvents(Pointer device, long eventTypes, Pointer set);

    int nvmlEventSetWait_v2(Pointer set, NvmlStructs.EventData data, int timeoutMs);
}
