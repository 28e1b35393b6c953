package io.qgpu.kubernetes.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.qgpu.kubernetes.node.ContainerEdits.DeviceNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** CDI spec files as the CDI specification describes them. */
class CdiSpecsTest {
    @TempDir
    Path root;

    @Test
    void aSpecHasTheKindDevicesAndEditsInCdiForm() throws Exception {
        CdiSpecs cdi = new CdiSpecs(root);
        ContainerEdits common = new ContainerEdits(Map.of("NVIDIA_VISIBLE_DEVICES", "GPU-a"), List.of(DeviceNode.rw("/dev/nvidiactl")),
                List.of(new ContainerEdits.Mount("/host/lib", "/lib/x", List.of("ro", "bind"))), Map.of("qgpu.io/tenant", "u1"));
        List<String> ids = cdi.write("u1", common, List.of(new CdiSpecs.Device("u1-gpu-0",
                new ContainerEdits(Map.of(), List.of(DeviceNode.rw("/dev/nvidia0")), List.of(), Map.of()))));
        assertEquals(List.of("qgpu.io/gpu=u1-gpu-0"), ids);
        Path file = root.resolve("qgpu.io-gpu_u1.json");
        assertEquals(file, cdi.file("u1"));
        JsonNode spec = new ObjectMapper().readTree(file.toFile());
        assertEquals("0.6.0", spec.get("cdiVersion").asText());
        assertEquals("qgpu.io/gpu", spec.get("kind").asText());
        assertEquals("u1", spec.at("/annotations/qgpu.io~1tenant").asText());
        assertEquals("u1-gpu-0", spec.at("/devices/0/name").asText());
        assertEquals("/dev/nvidia0", spec.at("/devices/0/containerEdits/deviceNodes/0/path").asText());
        assertEquals("rw", spec.at("/devices/0/containerEdits/deviceNodes/0/permissions").asText());
        assertEquals("NVIDIA_VISIBLE_DEVICES=GPU-a", spec.at("/containerEdits/env/0").asText());
        assertEquals("/dev/nvidiactl", spec.at("/containerEdits/deviceNodes/0/path").asText());
        assertEquals("/host/lib", spec.at("/containerEdits/mounts/0/hostPath").asText());
        assertEquals("bind", spec.at("/containerEdits/mounts/0/options/1").asText());
        try (Stream<Path> files = Files.list(root)) {
            assertEquals(List.of(file), files.toList(), "no temporary file is left beside the spec");
        }
        assertTrue(cdi.delete("u1"));
        assertFalse(Files.exists(file));
        assertFalse(cdi.delete("u1"));
    }

    @Test
    void namesCdiRefusesAreRefused() {
        CdiSpecs cdi = new CdiSpecs(root);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> cdi.write("u1", ContainerEdits.EMPTY, List.of(new CdiSpecs.Device("-bad", ContainerEdits.EMPTY))));
        assertTrue(e.getMessage().startsWith("CDI device name -bad: "), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> cdi.file("a/b"));
        assertThrows(IllegalArgumentException.class, () -> cdi.write("u1", ContainerEdits.EMPTY, List.of()));
    }
}
