package io.qgpu.djl;

import static org.junit.jupiter.api.Assertions.*;

import ai.onnxruntime.OrtException;
import io.qgpu.api.InvalidValueException;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * QGPU_MEMORY_LIMIT_BYTES onto ONNX Runtime's CUDA provider: the settings carry {@code gpu_mem_limit} for the
 * device's limit, and none when no limit was set. Creating ONNX Runtime's options object needs the GPU package,
 * which this build does not have (the CPU package has no CUDA provider): it fails with ONNX Runtime's own error,
 * so the path a GPU machine takes is not run here.
 */
class OnnxRuntimeOptionsTest {

    private static QgpuEnvironment env(String memory) {
        return QgpuEnvironment.from(memory == null
                ? Map.of("QGPU_PRIORITY", "online", "NVIDIA_VISIBLE_DEVICES", "GPU-a,GPU-b")
                : Map.of("QGPU_PRIORITY", "online", "NVIDIA_VISIBLE_DEVICES", "GPU-a,GPU-b",
                        "QGPU_MEMORY_LIMIT_BYTES", memory));
    }

    @Test
    void theCudaProviderGetsTheDevicesMemoryLimit() {
        assertEquals(Map.of("device_id", "1", "gpu_mem_limit", "4294967296"),
                OnnxRuntimeOptions.cudaProviderSettings(env("8589934592,4294967296"), 1));
        assertEquals(Map.of("device_id", "0"), OnnxRuntimeOptions.cudaProviderSettings(env(null), 0), "no limit set");
        InvalidValueException e = assertThrows(InvalidValueException.class,
                () -> OnnxRuntimeOptions.cudaProviderSettings(env(null), 2));
        assertEquals("deviceIndex", e.field());
    }

    @Test
    void withoutTheGpuPackageTheCudaPathFailsWithOnnxRuntimesError() {
        OrtException e = assertThrows(OrtException.class, () -> OnnxRuntimeOptions.cudaProviderOptions(env("1024,1024"), 0));
        assertTrue(e.getMessage().contains("CUDA"), e.getMessage());
        assertThrows(OrtException.class, () -> OnnxRuntimeOptions.cuda(env("1024,1024"), 0));
    }
}
