package io.qgpu.djl;

import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.PriorityClass;
import io.qgpu.core.gate.GateTenantSpec;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** The QGPU_* environment as the device plugin writes it, and every bad value refused by name and text. */
class QgpuEnvironmentTest {

    /** What the device plugin's Allocate answer carries for an online pod (see its AllocateTest). */
    private static Map<String, String> devicePlugin() {
        Map<String, String> env = new HashMap<>();
        env.put("NVIDIA_VISIBLE_DEVICES", "GPU-a0,GPU-a1");
        env.put("QGPU_MEMORY_LIMIT_BYTES", "8589934592,4294967296");
        env.put("QGPU_COMPUTE_REQUEST", "30");
        env.put("QGPU_COMPUTE_LIMIT", "60");
        env.put("QGPU_PRIORITY", "online");
        env.put("QGPU_TENANT", "ns/chat");
        return env;
    }

    @Test
    void readsWhatTheDevicePluginSets() {
        QgpuEnvironment e = QgpuEnvironment.from(devicePlugin());
        assertEquals("ns/chat", e.tenant());
        assertEquals(PriorityClass.ONLINE, e.priority());
        assertEquals(30, e.computeRequest());
        assertEquals(60, e.computeLimit());
        assertEquals(List.of("GPU-a0", "GPU-a1"), e.gpuUuids());
        assertEquals("GPU-a1", e.gpu(1));
        assertEquals(OptionalLong.of(4294967296L), e.memoryLimitBytes(1));
        assertEquals(new GateTenantSpec("ns/chat", PriorityClass.ONLINE, 30, 60), e.tenantSpec());
    }

    @Test
    void onlyThePriorityIsRequired() {
        QgpuEnvironment e = QgpuEnvironment.from(Map.of("QGPU_PRIORITY", "OFFLINE"));
        assertEquals("offline", e.tenant(), "named after the priority");
        assertEquals(PriorityClass.OFFLINE, e.priority());
        assertEquals(0, e.computeRequest());
        assertEquals(100, e.computeLimit());
        assertEquals(QgpuEnvironment.NO_GPU, e.gpu(0));
        assertEquals(OptionalLong.empty(), e.memoryLimitBytes(0));
        for (String none : new String[] {"void", "none", "all", ""}) {
            assertEquals(List.of(), QgpuEnvironment.from(Map.of("QGPU_PRIORITY", "online",
                    "NVIDIA_VISIBLE_DEVICES", none)).gpuUuids(), none);
        }
    }

    @Test
    void badValuesNameTheVariableAndTheText() {
        refused(Map.of(), "QGPU_PRIORITY", null, "is not set");
        refused(Map.of("QGPU_PRIORITY", "urgent"), "QGPU_PRIORITY", "urgent", "online or offline");
        refused(Map.of("QGPU_PRIORITY", "online", "QGPU_COMPUTE_LIMIT", "60%"), "QGPU_COMPUTE_LIMIT", "60%",
                "integer percent between 1 and 100");
        refused(Map.of("QGPU_PRIORITY", "online", "QGPU_COMPUTE_LIMIT", "0"), "QGPU_COMPUTE_LIMIT", "0",
                "between 1 and 100");
        refused(Map.of("QGPU_PRIORITY", "online", "QGPU_COMPUTE_LIMIT", ""), "QGPU_COMPUTE_LIMIT", "", "integer");
        refused(Map.of("QGPU_PRIORITY", "online", "QGPU_COMPUTE_REQUEST", "101"), "QGPU_COMPUTE_REQUEST", "101",
                "between 0 and 100");
        refused(Map.of("QGPU_PRIORITY", "online", "QGPU_COMPUTE_REQUEST", "-1"), "QGPU_COMPUTE_REQUEST", "-1",
                "between 0 and 100");
        refused(Map.of("QGPU_PRIORITY", "online", "QGPU_COMPUTE_REQUEST", "70", "QGPU_COMPUTE_LIMIT", "60"),
                "QGPU_COMPUTE_REQUEST", "70", "at most QGPU_COMPUTE_LIMIT (60)");
        refused(Map.of("QGPU_PRIORITY", "online", "QGPU_TENANT", " "), "QGPU_TENANT", " ", "blank");
        refused(Map.of("QGPU_PRIORITY", "online", "NVIDIA_VISIBLE_DEVICES", "GPU-a,,GPU-b"),
                "NVIDIA_VISIBLE_DEVICES", "GPU-a,,GPU-b", "empty entry");
        refused(Map.of("QGPU_PRIORITY", "online", "QGPU_MEMORY_LIMIT_BYTES", "8Gi"), "QGPU_MEMORY_LIMIT_BYTES", "8Gi",
                "\"8Gi\" is not");
        refused(Map.of("QGPU_PRIORITY", "online", "QGPU_MEMORY_LIMIT_BYTES", "0"), "QGPU_MEMORY_LIMIT_BYTES", "0",
                "0 is not");
        refused(Map.of("QGPU_PRIORITY", "online", "NVIDIA_VISIBLE_DEVICES", "GPU-a,GPU-b",
                "QGPU_MEMORY_LIMIT_BYTES", "1024"), "QGPU_MEMORY_LIMIT_BYTES", "1024", "1 values for 2 GPUs");
    }

    @Test
    void aDeviceIndexOutsideTheVisibleGpusIsRefused() {
        QgpuEnvironment e = QgpuEnvironment.from(devicePlugin());
        InvalidValueException x = assertThrows(InvalidValueException.class, () -> e.gpu(2));
        assertEquals("deviceIndex", x.field());
        assertTrue(x.getMessage().contains("2 visible GPUs in NVIDIA_VISIBLE_DEVICES"), x.getMessage());
        assertThrows(InvalidValueException.class, () -> e.memoryLimitBytes(-1));
    }

    private static void refused(Map<String, String> env, String variable, String text, String rule) {
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> QgpuEnvironment.from(env));
        assertEquals(variable, e.field(), e.getMessage());
        assertEquals(text, e.value(), e.getMessage());
        assertTrue(e.getMessage().startsWith(variable + " = "), e.getMessage());
        assertTrue(e.getMessage().contains(rule), e.getMessage());
    }
}
