package io.qgpu.kubernetes.deviceplugin;

import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerAllocateResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DeviceSpec;
import java.util.List;
import java.util.Map;

/**
 * What a container gets for an {@link Allocation}: the placement's environment
 * ({@code NVIDIA_VISIBLE_DEVICES} with the physical UUIDs and the qgpu limits
 * {@code QGPU_MEMORY_LIMIT_BYTES}, {@code QGPU_COMPUTE_REQUEST}, {@code QGPU_COMPUTE_LIMIT},
 * {@code QGPU_PRIORITY}, {@code QGPU_TENANT}) plus {@value Names#ENV_VIRTUAL_DEVICES}; the device
 * nodes {@code /dev/nvidiactl}, {@code /dev/nvidia-uvm}, {@code /dev/nvidia-uvm-tools} and
 * {@code /dev/nvidiaN} of each GPU (read-write); and annotations for the runtime naming the GPUs
 * and the tenant.
 *
 * <p>Thread safety: immutable.
 */
public final class ContainerEnvironment {
    /** Device nodes every GPU container needs, besides one {@code /dev/nvidiaN} per GPU. */
    public static final List<String> CONTROL_DEVICES = List.of("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools");

    private final Map<String, Integer> minorOf;

    /** @param minorOf GPU UUID to the minor number {@code N} of its {@code /dev/nvidiaN} */
    public ContainerEnvironment(Map<String, Integer> minorOf) {
        this.minorOf = Map.copyOf(minorOf);
    }

    /** The kubelet's answer for one container. */
    public ContainerAllocateResponse response(Allocation a) {
        ContainerAllocateResponse.Builder r = ContainerAllocateResponse.newBuilder();
        r.putAllEnvs(a.placement().environment());
        r.putEnvs(Names.ENV_VIRTUAL_DEVICES, String.join(",", a.deviceIds()));
        for (String path : CONTROL_DEVICES) {
            r.addDevices(spec(path));
        }
        for (String gpu : a.gpus()) {
            Integer minor = minorOf.get(gpu);
            if (minor == null) {
                throw new IllegalStateException("no device node known for GPU " + gpu);
            }
            r.addDevices(spec("/dev/nvidia" + minor));
        }
        r.putAnnotations(Names.CONTAINER_GPUS, String.join(",", a.gpus()));
        r.putAnnotations(Names.CONTAINER_TENANT, a.tenantId());
        return r.build();
    }

    private static DeviceSpec spec(String path) {
        return DeviceSpec.newBuilder().setContainerPath(path).setHostPath(path).setPermissions("rw").build();
    }
}
