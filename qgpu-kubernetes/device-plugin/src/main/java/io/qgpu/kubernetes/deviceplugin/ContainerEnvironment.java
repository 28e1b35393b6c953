package io.qgpu.kubernetes.deviceplugin;

import io.grpc.Status;
import io.qgpu.api.InvalidValueException;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerAllocateResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DeviceSpec;
import io.qgpu.kubernetes.node.ContainerEdits;
import io.qgpu.kubernetes.node.PlacementEdits;
import io.qgpu.kubernetes.node.reconcile.OwnedDirectories;
import io.qgpu.kubernetes.node.reconcile.NodeTransaction;
import io.qgpu.kubernetes.node.sharing.SharingEdits;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 * <p>Inside an {@code Allocate} ({@link #response(Allocation, NodeTransaction)}) every host directory the answer
 * creates is removed again when the allocation is rolled back: the topmost directory of its path that did not
 * exist before. A directory that existed before is emptied as a fresh one is (its container is gone) and kept.
 * The directories of the live allocations directly under the back end's own root
 * ({@link #ownedDirectories}) are the desired state of the plugin's reconciler, which removes the others.
 *
 * <p>Thread safety: immutable; the directories are created under the pool's lock.
 */
public final class ContainerEnvironment {
    private static final Logger LOG = LoggerFactory.getLogger(ContainerEnvironment.class);

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
     * The host directories the live allocations' answers name directly under {@code root} (HAMi-core's
     * per-container cache directories under {@code --hami-core-cache-root}): the directories the plugin's
     * reconciler keeps there. An allocation the back end refuses by now names none.
     */
    public Set<Path> ownedDirectories(Collection<Allocation> live, Path root) {
        Path r = root.toAbsolutePath().normalize();
        Set<Path> out = new LinkedHashSet<>();
        for (Allocation a : live) {
            try {
                for (SharingEdits.HostDirectory d : placementEdits(a).hostDirectories()) {
                    Path p = Path.of(d.path()).toAbsolutePath().normalize();
                    if (r.equals(p.getParent())) {
                        out.add(p);
                    }
                }
            } catch (RuntimeException e) {
                LOG.warn("the directories of {} cannot be named: {}", a.deviceIds(), e.getMessage());
            }
        }
        return out;
    }

    /**
     * The host paths the live allocations' containers share (HAMi-core's lock directory and its {@code ld.so.preload}
     * file): what the plugin's reconciler makes hold again when one goes missing. An allocation the back end
     * refuses by now names none.
     */
    public Set<SharingEdits.HostPath> sharedPaths(Collection<Allocation> live) {
        Set<SharingEdits.HostPath> out = new LinkedHashSet<>();
        for (Allocation a : live) {
            try {
                for (SharingEdits.HostPath p : placementEdits(a).hostPaths()) {
                    if (!p.fresh()) {
                        out.add(p);
                    }
                }
            } catch (RuntimeException e) {
                LOG.warn("the shared paths of {} cannot be named: {}", a.deviceIds(), e.getMessage());
            }
        }
        return out;
    }

    /**
     * The kubelet's answer for one container; the host paths its sharing back end needs (directories, and files such
     * as HAMi-core's {@code ld.so.preload}) are created first (without a transaction to take them back).
     *
     * @throws PluginException {@code FAILED_PRECONDITION} when the back end refuses the placement,
     *                         {@code INTERNAL} when a host directory cannot be created
     */
    public ContainerAllocateResponse response(Allocation a) {
        PlacementEdits.Edits pe = placementEdits(a);
        try {
            pe.createHostPaths();
        } catch (UncheckedIOException e) {
            throw new PluginException(Status.Code.INTERNAL, e.getMessage(), e);
        }
        return response(a, pe);
    }

    /**
     * The kubelet's answer for one container inside an {@code Allocate}'s transaction: the host paths its sharing
     * back end needs (directories and files) are created first, each registering on {@code tx}, before it is
     * created, the removal of the topmost entry of its path that did not exist (so a creation that fails half-way
     * is taken back too; a shared file that existed is kept as it was or as rewritten).
     *
     * @throws PluginException {@code FAILED_PRECONDITION} when the back end refuses the placement,
     *                         {@code INTERNAL} when a host directory cannot be created
     */
    public ContainerAllocateResponse response(Allocation a, NodeTransaction tx) {
        PlacementEdits.Edits pe = placementEdits(a);
        for (SharingEdits.HostPath d : pe.hostPaths()) {
            Path top = topmostMissing(Path.of(d.path()));
            if (top != null) {
                tx.undo("remove host path " + top, () -> removeTree(top));
            }
            try {
                d.create();
            } catch (IOException e) {
                throw new PluginException(Status.Code.INTERNAL, e.getMessage(), e);
            }
        }
        return response(a, pe);
    }

    private ContainerAllocateResponse response(Allocation a, PlacementEdits.Edits pe) {
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

    /** The topmost directory of {@code p}'s path (itself included) that does not exist; null when it exists. */
    private static Path topmostMissing(Path p) {
        Path abs = p.toAbsolutePath().normalize();
        if (Files.exists(abs, LinkOption.NOFOLLOW_LINKS)) {
            return null;
        }
        Path top = abs;
        for (Path up = abs.getParent(); up != null && !Files.exists(up, LinkOption.NOFOLLOW_LINKS); up = up.getParent()) {
            top = up;
        }
        return top;
    }

    /** Deletes a directory tree without following links ({@link OwnedDirectories#deleteTree}); nothing when it is gone. */
    static void removeTree(Path p) {
        try {
            OwnedDirectories.deleteTree(p);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot remove " + p + ": " + e.getMessage(), e);
        }
    }
}
