package io.qgpu.kubernetes.dra;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.qgpu.kubernetes.node.AgentChecks;
import io.qgpu.kubernetes.node.AgentClients;
import io.qgpu.kubernetes.node.AgentFlags;
import io.qgpu.kubernetes.node.AgentStartup;
import io.qgpu.kubernetes.node.ApiServerCheck;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import io.qgpu.nvml.NvmlLibraryException;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code java -jar qgpu-dra-driver.jar --node-name NODE [options]}: starts the driver and runs until
 * stopped (SIGTERM, logged). A bad flag or value, and whatever can be checked before the driver starts (writable
 * directories, the state file, the NVML library and the fake machine, the API server's answer within
 * {@code --api-timeout}), is refused with one line naming the flag as written and the value, and exit code 2; no
 * stack trace. {@code --help} lists the options.
 *
 * <p>Thread safety: not applicable (entry point).
 */
public final class Main {
    /** Exit code of a refused command line. */
    public static final int USAGE_ERROR = 2;
    /** Exit code of a driver that could not start. */
    public static final int START_ERROR = 1;

    static final String USAGE = """
            usage: java -jar qgpu-dra-driver.jar --node-name NODE [options]

            A Kubernetes DRA driver (gpu.qgpu.io) for qgpu: publishes the node's GPUs as shareable devices and
            prepares ResourceClaims with CDI specs, qgpu's ledger and granularity rules behind it.

              --node-name NODE                         this node's name (default: $NODE_NAME)
              --kubeconfig FILE                        kubeconfig (default: $KUBECONFIG, ~/.kube/config, else the
                                                       in-cluster configuration)
              --api-timeout D                          how long the API server may take to answer at start
                                                       (default 10s; a number and a unit)
              --kubelet-registrar-directory-path DIR   the kubelet's plugin registrar directory
                                                       (default /var/lib/kubelet/plugins_registry)
              --kubelet-plugins-directory-path DIR     the kubelet's plugins directory (default /var/lib/kubelet/plugins)
              --cdi-root DIR                           where CDI specs are written (default /var/run/cdi;
                                                       created when missing; must be writable)
              --state-file FILE                        prepared claims kept across restarts
                                                       (default: PLUGINS_DIR/gpu.qgpu.io/state.json)
              --nvml-lib FILE                          load NVML from FILE instead of libnvidia-ml.so.1
              --machine NAME                           with the fake NVML library only: the machine it plays:
                                                       dgx-h100, t4x4, a100-bridged, a100-mig, x86-numa
                                                       or h100-vm
              --rules NAME                             granularity rules: qgpu (default), hami or gpu-manager
              --recover-after SECONDS                  seconds without a critical Xid before a GPU is published
                                                       again (default 300, at most 3153600000)
            """ + SharingOptions.USAGE + """
              --help                                   this text
            Each option takes its value as the next argument or after '=' (--cdi-root=/var/run/cdi).
            """;

    private static final Set<String> VALUED = Set.of("--node-name", "--kubeconfig", "--kubelet-registrar-directory-path",
            "--kubelet-plugins-directory-path", "--cdi-root", "--state-file", "--nvml-lib", "--machine", "--rules",
            "--recover-after", "--api-timeout", "--sharing", "--mps-root", "--mps-control", "--mps-shm-dir", "--hami-core-library",
            "--mps-daemons",
            "--hami-core-cache-root", "--hami-core-lock-dir",
            "--hami-core-preload", "--hami-core-preload-file");
    private static final Logger LOG = LoggerFactory.getLogger(Main.class);

    private Main() {
    }

    public static void main(String[] args) {
        quietStartup();
        System.exit(run(args, System.getenv(), System.out, System.err));
    }

    /**
     * Settings that keep the start-up free of warnings that are not the user's to act on (JDK 24 and later): Netty's
     * calls to {@code sun.misc.Unsafe}'s memory methods, in the API client's Netty (fabric8's Vert.x) and in gRPC's
     * shaded copy; the driver's few small messages do not need them. Set before any Netty class loads; a value the
     * user set on the command line wins. (JNA's native access is enabled by the jar's manifest,
     * {@code Enable-Native-Access: ALL-UNNAMED}.)
     */
    static void quietStartup() {
        for (String p : List.of("io.netty.noUnsafe", "io.grpc.netty.shaded.io.netty.noUnsafe")) {
            if (System.getProperty(p) == null) {
                System.setProperty(p, "true");
            }
        }
    }

    /**
     * Runs the driver until it is stopped.
     *
     * @return the exit code: 0 after a stop or {@code --help}, {@value #USAGE_ERROR} for a refused command
     *         line, {@value #START_ERROR} when the driver could not start
     */
    static int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err) {
        if (System.getProperty("org.slf4j.simpleLogger.log.io.grpc.netty.shaded.io.netty.bootstrap") == null) {
            System.setProperty("org.slf4j.simpleLogger.log.io.grpc.netty.shaded.io.netty.bootstrap", "error");
        }
        DriverConfig config;
        Optional<Path> kubeconfig;
        java.time.Duration apiTimeout;
        try {
            Map<String, String> opts = parse(List.of(args));
            if (opts.containsKey("--help")) {
                out.print(USAGE);
                return 0;
            }
            config = config(opts, env);
            kubeconfig = Optional.ofNullable(opts.get("--kubeconfig")).map(Path::of);
            apiTimeout = AgentFlags.apiTimeout(opts);
            AgentChecks.sharingPrograms(config.sharing(), env.get("PATH"));
        } catch (IllegalArgumentException e) {
            err.println("error: " + e.getMessage());
            return USAGE_ERROR;
        }
        try {
            // what the state file holds (its JSON was read by config()): its version, node and claims
            new DriverStateFile(config.stateFile(), config.nodeName(), config.bootId()).load();
        } catch (IllegalStateException e) {
            err.println("error: " + stateFileProblem(config, e));
            return USAGE_ERROR;
        }
        try {
            // the NVML library and the fake machine, before the API server: both are checked before anything starts
            AgentStartup.openNvml(config.nvmlLibrary(), config.fakeMachine()).close();
        } catch (IllegalArgumentException e) {
            err.println("error: " + e.getMessage());
            return USAGE_ERROR;
        } catch (NvmlLibraryException e) {
            err.println("error: " + AgentChecks.nvmlLoadFailure(e, config.nvmlLibrary().map(Path::toString)));
            return config.nvmlLibrary().isPresent() ? USAGE_ERROR : START_ERROR;
        }
        KubernetesClient client;
        try {
            client = AgentClients.client(kubeconfig);
        } catch (IOException | RuntimeException e) {
            err.println("error: --kubeconfig " + kubeconfig.map(Path::toString).orElse("(in-cluster)") + ": " + e.getMessage());
            return USAGE_ERROR;
        }
        Optional<String> api = ApiServerCheck.problem(client, apiTimeout);
        if (api.isPresent()) {
            client.close();
            err.println("error: " + kubeconfig.map(k -> "--kubeconfig " + k).orElse("kubeconfig ($KUBECONFIG, ~/.kube/config or in-cluster)") + ": " + api.get());
            return USAGE_ERROR;
        }
        DraDriver driver;
        try {
            driver = DraDriver.start(config, client);
        } catch (IllegalArgumentException e) {
            // --machine naming a machine the fake library does not play, or another library
            err.println("error: " + e.getMessage());
            client.close();
            return USAGE_ERROR;
        } catch (NvmlLibraryException e) {
            client.close();
            err.println("error: " + AgentChecks.nvmlLoadFailure(e, config.nvmlLibrary().map(Path::toString)));
            return config.nvmlLibrary().isPresent() ? USAGE_ERROR : START_ERROR;
        } catch (IllegalStateException e) {
            client.close();
            String m = String.valueOf(e.getMessage());
            if (m.startsWith("state file " + config.stateFile() + ": ")) {
                err.println("error: " + stateFileProblem(config, e));
                return USAGE_ERROR;
            }
            err.println("error: the driver could not start: " + firstLine(m));
            return START_ERROR;
        } catch (IOException | RuntimeException e) {
            err.println("error: the driver could not start: " + firstLine(String.valueOf(e.getMessage())));
            client.close();
            return START_ERROR;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            LOG.info("stopping (signal received): closing {}, the driver's sockets and NVML", config.nodeName());
            driver.close();
            client.close();
        }, "qgpu-dra-driver-stop"));
        try {
            driver.awaitClose();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return 0;
    }

    /** Options to values ({@code ""} for {@code --help}); refuses unknown, repeated or valueless options. */
    static Map<String, String> parse(List<String> args) {
        return AgentFlags.parse(args, VALUED);
    }

    /** The configuration the options describe; refuses a value by flag name and value. */
    static DriverConfig config(Map<String, String> opts, Map<String, String> env) {
        String node = opts.get("--node-name");
        if (node == null) {
            node = env.get("NODE_NAME");
            if (node == null || node.isBlank()) {
                throw new IllegalArgumentException("--node-name is required (or $NODE_NAME)");
            }
        }
        AgentChecks.nodeName("--node-name", node);
        Path registrar = existingDir(opts, "--kubelet-registrar-directory-path", DriverNames.DEFAULT_REGISTRAR_DIR);
        Path plugins = existingDir(opts, "--kubelet-plugins-directory-path", DriverNames.DEFAULT_PLUGINS_DIR);
        Path cdi = Path.of(opts.getOrDefault("--cdi-root", DriverNames.DEFAULT_CDI_ROOT));
        AgentChecks.writableDirectory("--cdi-root", cdi);
        DriverConfig c = DriverConfig.defaults(node).withDirectories(registrar, plugins, cdi)
                .withStateFile(DriverConfig.defaultStateFile(plugins));
        socketFits("--kubelet-registrar-directory-path", registrar, c.registrationSocket());
        socketFits("--kubelet-plugins-directory-path", plugins, c.draSocket());
        if (opts.containsKey("--state-file")) {
            c = c.withStateFile(Path.of(opts.get("--state-file")));
        }
        AgentChecks.stateFile(opts.containsKey("--state-file") ? "--state-file " + opts.get("--state-file")
                : "the state file " + c.stateFile() + " (--state-file)", c.stateFile(),
                "fix or remove the file (the driver then starts with no prepared claims)");
        if (opts.containsKey("--kubeconfig") && !Files.isRegularFile(Path.of(opts.get("--kubeconfig")))) {
            throw new IllegalArgumentException("--kubeconfig " + opts.get("--kubeconfig") + ": no such file");
        }
        Optional<Path> lib = Optional.ofNullable(opts.get("--nvml-lib")).map(Path::of);
        lib.ifPresent(l -> AgentChecks.library("--nvml-lib", l.toString()));
        Optional<String> machine = Optional.ofNullable(opts.get("--machine"));
        if (machine.isPresent() && lib.isEmpty()) {
            throw new IllegalArgumentException("--machine " + machine.get() + ": needs --nvml-lib naming the fake NVML library");
        }
        machine.ifPresent(AgentChecks::fakeMachine);
        c = c.withNvml(lib, machine);
        c = AgentFlags.rules(opts).map(c::withRules).orElse(c);
        c = c.withRecovery(AgentFlags.recoverAfter(opts).orElse(c.recoverAfter()), c.recoveryCheckEvery(), c.ticker());
        c = c.withSharing(SharingOptions.parse(opts));
        return c;
    }

    /** A state file whose content the driver cannot take: the file, the JSON path, what is wrong, what to do. */
    private static String stateFileProblem(DriverConfig config, IllegalStateException e) {
        String m = firstLine(String.valueOf(e.getMessage()));
        String prefix = "state file " + config.stateFile() + ": ";
        return "--state-file " + config.stateFile() + ": " + (m.startsWith(prefix) ? m.substring(prefix.length()) : m)
                + "; fix or remove the file (the driver then starts with no prepared claims)";
    }

    private static String firstLine(String s) {
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }

    private static Path existingDir(Map<String, String> opts, String flag, String fallback) {
        Path p = Path.of(opts.getOrDefault(flag, fallback));
        if (!Files.isDirectory(p)) {
            throw new IllegalArgumentException(flag + " " + p + ": no such directory");
        }
        return p;
    }

    private static void socketFits(String flag, Path dir, Path socket) {
        int bytes = socket.toString().getBytes(StandardCharsets.UTF_8).length;
        if (bytes >= DriverNames.SOCKET_PATH_MAX) {
            throw new IllegalArgumentException(flag + " " + dir + ": the socket path " + socket + " has " + bytes
                    + " bytes; Linux allows at most " + (DriverNames.SOCKET_PATH_MAX - 1));
        }
    }
}
