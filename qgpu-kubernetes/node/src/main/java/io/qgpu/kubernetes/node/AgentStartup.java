package io.qgpu.kubernetes.node;

import io.qgpu.kubernetes.node.mps.MpsSupervisor;
import io.qgpu.nvml.Nvml;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The start-up steps the node agents (the device plugin and the DRA driver) share: opening the NVML
 * session of {@code --nvml-lib} / {@code --machine}, and the daemon timer that checks GPU health
 * recovery and ticks the MPS supervisor.
 *
 * <pre>{@code
 * Nvml nvml = AgentStartup.openNvml(Optional.of(Path.of("/path/to/fake-nvml/libnvidia-ml.so.1")), Optional.of("t4x4"));
 * GpuHealth health = GpuHealth.start(nvml, listener, ticker, Duration.ofMinutes(5));
 * ScheduledExecutorService timer = AgentStartup.timer("qgpu-device-plugin-health", health, Duration.ofSeconds(10),
 *         null, Duration.ZERO);   // null when both periods are zero
 * }</pre>
 *
 * <p>Thread safety: stateless.
 */
public final class AgentStartup {
    private static final Logger LOG = LoggerFactory.getLogger(AgentStartup.class);

    private AgentStartup() {
    }

    /**
     * Opens an NVML session on the library given (the system's when empty) and, when a fake machine is
     * given, asks the fake library to play it; closes the session if that fails.
     *
     * @throws IllegalArgumentException from {@link FakeNvml#selectMachine}, naming {@code --machine}
     */
    public static Nvml openNvml(Optional<Path> library, Optional<String> fakeMachine) {
        Nvml.Builder b = Nvml.builder();
        library.ifPresent(b::libraryPath);
        Nvml nvml = b.open();
        try {
            if (fakeMachine.isPresent()) {
                FakeNvml.selectMachine(nvml.library(), fakeMachine.get());
            }
            return nvml;
        } catch (RuntimeException e) {
            nvml.close();
            throw e;
        }
    }

    /**
     * The agent's timer, one daemon thread of the given name: calls {@link GpuHealth#recoverDue()} every
     * {@code recoveryCheckEvery} (logging a failure, never stopping) and, with a supervisor, ticks it every
     * {@code mpsTickEvery}. A zero period switches that job off.
     *
     * @param mps the MPS supervisor, or null without {@code --sharing mps}
     * @return the timer for the caller to shut down, or null when there is nothing to run
     */
    public static ScheduledExecutorService timer(String threadName, GpuHealth health, Duration recoveryCheckEvery,
                                                 MpsSupervisor mps, Duration mpsTickEvery) {
        boolean tickMps = mps != null && !mpsTickEvery.isZero();
        if (recoveryCheckEvery.isZero() && !tickMps) {
            return null;
        }
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, threadName);
            t.setDaemon(true);
            return t;
        });
        if (!recoveryCheckEvery.isZero()) {
            long every = recoveryCheckEvery.toMillis();
            timer.scheduleWithFixedDelay(() -> {
                try {
                    health.recoverDue();
                } catch (RuntimeException e) {
                    LOG.warn("health recovery check failed", e);
                }
            }, every, every, TimeUnit.MILLISECONDS);
        }
        if (tickMps) {
            mps.tickEvery(timer, mpsTickEvery);
        }
        return timer;
    }

    /**
     * Removes the temporary files that a {@code kill -9} or a crash left of writes of the agent's state file
     * and, when given, of its CDI specs ({@link AtomicFiles#removeLeftovers}, {@link CdiSpecs#removeLeftovers}),
     * logging each. Called at an agent's start, before it writes either.
     *
     * @throws java.io.IOException naming the directory when one cannot be listed or a file removed
     */
    public static void removeUnfinishedWrites(Path stateFile, Optional<CdiSpecs> cdi) throws java.io.IOException {
        Path state = stateFile.toAbsolutePath();
        java.util.List<Path> removed = new java.util.ArrayList<>(AtomicFiles.removeLeftovers(state.getParent(),
                state.getFileName().toString()));
        cdi.ifPresent(c -> removed.addAll(c.removeLeftovers()));
        for (Path f : removed) {
            LOG.info("removed {}, the temporary file of a write that did not finish before the last stop", f);
        }
    }
}
