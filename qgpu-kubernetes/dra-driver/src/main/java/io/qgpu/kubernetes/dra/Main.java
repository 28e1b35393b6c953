package io.qgpu.kubernetes.dra;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.qgpu.kubernetes.node.AgentFlags;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import io.qgpu.nvml.NvmlLibraryException;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * {@code java -jar qgpu-dra-driver.jar --node-name NODE [options]}: starts the driver and runs until
 * stopped (SIGTERM). A bad flag or value is refused with one line naming the flag as written and the
 * value, and exit code 2; no stack trace. {@code --help} lists the options.
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
              --kubeconfig FILE                        kubeconfig (default: in-cluster configuration)
              --kubelet-registrar-directory-path DIR   the kubelet's plugin registrar directory
                                                       (default /var/lib/kubelet/plugins_registry)
              --kubelet-plugins-directory-path DIR     the kubelet's plugins directory (default /var/lib/kubelet/plugins)
              --cdi-root DIR                           where CDI specs are written (default /var/run/cdi)
              --state-file FILE                        prepared claims kept across restarts
                                                       (default: PLUGINS_DIR/gpu.qgpu.io/state.json)
              --nvml-lib FILE                          load NVML from FILE instead of libnvidia-ml.so.1
              --machine NAME                           with the fake NVML library only: the machine it plays
              --rules NAME                             granularity rules: qgpu (default), hami or gpu-manager
              --recover-after SECONDS                  seconds without a critical Xid before a GPU is published
                                                       again (default 300)
            """ + SharingOptions.USAGE + """
              --help                                   this text
            Each option takes its value as the next argument or after '=' (--cdi-root=/var/run/cdi).
            """;

    private static final Set<String> VALUED = Set.of("--node-name", "--kubeconfig", "--kubelet-registrar-directory-path",
            "--kubelet-plugins-directory-path", "--cdi-root", "--state-file", "--nvml-lib", "--machine", "--rules",
            "--recover-after", "--sharing", "--mps-root", "--mps-control", "--mps-shm-dir", "--hami-core-library",
            "--mps-daemons",
            "--hami-core-cache-root", "--hami-core-lock-dir",
            "--hami-core-preload", "--hami-core-preload-file");
    /** A node name: a DNS subdomain, as Kubernetes requires. */
    private static final Pattern NODE = Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");

    private Main() {
    }

    public static void main(String[] args) {
        System.exit(run(args, System.getenv(), System.out, System.err));
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
        try {
            Map<String, String> opts = parse(List.of(args));
            if (opts.containsKey("--help")) {
                out.print(USAGE);
                return 0;
            }
            config = config(opts, env);
            kubeconfig = Optional.ofNullable(opts.get("--kubeconfig")).map(Path::of);
        } catch (IllegalArgumentException e) {
            err.println("error: " + e.getMessage());
            return USAGE_ERROR;
        }
        KubernetesClient client;
        try {
            client = client(kubeconfig);
        } catch (IOException | RuntimeException e) {
            err.println("error: --kubeconfig " + kubeconfig.map(Path::toString).orElse("(in-cluster)") + ": " + e.getMessage());
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
            if (config.nvmlLibrary().isPresent()) {
                err.println("error: --nvml-lib " + config.nvmlLibrary().get() + ": not an NVML library: " + e.getMessage());
                return USAGE_ERROR;
            }
            err.println("error: the driver could not start: " + e.getMessage());
            return START_ERROR;
        } catch (IOException | RuntimeException e) {
            err.println("error: the driver could not start: " + e.getMessage());
            client.close();
            return START_ERROR;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
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

    /** A client from the kubeconfig file, else fabric8's automatic configuration (in a pod: the in-cluster one). */
    static KubernetesClient client(Optional<Path> kubeconfig) throws IOException {
        if (kubeconfig.isPresent()) {
            return new KubernetesClientBuilder()
                    .withConfig(Config.fromKubeconfig(Files.readString(kubeconfig.get(), StandardCharsets.UTF_8))).build();
        }
        return new KubernetesClientBuilder().build();
    }

    /** Options to values ({@code ""} for {@code --help}); refuses unknown, repeated or valueless options. */
    static Map<String, String> parse(List<String> args) {
        Map<String, String> out = new LinkedHashMap<>();
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            String name = a;
            String value = null;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                name = a.substring(0, eq);
                value = a.substring(eq + 1);
            }
            if ("--help".equals(a)) {
                out.put(a, "");
                continue;
            }
            if (!VALUED.contains(name)) {
                throw new IllegalArgumentException("unknown argument " + a);
            }
            if (value == null) {
                if (i + 1 >= args.size() || args.get(i + 1).startsWith("--")) {
                    throw new IllegalArgumentException(name + " needs a value");
                }
                value = args.get(++i);
            }
            if (value.isEmpty()) {
                throw new IllegalArgumentException(name + " \"\": must not be empty");
            }
            if (out.put(name, value) != null) {
                throw new IllegalArgumentException(name + " is given twice");
            }
        }
        return out;
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
        if (node.length() > 253 || !NODE.matcher(node).matches()) {
            throw new IllegalArgumentException("--node-name " + node + ": must be a DNS subdomain (lower-case letters, digits, '-' and '.')");
        }
        Path registrar = existingDir(opts, "--kubelet-registrar-directory-path", DriverNames.DEFAULT_REGISTRAR_DIR);
        Path plugins = existingDir(opts, "--kubelet-plugins-directory-path", DriverNames.DEFAULT_PLUGINS_DIR);
        Path cdi = Path.of(opts.getOrDefault("--cdi-root", DriverNames.DEFAULT_CDI_ROOT));
        if (Files.exists(cdi) && !Files.isDirectory(cdi)) {
            throw new IllegalArgumentException("--cdi-root " + cdi + ": not a directory");
        }
        DriverConfig c = DriverConfig.defaults(node).withDirectories(registrar, plugins, cdi)
                .withStateFile(DriverConfig.defaultStateFile(plugins));
        socketFits("--kubelet-registrar-directory-path", registrar, c.registrationSocket());
        socketFits("--kubelet-plugins-directory-path", plugins, c.draSocket());
        if (opts.containsKey("--state-file")) {
            Path f = Path.of(opts.get("--state-file"));
            if (Files.isDirectory(f)) {
                throw new IllegalArgumentException("--state-file " + f + ": is a directory");
            }
            c = c.withStateFile(f);
        }
        if (opts.containsKey("--kubeconfig") && !Files.isRegularFile(Path.of(opts.get("--kubeconfig")))) {
            throw new IllegalArgumentException("--kubeconfig " + opts.get("--kubeconfig") + ": no such file");
        }
        Optional<Path> lib = Optional.ofNullable(opts.get("--nvml-lib")).map(Path::of);
        if (lib.isPresent() && !Files.isRegularFile(lib.get())) {
            throw new IllegalArgumentException("--nvml-lib " + lib.get() + ": no such file");
        }
        Optional<String> machine = Optional.ofNullable(opts.get("--machine"));
        if (machine.isPresent() && lib.isEmpty()) {
            throw new IllegalArgumentException("--machine " + machine.get() + ": needs --nvml-lib naming the fake NVML library");
        }
        c = c.withNvml(lib, machine);
        c = AgentFlags.rules(opts).map(c::withRules).orElse(c);
        c = c.withRecovery(AgentFlags.recoverAfter(opts).orElse(c.recoverAfter()), c.recoveryCheckEvery(), c.ticker());
        c = c.withSharing(SharingOptions.parse(opts));
        return c;
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
