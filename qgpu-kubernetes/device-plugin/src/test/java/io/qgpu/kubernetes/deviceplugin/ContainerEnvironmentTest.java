package io.qgpu.kubernetes.deviceplugin;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.Placement;
import io.qgpu.api.Slice;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerAllocateResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DeviceSpec;
import io.qgpu.kubernetes.node.PlacementEdits;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The Allocate answer built from the node agents' shared mapping ({@link PlacementEdits}) is byte for byte
 * the answer the plugin built by hand before the mapping existed (that construction is repeated here).
 */
class ContainerEnvironmentTest {

    static ContainerAllocateResponse asBuiltBefore(Allocation a, Map<String, Integer> minorOf) {
        ContainerAllocateResponse.Builder r = ContainerAllocateResponse.newBuilder();
        r.putAllEnvs(a.placement().environment());
        r.putEnvs("QGPU_VIRTUAL_DEVICES", String.join(",", a.deviceIds()));
        for (String path : List.of("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")) {
            r.addDevices(DeviceSpec.newBuilder().setContainerPath(path).setHostPath(path).setPermissions("rw").build());
        }
        for (String gpu : a.gpus()) {
            String path = "/dev/nvidia" + minorOf.get(gpu);
            r.addDevices(DeviceSpec.newBuilder().setContainerPath(path).setHostPath(path).setPermissions("rw").build());
        }
        r.putAnnotations("qgpu.io/gpus", String.join(",", a.gpus()));
        r.putAnnotations("qgpu.io/tenant", a.tenantId());
        return r.build();
    }

    @Test
    void theAnswerIsTheSameBytesAsBefore() {
        Map<String, Integer> minors = Map.of("GPU-a", 0, "GPU-b", 5);
        Claim c = Claim.builder("pod-1").gpus(2).memoryBytes(8 * GpuDevice.GIB).compute(20, 40).build();
        Placement p = new Placement(c, "node-a", List.of(new Slice("GPU-b", 8 * GpuDevice.GIB, 20, 40),
                new Slice("GPU-a", 8 * GpuDevice.GIB, 20, 40)));
        Allocation a = new Allocation(List.of("GPU-b::1", "GPU-a::0"), Map.of("GPU-b::1", "GPU-b", "GPU-a::0", "GPU-a"), p,
                Optional.of("default/pod-1"));
        ContainerAllocateResponse now = new ContainerEnvironment(new PlacementEdits(minors)).response(a);
        ContainerAllocateResponse before = asBuiltBefore(a, minors);
        assertEquals(before, now);
        assertArrayEquals(before.toByteArray(), now.toByteArray());
    }
}
