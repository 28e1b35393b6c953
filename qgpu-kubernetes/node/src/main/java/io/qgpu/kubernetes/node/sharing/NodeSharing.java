package io.qgpu.kubernetes.node.sharing;

import io.qgpu.api.Placement;
import java.util.Objects;

/**
 * A node's sharing back end and its settings: the one entry the node agents ask for a container's
 * {@link SharingEdits}. {@link #open} refuses a back end the node cannot run (HAMi-core without its library).
 *
 * <pre>{@code
 * NodeSharing sharing = NodeSharing.open(SharingBackend.parse(flag), MpsSharing.of(layout), hamiSettings);
 * SharingEdits e = sharing.edits(placement, podUid + "_" + containerName);
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public final class NodeSharing {
    private final SharingBackend backend;
    private final MpsSharing mps;
    private final HamiCoreSharing hamiCore;

    private NodeSharing(SharingBackend backend, MpsSharing mps, HamiCoreSharing hamiCore) {
        this.backend = backend;
        this.mps = mps;
        this.hamiCore = hamiCore;
    }

    /** No back end: every container gets {@link SharingEdits#none()}. */
    public static NodeSharing none() {
        return new NodeSharing(SharingBackend.NONE, null, null);
    }

    /**
     * The node's back end with the settings it needs ({@code mps} for {@link SharingBackend#MPS},
     * {@code hamiCore} for {@link SharingBackend#HAMI_CORE}; the other may be {@code null}).
     *
     * @throws io.qgpu.api.InvalidValueException when HAMi-core's library is missing ({@link HamiCoreSharing#checkLibrary()})
     * @throws NullPointerException              when the chosen back end's settings are {@code null}
     */
    public static NodeSharing open(SharingBackend backend, MpsSharing mps, HamiCoreSharing hamiCore) {
        Objects.requireNonNull(backend, "backend");
        switch (backend) {
            case NONE -> {
                return none();
            }
            case MPS -> {
                return new NodeSharing(backend, Objects.requireNonNull(mps, "mps settings"), null);
            }
            case HAMI_CORE -> {
                Objects.requireNonNull(hamiCore, "hami-core settings").checkLibrary();
                return new NodeSharing(backend, null, hamiCore);
            }
            default -> throw new AssertionError(backend);
        }
    }

    /** The node's back end. */
    public SharingBackend backend() {
        return backend;
    }

    /**
     * What the back end adds to the container of this placement.
     *
     * @param containerKey names the container on the node (used by HAMi-core for its cache directory)
     */
    public SharingEdits edits(Placement p, String containerKey) {
        Objects.requireNonNull(p, "placement");
        return switch (backend) {
            case NONE -> SharingEdits.none();
            case MPS -> mps.edits(p);
            case HAMI_CORE -> hamiCore.edits(p, containerKey);
        };
    }
}
