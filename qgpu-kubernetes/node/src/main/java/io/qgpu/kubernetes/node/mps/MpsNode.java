package io.qgpu.kubernetes.node.mps;

import io.qgpu.api.Placement;
import io.qgpu.api.Slice;
import io.qgpu.kubernetes.node.reconcile.NodeReconciler;
import io.qgpu.kubernetes.node.reconcile.NodeResource;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a node agent with {@code --sharing mps} keeps in line on its node, as the reconciler's resources in the order
 * they are ensured (removed in reverse):
 * <ol>
 *   <li>{@value #SHM_KIND}: the MPS shared-memory directory on the node ({@code --mps-shm-dir}), which the daemons
 *       and every client use as {@code /dev/shm}; created {@code rwxrwxrwt} (as {@code /dev/shm} is) when missing;</li>
 *   <li>{@link ComputeModes}: each shared GPU in {@code EXCLUSIVE_PROCESS}, its previous mode restored when sharing
 *       stops on it;</li>
 *   <li>{@link MpsDaemons}: each shared GPU's control daemon runs (adopted, or started in
 *       {@link MpsDaemonMode#AGENT} mode);</li>
 *   <li>{@link MpsServerLimits}: each shared GPU's daemon holds the GPU's daemon-side limits.</li>
 * </ol>
 * The shared GPUs are the node's GPUs except those an exclusive claim holds ({@link #sharedGpus}): an exclusive
 * claim bypasses MPS and may run several processes, which {@code EXCLUSIVE_PROCESS} would forbid, so sharing stops
 * on its GPUs while it holds them and starts again when it is released.
 *
 * <p>{@link #ensureNow} and {@link #removeNow} run the steps of some GPUs at once through the agent's reconciler,
 * for an agent that must not answer before they hold (the DRA driver's prepare).
 *
 * <pre>{@code
 * MpsNode mps = new MpsNode(supervisor, ComputeModes.nvml(nvml), layout, shmDir,
 *         () -> MpsNode.sharedGpus(gpus, ledger.placements()),
 *         gpu -> MpsLimits.forGpu(gpu, ledger.placements(), MpsLimits.smallest(rules)));
 * resources.addAll(mps.resources());
 * }</pre>
 *
 * <p>Thread safety: as its resources'.
 */
public final class MpsNode {
    private static final Logger LOG = LoggerFactory.getLogger(MpsNode.class);

    /** The kind of the shared-memory directory's resource. */
    public static final String SHM_KIND = "mps-shm-dir";

    private final MpsSupervisor supervisor;
    private final NodeResource<String> shm;
    private final ComputeModes computeModes;
    private final MpsDaemons daemons;
    private final MpsServerLimits limits;

    /**
     * @param supervisor the node's MPS supervisor
     * @param gpus       the GPUs' compute modes
     * @param layout     the MPS directories (where each GPU's previous compute mode is kept)
     * @param shmDir     the MPS shared-memory directory on the node
     * @param shared     the GPUs under MPS now
     * @param limits     a shared GPU's daemon-side limits now
     */
    public MpsNode(MpsSupervisor supervisor, ComputeModes.Gpus gpus, MpsLayout layout, Path shmDir, Supplier<Set<String>> shared,
                   Function<String, MpsLimits> limits) {
        this.supervisor = Objects.requireNonNull(supervisor, "supervisor");
        Objects.requireNonNull(shmDir, "shmDir");
        String shmPath = shmDir.toString();
        this.shm = NodeResource.of(SHM_KIND, () -> Set.of(shmPath), () -> Files.isDirectory(shmDir) ? Set.of(shmPath) : Set.of(),
                p -> createShm(Path.of(p)), p -> { });
        this.computeModes = new ComputeModes(gpus, layout, shared);
        this.daemons = new MpsDaemons(supervisor, shared);
        this.limits = new MpsServerLimits(supervisor, shared, limits);
    }

    /** The supervisor. */
    public MpsSupervisor supervisor() {
        return supervisor;
    }

    /** The resources, in the order they are ensured. */
    public List<NodeResource<?>> resources() {
        return List.of(shm, computeModes, daemons, limits);
    }

    /**
     * Ensures these GPUs' compute mode, daemon and limits now (and the shared-memory directory), in that order; the
     * first failure is thrown (the reconciler's passes retry it).
     */
    public void ensureNow(NodeReconciler r, Collection<String> gpus) throws Exception {
        List<String> keys = List.copyOf(gpus);
        r.ensureNow(shm, shm.desired());
        r.ensureNow(computeModes, keys);
        r.ensureNow(daemons, keys);
        r.ensureNow(limits, keys);
    }

    /**
     * Stops sharing on these GPUs now: forgets their limits, gives their daemons up (quit in
     * {@link MpsDaemonMode#AGENT} mode) and restores their compute mode; each step is attempted, what fails is left to
     * later passes.
     *
     * @return whether every step held
     */
    public boolean removeNow(NodeReconciler r, Collection<String> gpus) {
        List<String> keys = List.copyOf(gpus);
        boolean all = r.removeNow(limits, keys);
        all &= r.removeNow(daemons, keys);
        all &= r.removeNow(computeModes, keys);
        return all;
    }

    /** The node's GPUs less those an exclusive claim among the placements holds, in the node's order. */
    public static Set<String> sharedGpus(Collection<String> nodeGpus, Collection<Placement> placements) {
        Set<String> out = new LinkedHashSet<>(nodeGpus);
        out.removeAll(exclusiveGpus(placements));
        return out;
    }

    /** The GPUs the exclusive claims among the placements hold. */
    public static Set<String> exclusiveGpus(Collection<Placement> placements) {
        Set<String> out = new LinkedHashSet<>();
        for (Placement p : placements) {
            if (p.claim().exclusive()) {
                for (Slice s : p.slices()) {
                    out.add(s.gpuUuid());
                }
            }
        }
        return out;
    }

    /** The GPUs a placement's slices are on, when it is a shared GPU claim (empty for exclusive and host-only ones). */
    public static List<String> sharedGpusOf(Placement p) {
        if (p.claim().exclusive() || p.claim().hostOnly()) {
            return List.of();
        }
        List<String> out = new ArrayList<>();
        for (Slice s : p.slices()) {
            out.add(s.gpuUuid());
        }
        return out;
    }

    /**
     * Creates the shared-memory directory when missing, {@code rwxrwxrwt} like {@code /dev/shm} (every client user
     * may create its files, none may remove another's); a directory that exists keeps its mode.
     */
    static void createShm(Path dir) throws IOException {
        if (Files.isDirectory(dir)) {
            return;
        }
        Files.createDirectories(dir);
        shmMode(dir);
        LOG.info("MPS shared-memory directory {} created", dir);
    }

    /**
     * Creates the shared-memory directory when missing and makes it {@code rwxrwxrwt} in any case: the MPS control
     * daemon DaemonSet's pod owns it (the kubelet creates a missing host path {@code rwxr-xr-x}).
     */
    static void ownShm(Path dir) throws IOException {
        Files.createDirectories(dir);
        shmMode(dir);
    }

    private static void shmMode(Path dir) throws IOException {
        try {
            Files.setAttribute(dir, "unix:mode", 01777);
        } catch (UnsupportedOperationException | IllegalArgumentException e) {
            // no unix attribute view: at least every user may create files there
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
        }
    }
}
