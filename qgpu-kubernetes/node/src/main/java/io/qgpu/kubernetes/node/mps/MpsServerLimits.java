package io.qgpu.kubernetes.node.mps;

import io.qgpu.kubernetes.node.reconcile.NodeResource;
import java.io.IOException;
import java.util.LinkedHashSet;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The daemon-side MPS limits of each shared GPU ({@link MpsLimits}) as a {@link NodeResource} of the agent's
 * reconciler, one key per GPU: desired, the shared GPUs; present, the GPUs whose running daemon has the limits last
 * asked for. {@link #ensure} computes the GPU's limits from the agent's state now (they change with the slices on
 * the GPU) and has the {@link MpsSupervisor} set them (a no-op when the daemon has them); it fails while the daemon
 * does not run or a command fails, and the reconciler retries it. {@link #remove} forgets the GPU's limits
 * (nothing is sent: a daemon that is quit loses them, one left running keeps the last ones).
 *
 * <pre>{@code
 * NodeResource<String> limits = new MpsServerLimits(supervisor, () -> sharedGpus(),
 *         gpu -> MpsLimits.forGpu(gpu, ledger.placements(), MpsLimits.smallest(rules)));
 * }</pre>
 *
 * <p>Thread safety: thread-safe (the supervisor serialises); {@code limits} must read the agent's state safely.
 */
public final class MpsServerLimits implements NodeResource<String> {
    /** The resource's kind in the reconciler's reports. */
    public static final String KIND = "mps-limits";

    private final MpsSupervisor supervisor;
    private final Supplier<Set<String>> shared;
    private final Function<String, MpsLimits> limits;

    /**
     * @param supervisor the node's supervisor
     * @param shared     the GPUs whose daemons must hold limits
     * @param limits     a GPU's limits now
     */
    public MpsServerLimits(MpsSupervisor supervisor, Supplier<Set<String>> shared, Function<String, MpsLimits> limits) {
        this.supervisor = Objects.requireNonNull(supervisor, "supervisor");
        this.shared = Objects.requireNonNull(shared, "shared");
        this.limits = Objects.requireNonNull(limits, "limits");
    }

    @Override
    public String kind() {
        return KIND;
    }

    @Override
    public Set<String> desired() {
        return new LinkedHashSet<>(shared.get());
    }

    @Override
    public Set<String> present() {
        return supervisor.limited();
    }

    @Override
    public void ensure(String gpu) throws IOException {
        supervisor.applyLimits(gpu, limits.apply(gpu));
    }

    @Override
    public void remove(String gpu) {
        supervisor.forgetLimits(gpu);
    }
}
