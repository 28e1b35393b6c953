package io.qgpu.kubernetes.deviceplugin;

import io.grpc.Status;
import io.qgpu.api.InvalidValueException;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerAllocateResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DeviceSpec;
import io.qgpu.kubernetes.node.ContainerEdits;
import io.qgpu.kubernetes.node.PlacementEdits;

/**
 * What a container gets for an {@link Allocation}: the placement's container edits as the node agents'
 * one mapping ({@link PlacementEdits}, with the node's sharing back end) decides them (its environment, the
 * control device nodes and {@code /dev/nvidiaN} of each GPU read-write, the annotations {@code qgpu.io/gpus}
 * and {@code qgpu.io/tenant}; with {@code --sharing mps|hami-core} the back end's environment, mounts and the
 * annotation {@code qgpu.io/sharing}), plus {@value Names#ENV_VIRTUAL_DEVICES}, turned into the kubelet's
 * answer.
 *
 * <p>{@code Allocate} names no pod or container, so the container key a back end may need (HAMi-core's
 * per-container cache directory) is the allocation's first virtual id, with characters other than
 * {@code A-Z a-z 0-9 . _ -} as {@code _}: the kubelet hands an id out again only once its container is gone,
 * and the directory is emptied before the container starts.
 *
 * <p>Thread safety: immutable.
 */
public final class ContainerEnvironment {
    private final PlacementEdits mapping;

    /** @param mapping the placement's container edits */
    public ContainerEnvironment(PlacementEdits mapping) {
        this.mapping = mapping;
    }

    /** The container key of an allocation (see the class comment). */
    static String containerKey(Allocation a) {
        return a.deviceIds().get(0).replaceAll("[^A-Za-z0-9._-]", "_");
    }

    /** The edits of an allocation: the placement's, then {@value Names#ENV_VIRTUAL_DEVICES}. */
    public ContainerEdits edits(Allocation a) {
        return placementEdits(a).all().withEnv(Names.ENV_VIRTUAL_DEVICES, String.join(",", a.deviceIds()));
    }

    private PlacementEdits.Edits placementEdits(Allocation a) {
        try {
            return mapping.edits(a.placement(), containerKey(a));
        } catch (InvalidValueException e) {
            throw new PluginException(Status.Code.FAILED_PRECONDITION, "--sharing " + mapping.sharing().backend().wireName()
                    + " refuses the allocation of " + a.deviceIds() + ": " + e.getMessage(), e);
        }
    }

    /**
     * The kubelet's answer for one container; the host directories its sharing back end needs are created
     * first.
     *
     * @throws PluginException {@code FAILED_PRECONDITION} when the back end refuses the placement,
     *                         {@code INTERNAL} when a host directory cannot be created
     */
    public ContainerAllocateResponse response(Allocation a) {
        PlacementEdits.Edits pe = placementEdits(a);
        try {
            pe.createHostDirectories();
        } catch (java.io.UncheckedIOException e) {
            throw new PluginException(Status.Code.INTERNAL, e.getMessage(), e);
        }
        ContainerEdits e = pe.all().withEnv(Names.ENV_VIRTUAL_DEVICES, String.join(",", a.deviceIds()));
        ContainerAllocateResponse.Builder r = ContainerAllocateResponse.newBuilder();
        r.putAllEnvs(e.env());
        for (ContainerEdits.DeviceNode n : e.deviceNodes()) {
            r.addDevices(DeviceSpec.newBuilder().setContainerPath(n.path()).setHostPath(n.path()).setPermissions(n.permissions()));
        }
        for (ContainerEdits.Mount m : e.mounts()) {
            r.addMounts(io.qgpu.kubernetes.deviceplugin.v1beta1.Mount.newBuilder().setContainerPath(m.containerPath())
                    .setHostPath(m.hostPath()).setReadOnly(m.readOnly()));
        }
        r.putAllAnnotations(e.annotations());
        return r.build();
    }
}
