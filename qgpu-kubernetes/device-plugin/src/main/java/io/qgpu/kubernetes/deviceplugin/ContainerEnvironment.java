package io.qgpu.kubernetes.deviceplugin;

import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerAllocateResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DeviceSpec;
import io.qgpu.kubernetes.node.ContainerEdits;
import io.qgpu.kubernetes.node.PlacementEdits;

/**
 * What a container gets for an {@link Allocation}: the placement's container edits as the node agents'
 * one mapping ({@link PlacementEdits}) decides them (its environment, the control device nodes and
 * {@code /dev/nvidiaN} of each GPU read-write, the annotations {@code qgpu.io/gpus} and
 * {@code qgpu.io/tenant}), plus {@value Names#ENV_VIRTUAL_DEVICES}, turned into the kubelet's answer.
 *
 * <p>Thread safety: immutable.
 */
public final class ContainerEnvironment {
    private final PlacementEdits mapping;

    /** @param mapping the placement's container edits */
    public ContainerEnvironment(PlacementEdits mapping) {
        this.mapping = mapping;
    }

    /** The edits of an allocation: the placement's, then {@value Names#ENV_VIRTUAL_DEVICES}. */
    public ContainerEdits edits(Allocation a) {
        return mapping.edits(a.placement()).all().withEnv(Names.ENV_VIRTUAL_DEVICES, String.join(",", a.deviceIds()));
    }

    /** The kubelet's answer for one container. */
    public ContainerAllocateResponse response(Allocation a) {
        ContainerEdits e = edits(a);
        ContainerAllocateResponse.Builder r = ContainerAllocateResponse.newBuilder();
        r.putAllEnvs(e.env());
        for (ContainerEdits.DeviceNode n : e.deviceNodes()) {
            r.addDevices(DeviceSpec.newBuilder().setContainerPath(n.path()).setHostPath(n.path()).setPermissions(n.permissions()));
        }
        for (ContainerEdits.Mount m : e.mounts()) {
            r.addMounts(io.qgpu.kubernetes.deviceplugin.v1beta1.Mount.newBuilder().setContainerPath(m.containerPath())
                    .setHostPath(m.hostPath()).setReadOnly(m.options().contains("ro")));
        }
        r.putAllAnnotations(e.annotations());
        return r.build();
    }
}
