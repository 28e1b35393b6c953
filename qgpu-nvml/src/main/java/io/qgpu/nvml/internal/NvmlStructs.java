package io.qgpu.nvml.internal;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.Structure;
import com.sun.jna.Structure.FieldOrder;

/**
 * JNA mirrors of NVML's structs, field for field, in the layout of NVML 13.x on x86_64 (sizes and
 * offsets are listed in docs/nvml.md and asserted by the tests). Fields that are {@code unsigned} in C are
 * Java {@code int}/{@code long}; read them with {@link Integer#toUnsignedLong(int)} or
 * {@link Long#compareUnsigned(long, long)}.
 *
 * <p>Thread safety: these are mutable buffers; use each from one thread.
 */
public final class NvmlStructs {
    private NvmlStructs() {
    }

    /** {@code nvmlMemory_v2_t} (40 bytes). */
    @FieldOrder({"version", "total", "reserved", "free", "used"})
    public static class Memory extends Structure {
        /** {@code nvmlMemory_v2}: {@code sizeof(nvmlMemory_v2_t) | 2 << 24}. */
        public static final int VERSION_2 = 0x02000028;

        public int version;
        public long total;
        public long reserved;
        public long free;
        public long used;

        public Memory() {
            version = VERSION_2;
        }
    }

    /** {@code nvmlUtilization_t} (8 bytes). */
    @FieldOrder({"gpu", "memory"})
    public static class Utilization extends Structure {
        public int gpu;
        public int memory;
    }

    /** {@code nvmlProcessInfo_t}, the v2/v3 layout (24 bytes). */
    @FieldOrder({"pid", "usedGpuMemory", "gpuInstanceId", "computeInstanceId"})
    public static class ProcessInfo extends Structure {
        /** {@code usedGpuMemory} when the driver cannot tell (all bits set, NVML_VALUE_NOT_AVAILABLE). */
        public static final long NOT_AVAILABLE = -1L;

        public int pid;
        public long usedGpuMemory;
        public int gpuInstanceId;
        public int computeInstanceId;
    }

    /** {@code nvmlProcessUtilizationSample_t} (32 bytes). */
    @FieldOrder({"pid", "timeStamp", "smUtil", "memUtil", "encUtil", "decUtil"})
    public static class ProcessUtilizationSample extends Structure {
        public int pid;
        public long timeStamp;
        public int smUtil;
        public int memUtil;
        public int encUtil;
        public int decUtil;
    }

    /** {@code nvmlPciInfo_t}, the v3 layout (68 bytes). */
    @FieldOrder({"busIdLegacy", "domain", "bus", "device", "pciDeviceId", "pciSubSystemId", "busId"})
    public static class PciInfo extends Structure {
        public byte[] busIdLegacy = new byte[16];
        public int domain;
        public int bus;
        public int device;
        public int pciDeviceId;
        public int pciSubSystemId;
        public byte[] busId = new byte[32];

        /** {@link #busId} as a string. */
        public String busIdString() {
            return Native.toString(busId, "US-ASCII");
        }
    }

    /** {@code nvmlEventData_t} (32 bytes). */
    @FieldOrder({"device", "eventType", "eventData", "gpuInstanceId", "computeInstanceId"})
    public static class EventData extends Structure {
        public Pointer device;
        public long eventType;
        public long eventData;
        public int gpuInstanceId;
        public int computeInstanceId;
    }
}
