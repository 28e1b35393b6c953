package io.qgpu.kubernetes.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.Placement;
import io.qgpu.api.Slice;
import io.qgpu.kubernetes.node.ContainerEdits.DeviceNode;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The one mapping from a placement to container edits. */
class PlacementEditsTest {
    final PlacementEdits mapping = new PlacementEdits(Map.of("GPU-a", 0, "GPU-b", 3));

    Placement twoGpus() {
        Claim c = Claim.builder("t1").gpus(2).memoryBytes(8 * GpuDevice.GIB).compute(30, 60).build();
        return new Placement(c, "node-a", List.of(new Slice("GPU-b", 8 * GpuDevice.GIB, 30, 60),
                new Slice("GPU-a", 8 * GpuDevice.GIB, 30, 60)));
    }

    @Test
    void environmentDeviceNodesAndAnnotationsInOrder() {
        PlacementEdits.Edits e = mapping.edits(twoGpus());
        ContainerEdits all = e.all();
        assertEquals(List.of("NVIDIA_VISIBLE_DEVICES=GPU-b,GPU-a", "QGPU_MEMORY_LIMIT_BYTES=8589934592,8589934592",
                "QGPU_COMPUTE_REQUEST=30", "QGPU_COMPUTE_LIMIT=60", "QGPU_PRIORITY=offline", "QGPU_TENANT=t1"), all.envStrings());
        assertEquals(List.of(DeviceNode.rw("/dev/nvidiactl"), DeviceNode.rw("/dev/nvidia-uvm"), DeviceNode.rw("/dev/nvidia-uvm-tools"),
                DeviceNode.rw("/dev/nvidia3"), DeviceNode.rw("/dev/nvidia0")), all.deviceNodes());
        assertEquals(List.of(), all.mounts());
        assertEquals(Map.of("qgpu.io/gpus", "GPU-b,GPU-a", "qgpu.io/tenant", "t1"), all.annotations());
        assertEquals(List.of("qgpu.io/gpus", "qgpu.io/tenant"), List.copyOf(all.annotations().keySet()));
        // split: the control devices once, one node per GPU in the placement's order
        assertEquals(3, e.common().deviceNodes().size());
        assertEquals(List.of("GPU-b", "GPU-a"), List.copyOf(e.perGpu().keySet()));
        assertEquals(List.of(DeviceNode.rw("/dev/nvidia3")), e.perGpu().get("GPU-b").deviceNodes());
        assertEquals(Map.of(), e.perGpu().get("GPU-b").env());
    }

    @Test
    void aGpuWithoutADeviceNodeIsRefusedByName() {
        PlacementEdits none = new PlacementEdits(Map.of("GPU-a", 0));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> none.edits(twoGpus()));
        assertEquals("no device node known for GPU GPU-b", e.getMessage());
    }

    @Test
    void editsJoinInOrderAndLaterValuesWin() {
        ContainerEdits a = ContainerEdits.EMPTY.withEnv("A", "1").withEnv("B", "2");
        ContainerEdits b = a.plus(new ContainerEdits(Map.of("A", "3"), List.of(DeviceNode.rw("/dev/x")),
                List.of(new ContainerEdits.Mount("/h", "/c", List.of("ro", "bind"))), Map.of("k", "v")));
        assertEquals(List.of("A=3", "B=2"), b.envStrings());
        assertEquals(1, b.mounts().size());
        assertThrows(IllegalArgumentException.class, () -> ContainerEdits.EMPTY.withEnv("", "x"));
        assertThrows(IllegalArgumentException.class, () -> DeviceNode.rw("dev/nvidia0"));
    }
}
