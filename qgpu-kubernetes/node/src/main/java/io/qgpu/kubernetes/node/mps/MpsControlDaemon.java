package io.qgpu.kubernetes.node.mps;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Ticker;
import io.qgpu.kubernetes.node.AgentFlags;
import io.qgpu.kubernetes.node.AgentStartup;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.NvmlDevice;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The program of the MPS control daemon DaemonSet ({@code deploy/mps-control-daemon.yaml} of either agent): in its
 * own pod, apart from the node agent, it runs one MPS control daemon per GPU of the node and keeps it running, so
 * that the daemons outlive the agent's restarts and upgrades. The agent, with {@code --mps-daemons external},
 * adopts these daemons, sets the GPUs' compute mode and the daemons' limits, and never starts or quits one.
 *
 * <p>For each GPU it starts (or adopts, when one already answers) a daemon as {@link ProcessMpsControl} does
 * ({@code CUDA_VISIBLE_DEVICES} the GPU, its pipe and log directories under the MPS root), sets the daemon's
 * defaults to the smallest slice the granularity rules allow (so that a client that reaches a daemon before the
 * agent has set the GPU's limits does not get the whole GPU), makes the shared-memory directory {@code rwxrwxrwt}
 * (creating it when missing),
 * and supervises the daemons with the agent's own {@link MpsSupervisor} ({@link MpsDaemonMode#AGENT}: health
 * checks every 5 s, restarts with back-off). {@link #close()} (the pod's stop, on SIGTERM) quits them.
 *
 * <pre>{@code
 * java -cp qgpu-dra-driver.jar io.qgpu.kubernetes.node.mps.MpsControlDaemon --mps-root /run/qgpu/mps
 * }</pre>
 *
 * <p>Thread safety: thread-safe.
 */
public final class MpsControlDaemon implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MpsControlDaemon.class);

    /** Exit code of a refused command line. */
    public static final int USAGE_ERROR = 2;
    /** Exit code when the daemons could not be started (NVML could not be read). */
    public static final int START_ERROR = 1;

    static final String USAGE = """
            usage: java -cp <agent jar> io.qgpu.kubernetes.node.mps.MpsControlDaemon [options]

            Runs one MPS control daemon per GPU of the node and keeps it running, for a qgpu node agent started with
            --sharing mps --mps-daemons external; see docs/enforcement.md.

              --mps-root DIR        the daemons' pipe and log directories (default /run/qgpu/mps)
              --mps-control PATH    nvidia-cuda-mps-control (default: found on the PATH)
              --mps-shm-dir DIR     the MPS shared-memory directory (this container's /dev/shm, which is the node's
                                    directory mounted there), made rwxrwxrwt (default MPS_ROOT/shm)
              --rules NAME          granularity rules whose smallest slice the daemons' defaults are: qgpu (default),
                                    hami or gpu-manager
              --nvml-lib FILE       load NVML from FILE instead of libnvidia-ml.so.1
              --machine NAME        with the fake NVML library only: the machine it plays
              --help                this text
            Each option takes its value as the next argument or after '='.
            """;

    private static final Set<String> VALUED = Set.of("--mps-root", "--mps-control", "--mps-shm-dir", "--rules", "--nvml-lib",
            "--machine");

    private final MpsSupervisor supervisor;
    private final ScheduledExecutorService timer;
    private final CountDownLatch closed = new CountDownLatch(1);

    private MpsControlDaemon(MpsSupervisor supervisor, ScheduledExecutorService timer) {
        this.supervisor = supervisor;
        this.timer = timer;
    }

    /**
     * Starts (or adopts) a daemon for each GPU, their defaults {@code floor}, and ticks their supervisor every
     * {@code tickEvery} (zero: never; tests tick it themselves).
     *
     * @param control   runs {@code nvidia-cuda-mps-control}
     * @param gpus      the node's GPUs
     * @param floor     the daemons' default limits
     * @param shmDir    the shared-memory directory, made {@code rwxrwxrwt} (created when missing)
     * @param settings  health checks and back-off
     * @param ticker    the supervisor's clock
     * @param tickEvery how often the supervisor is ticked
     * @throws IOException when the shared-memory directory cannot be created
     */
    public static MpsControlDaemon start(MpsControl control, List<String> gpus, MpsLimits floor, Path shmDir,
                                         MpsSupervisor.Settings settings, Ticker ticker, Duration tickEvery) throws IOException {
        Objects.requireNonNull(floor, "floor");
        MpsNode.ownShm(shmDir);
        MpsSupervisor supervisor = new MpsSupervisor(control, MpsDaemonMode.AGENT, settings, ticker);
        supervisor.share(gpus);
        for (String gpu : gpus) {
            try {
                supervisor.applyLimits(gpu, floor);
            } catch (IOException | IllegalStateException e) {
                LOG.warn("the defaults of GPU {}'s MPS control daemon are set once it runs: {}", gpu, e.getMessage());
            }
        }
        ScheduledExecutorService timer = null;
        if (!tickEvery.isZero()) {
            timer = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "qgpu-mps-control-daemon");
                t.setDaemon(true);
                return t;
            });
            supervisor.tickEvery(timer, tickEvery);
        }
        LOG.info("MPS control daemons of {} GPU(s) started or adopted, defaults {}: {}", gpus.size(), floor, supervisor.status().keySet());
        return new MpsControlDaemon(supervisor, timer);
    }

    /** The supervisor of the daemons. */
    public MpsSupervisor supervisor() {
        return supervisor;
    }

    /** Blocks until {@link #close()}. */
    public void awaitClose() throws InterruptedException {
        closed.await();
    }

    /** Stops the supervision and quits every daemon. Idempotent. */
    @Override
    public void close() {
        if (closed.getCount() == 0) {
            return;
        }
        try {
            if (timer != null) {
                timer.shutdownNow();
                try {
                    timer.awaitTermination(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            supervisor.quitAll();
        } finally {
            closed.countDown();
        }
    }

    /** Runs until SIGTERM; exits {@value #USAGE_ERROR} for a refused command line, {@value #START_ERROR} when it cannot start. */
    public static void main(String[] args) {
        System.exit(run(args, System.err));
    }

    /**
     * Parses the command line, starts the daemons and blocks until the JVM is asked to stop.
     *
     * @param err where a refused command line, the usage text and a failed start are written
     * @return the exit code
     */
    static int run(String[] args, PrintStream err) {
        Map<String, String> opts;
        try {
            opts = parse(List.of(args));
        } catch (IllegalArgumentException e) {
            err.println("error: " + e.getMessage());
            return USAGE_ERROR;
        }
        if (opts.containsKey("--help")) {
            err.print(USAGE);
            return 0;
        }
        Options o;
        try {
            o = Options.of(opts);
        } catch (InvalidValueException e) {
            err.println("error: " + e.getMessage());
            return USAGE_ERROR;
        }
        List<String> gpus;
        try (Nvml nvml = AgentStartup.openNvml(o.nvmlLibrary(), o.fakeMachine())) {
            gpus = new ArrayList<>();
            for (NvmlDevice d : nvml.devices()) {
                gpus.add(d.uuid());
            }
        } catch (RuntimeException e) {
            err.println("error: the node's GPUs cannot be read through NVML: " + e.getMessage());
            return START_ERROR;
        }
        MpsControlDaemon daemons;
        try {
            daemons = start(new ProcessMpsControl(o.control(), o.layout(), Duration.ofSeconds(10)), gpus, o.floor(), o.shmDir(),
                    MpsSupervisor.Settings.defaults(), Ticker.system(), Duration.ofSeconds(1));
        } catch (IOException | RuntimeException e) {
            err.println("error: the MPS control daemons could not start: " + e.getMessage());
            return START_ERROR;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(daemons::close, "qgpu-mps-control-daemon-stop"));
        try {
            daemons.awaitClose();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return 0;
    }

    /**
     * The program's settings.
     *
     * @param layout      the MPS directories
     * @param control     {@code nvidia-cuda-mps-control}
     * @param shmDir      the shared-memory directory
     * @param floor       the daemons' default limits: the rules' smallest slice
     * @param nvmlLibrary the NVML library, if not the system's
     * @param fakeMachine the fake NVML library's machine, if any
     *
     * <p>Thread safety: immutable.
     */
    record Options(MpsLayout layout, Path control, Path shmDir, MpsLimits floor, Optional<Path> nvmlLibrary, Optional<String> fakeMachine) {
        /** From the parsed flags; refuses a value by flag and value. */
        static Options of(Map<String, String> opts) {
            MpsLayout layout = new MpsLayout(Path.of(opts.getOrDefault("--mps-root", MpsLayout.DEFAULT_ROOT.toString())));
            Path shm = Optional.ofNullable(opts.get("--mps-shm-dir")).map(Path::of).orElse(layout.defaultShmDir());
            if (!shm.isAbsolute()) {
                throw new InvalidValueException("--mps-shm-dir", shm.toString(), "must be an absolute path");
            }
            GranularityRules rules;
            try {
                rules = GranularityRules.preset(opts.getOrDefault("--rules", "qgpu"));
            } catch (InvalidValueException e) {
                throw new InvalidValueException("--rules", opts.get("--rules"), "must be one of qgpu, hami, gpu-manager");
            }
            return new Options(layout, Path.of(opts.getOrDefault("--mps-control", ProcessMpsControl.BINARY)), shm,
                    MpsLimits.smallest(rules), Optional.ofNullable(opts.get("--nvml-lib")).map(Path::of),
                    Optional.ofNullable(opts.get("--machine")));
        }
    }

    /** Options to values ({@code ""} for {@code --help}); refuses unknown, repeated or valueless options. */
    static Map<String, String> parse(List<String> args) {
        return AgentFlags.parse(args, VALUED);
    }
}
