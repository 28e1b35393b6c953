package io.qgpu.kubernetes.node.mps;

import io.qgpu.kubernetes.node.reconcile.NodeResource;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The node's MPS control daemons as a {@link NodeResource} of the agent's reconciler, one key per GPU: desired,
 * the GPUs the agent shares; present, the GPUs the {@link MpsSupervisor} supervises. {@link #ensure} has the
 * supervisor share the GPU (adopting a daemon that answers, else starting one in {@link MpsDaemonMode#AGENT} mode,
 * else, in {@link MpsDaemonMode#EXTERNAL} mode, checking whether the DaemonSet's daemon answers now) and holds
 * once its daemon runs; a daemon that does not run fails the step with the supervisor's state, so the reconciler's
 * report shows it. {@link #remove} stops sharing the GPU: in {@code AGENT} mode the supervisor quits its daemon, in
 * {@code EXTERNAL} mode the daemon is left to its pod. The daemons' own health checks and restarts stay the
 * supervisor's, on the agent's timer ({@link MpsSupervisor#tick()}).
 *
 * <pre>{@code
 * NodeResource<String> daemons = new MpsDaemons(supervisor, () -> sharedGpus());
 * }</pre>
 *
 * <p>Thread safety: thread-safe (the supervisor serialises).
 */
public final class MpsDaemons implements NodeResource<String> {
    /** The resource's kind in the reconciler's reports. */
    public static final String KIND = "mps-daemon";

    private final MpsSupervisor supervisor;
    private final Supplier<Set<String>> shared;

    /**
     * @param supervisor the node's supervisor
     * @param shared     the GPUs whose daemons must run
     */
    public MpsDaemons(MpsSupervisor supervisor, Supplier<Set<String>> shared) {
        this.supervisor = Objects.requireNonNull(supervisor, "supervisor");
        this.shared = Objects.requireNonNull(shared, "shared");
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
        return new LinkedHashSet<>(supervisor.status().keySet());
    }

    @Override
    public void ensure(String gpu) {
        Map<String, MpsSupervisor.DaemonStatus> now = supervisor.status();
        if (!now.containsKey(gpu)) {
            Set<String> all = new LinkedHashSet<>(now.keySet());
            all.add(gpu);
            supervisor.share(all);
        } else {
            supervisor.adoptIfAnswering(gpu);
        }
        MpsSupervisor.DaemonStatus s = supervisor.status().get(gpu);
        if (s == null || s.state() != MpsSupervisor.State.RUNNING) {
            if (supervisor.mode() == MpsDaemonMode.EXTERNAL) {
                throw new IllegalStateException("no MPS control daemon answers for GPU " + gpu + " (" + MpsDaemonMode.FLAG
                        + " external: the MPS control daemon DaemonSet starts it; deploy mps-control-daemon.yaml, or run the agent with "
                        + MpsDaemonMode.FLAG + " agent)");
            }
            throw new IllegalStateException("the MPS control daemon of GPU " + gpu + " is not running: " + s);
        }
    }

    @Override
    public void remove(String gpu) {
        Set<String> all = new LinkedHashSet<>(supervisor.status().keySet());
        if (all.remove(gpu)) {
            supervisor.share(all);
        }
    }
}
