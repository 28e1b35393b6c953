package io.qgpu.nvml.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.sun.jna.Pointer;
import com.sun.jna.Structure;
import com.sun.jna.Structure.FieldOrder;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.opentest4j.AssertionFailedError;

/**
 * The JNA mirrors have exactly the sizes and field offsets of NVML 13.x on x86_64, as docs/nvml.md lists
 * them (the fake library asserts the same figures in C with _Static_assert).
 */
class StructLayoutTest {

    /** Exposes JNA's protected field offsets. */
    interface Probe {
        int size();

        int offsetOf(String field);
    }

    static final class MemoryProbe extends NvmlStructs.Memory implements Probe {
        @Override
        public int offsetOf(String f) {
            return fieldOffset(f);
        }
    }

    static final class UtilizationProbe extends NvmlStructs.Utilization implements Probe {
        @Override
        public int offsetOf(String f) {
            return fieldOffset(f);
        }
    }

    static final class ProcessInfoProbe extends NvmlStructs.ProcessInfo implements Probe {
        @Override
        public int offsetOf(String f) {
            return fieldOffset(f);
        }
    }

    static final class SampleProbe extends NvmlStructs.ProcessUtilizationSample implements Probe {
        @Override
        public int offsetOf(String f) {
            return fieldOffset(f);
        }
    }

    static final class PciProbe extends NvmlStructs.PciInfo implements Probe {
        @Override
        public int offsetOf(String f) {
            return fieldOffset(f);
        }
    }

    static final class EventProbe extends NvmlStructs.EventData implements Probe {
        @Override
        public int offsetOf(String f) {
            return fieldOffset(f);
        }
    }

    /** Checks a struct against the expected size and offsets; fails naming the first difference. */
    static void assertLayout(String struct, Probe probe, int size, Map<String, Integer> offsets) {
        assertEquals(size, probe.size(), struct + " size");
        offsets.forEach((field, offset) -> assertEquals(offset, probe.offsetOf(field), struct + "." + field + " offset"));
    }

    static Map<String, Integer> offsets(Object... fieldThenOffset) {
        Map<String, Integer> m = new LinkedHashMap<>();
        for (int i = 0; i < fieldThenOffset.length; i += 2) {
            m.put((String) fieldThenOffset[i], (Integer) fieldThenOffset[i + 1]);
        }
        return m;
    }

    @Test
    void memoryV2() {
        assertLayout("nvmlMemory_v2_t", new MemoryProbe(), 40,
                offsets("version", 0, "total", 8, "reserved", 16, "free", 24, "used", 32));
        assertEquals(0x02000028, new NvmlStructs.Memory().version, "the version field is preset to nvmlMemory_v2");
    }

    @Test
    void utilization() {
        assertLayout("nvmlUtilization_t", new UtilizationProbe(), 8, offsets("gpu", 0, "memory", 4));
    }

    @Test
    void processInfo() {
        assertLayout("nvmlProcessInfo_t", new ProcessInfoProbe(), 24,
                offsets("pid", 0, "usedGpuMemory", 8, "gpuInstanceId", 16, "computeInstanceId", 20));
    }

    @Test
    void processUtilizationSample() {
        assertLayout("nvmlProcessUtilizationSample_t", new SampleProbe(), 32,
                offsets("pid", 0, "timeStamp", 8, "smUtil", 16, "memUtil", 20, "encUtil", 24, "decUtil", 28));
    }

    @Test
    void pciInfo() {
        assertLayout("nvmlPciInfo_t", new PciProbe(), 68, offsets("busIdLegacy", 0, "domain", 16, "bus", 20,
                "device", 24, "pciDeviceId", 28, "pciSubSystemId", 32, "busId", 36));
    }

    @Test
    void eventData() {
        assertLayout("nvmlEventData_t", new EventProbe(), 32,
                offsets("device", 0, "eventType", 8, "eventData", 16, "gpuInstanceId", 24, "computeInstanceId", 28));
    }

    @Test
    void arraysOfStructsAreContiguousAtTheCStride() {
        NvmlStructs.ProcessInfo[] infos = (NvmlStructs.ProcessInfo[]) new NvmlStructs.ProcessInfo().toArray(3);
        assertEquals(24, Pointer.nativeValue(infos[1].getPointer()) - Pointer.nativeValue(infos[0].getPointer()));
        NvmlStructs.ProcessUtilizationSample[] s =
                (NvmlStructs.ProcessUtilizationSample[]) new NvmlStructs.ProcessUtilizationSample().toArray(3);
        assertEquals(64, Pointer.nativeValue(s[2].getPointer()) - Pointer.nativeValue(s[0].getPointer()));
    }

    // ---- the check rejects a wrong layout -----------------------------------------------------------

    /** nvmlProcessInfo_t as NVML 11's v1 had it (no instance ids): 16 bytes. */
    @FieldOrder({"pid", "usedGpuMemory"})
    public static final class V1ProcessInfo extends Structure implements Probe {
        public int pid;
        public long usedGpuMemory;

        @Override
        public int offsetOf(String f) {
            return fieldOffset(f);
        }
    }

    /** nvmlPciInfo_t with the v1 16-byte bus id field: every later offset moves. */
    @FieldOrder({"busId", "domain", "bus", "device", "pciDeviceId", "pciSubSystemId"})
    public static final class ShortPci extends Structure implements Probe {
        public byte[] busId = new byte[16];
        public int domain;
        public int bus;
        public int device;
        public int pciDeviceId;
        public int pciSubSystemId;

        @Override
        public int offsetOf(String f) {
            return fieldOffset(f);
        }
    }

    /** nvmlMemory_v2_t declared with a 4-byte total, as a careless unsigned int mapping would. */
    @FieldOrder({"version", "total", "reserved", "free", "used"})
    public static final class NarrowMemory extends Structure implements Probe {
        public int version;
        public int total;
        public long reserved;
        public long free;
        public long used;

        @Override
        public int offsetOf(String f) {
            return fieldOffset(f);
        }
    }

    @Test
    void theLayoutCheckRejectsWrongMirrors() {
        assertThrows(AssertionFailedError.class, () -> assertLayout("v1 process info", new V1ProcessInfo(), 24,
                offsets("pid", 0, "usedGpuMemory", 8)));
        assertThrows(AssertionFailedError.class, () -> assertLayout("short pci", new ShortPci(), 68,
                offsets("busId", 0, "domain", 16)));
        assertThrows(AssertionFailedError.class, () -> assertLayout("narrow memory", new NarrowMemory(), 40,
                offsets("version", 0, "total", 8, "reserved", 16, "free", 24, "used", 32)));
    }
}
