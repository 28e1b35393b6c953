package io.qgpu.kubernetes.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.GpuDevice;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class DeviceSelectorsTest {
    static final GpuDevice A100 = GpuDevice.builder("GPU-a").index(0).model("A100").memoryGiB(80).numaNode(0).build();
    static final GpuDevice H100 = GpuDevice.builder("GPU-h").index(1).model("H100").memoryGiB(80).numaNode(1).build();

    static DeviceSelectors parse(String... e) throws DeviceSelectors.UnsupportedSelector {
        return DeviceSelectors.parse(List.of(e), IntStream.range(0, e.length).mapToObj(i -> "sel[" + i + "]").toList());
    }

    @Test
    void eachFormSelectsWhatItSays() throws Exception {
        assertTrue(parse("device.driver == \"gpu.qgpu.io\"").allows(A100));
        DeviceSelectors p = parse("device.attributes[\"gpu.qgpu.io\"].productName == \"H100\"");
        assertFalse(p.allows(A100));
        assertTrue(p.allows(H100));
        assertTrue(parse("device.attributes[\"gpu.qgpu.io\"].productName != \"H100\"").allows(A100));
        assertFalse(parse("device.attributes[\"gpu.qgpu.io\"].uuid != \"GPU-a\"").allows(A100));
        assertTrue(parse("device.attributes[\"gpu.qgpu.io\"].index == 1").allows(H100));
        assertFalse(parse("device.attributes[\"gpu.qgpu.io\"].numaNode == 1").allows(A100));
        DeviceSelectors in = parse("device.attributes[\"gpu.qgpu.io\"].productName in [\"A100\", \"V100\"]");
        assertTrue(in.allows(A100));
        assertFalse(in.allows(H100));
        assertEquals(Set.of("A100", "V100"), in.includeModels());
    }

    @Test
    void selectorsAreAndedNotOred() throws Exception {
        DeviceSelectors both = parse("device.attributes[\"gpu.qgpu.io\"].productName in [\"A100\", \"H100\"]",
                "device.attributes[\"gpu.qgpu.io\"].productName == \"H100\"");
        assertEquals(Set.of("H100"), both.includeModels());
        DeviceSelectors.UnsupportedSelector e = assertThrows(DeviceSelectors.UnsupportedSelector.class,
                () -> parse("device.attributes[\"gpu.qgpu.io\"].productName == \"A100\"",
                        "device.attributes[\"gpu.qgpu.io\"].productName == \"H100\""));
        assertTrue(e.getMessage().startsWith("sel[1] = "), e.getMessage());
    }

    @Test
    void whatCannotBeHonouredIsRefusedNamingTheSelector() {
        for (String bad : List.of("device.driver == \"gpu.nvidia.com\"", "device.attributes[\"gpu.nvidia.com\"].productName == \"x\"",
                "device.attributes[\"gpu.qgpu.io\"].minor == 3", "device.attributes[\"gpu.qgpu.io\"].index == \"1\"",
                "device.attributes[\"gpu.qgpu.io\"].productName == 7", "device.capacity[\"gpu.qgpu.io\"].memory.isGreaterThan(quantity(\"1Gi\"))",
                "device.attributes[\"gpu.qgpu.io\"].index in [\"1\"]", " ")) {
            DeviceSelectors.UnsupportedSelector e = assertThrows(DeviceSelectors.UnsupportedSelector.class, () -> parse(bad), bad);
            assertTrue(e.getMessage().startsWith("sel[0]"), e.getMessage());
        }
    }
}
