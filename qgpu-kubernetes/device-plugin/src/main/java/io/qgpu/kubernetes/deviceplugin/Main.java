package io.qgpu.kubernetes.deviceplugin;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.qgpu.api.QgpuException;
import io.qgpu.json.JsonInput;
import io.qgpu.json.QgpuJsonException;
import io.qgpu.kubernetes.node.AgentChecks;
import io.qgpu.kubernetes.node.AgentFlags;
import io.qgpu.kubernetes.node.ApiServerCheck;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import io.qgpu.nvml.NvmlLibraryException;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code java -jar qgpu-device-plugin.jar --plugin-dir DIR [options]}: starts the plugin and runs
 * until stopped (SIGTERM). {@code --help} lists the options.
 *
 * <p>Thread safety: not applicable (entry point).
 */
public final class Main {

    static final String USAGE = """
            usage: java -jar qgpu-device-plugin.jar --plugin-dir DIR [options]

            A kubelet device plugin for qgpu: advertises virtual GPU ids of the resource qgpu.io/gpu
            and maps them to physical GPUs at Allocate (the scheduler extender's choice, else its own).

              --plugin-dir DIR      the kubelet's device plugin directory: holds kubelet.sock and
                                    receives the plugin's socket qgpu.sock (required)
              --nvml-lib PATH       load NVML from PATH instead of libnvidia-ml.so.1
              --machine NAME        with the fake NVML library only: dgx-h100, t4x4, a100-bridged,
                                    a100-mig, x86-numa or h100-vm
              --node-name NAME      the node's name, a DNS subdomain (default: $NODE_NAME, else $HOSTNAME,
                                    else local)
              --state-file PATH     allocations kept across restarts
                                    (default: DIR/../qgpu-device-plugin-state.json)
              --rules NAME          granularity rules: qgpu (default), hami or gpu-manager
              --recover-after SEC   seconds without a critical Xid before a GPU is healthy again (default 300,
                                    at most 3153600000)
              --kubernetes          read the extender's decisions from the pods of this node
                                    (kubeconfig: $KUBECONFIG, ~/.kube/config, or in-cluster); the API server
                                    must answer at start
              --api-timeout D       with --kubernetes: how long the API server may take to answer at start
                                    (default 10s; a number and a unit)
            """ + SharingOptions.USAGE + """
              --help                this text
            """;

    /** The machines the fake NVML library plays (qgpu-nvml/src/test/c/fake_nvml.c); the plugin starts on each. */
    static final List<String> FAKE_MACHINES = AgentChecks.FAKE_MACHINES;

    private static final Logger LOG = LoggerFactory.getLogger(Main.class);

    private Main() {
    }

    public static void main(String[] args) {
        quietStartup();
        int rc = run(List.of(args), System.out, System.err);
        if (rc != 0) {
            System.exit(rc);
        }
    }

    /**
     * Settings that keep the start-up free of warnings that are not the user's to act on: Netty's note on
     * every Unix socket that TCP keep-alive does not apply to it, and (JDK 24 and later) the warning that
     * Netty calls {@code sun.misc.Unsafe}'s memory methods (gRPC's shaded Netty, and with {@code --kubernetes} the API
     * client's): the plugin's few small messages do not need them.
     * A value the user set on the command line wins.
     */
    static void quietStartup() {
        for (Map.Entry<String, String> e : Map.of(
                "org.slf4j.simpleLogger.log.io.grpc.netty.shaded.io.netty.bootstrap", "error",
                "io.grpc.netty.shaded.io.netty.noUnsafe", "true",
                "io.netty.noUnsafe", "true").entrySet()) {
            if (System.getProperty(e.getKey()) == null) {
                System.setProperty(e.getKey(), e.getValue());
            }
        }
    }

    /**
     * Parses, starts and blocks until the plugin is stopped; returns the exit code. Bad input or
     * configuration (a flag, the state file, the NVML library, the fake machine) is one line on
     * {@code err} naming the flag as written and the value, and exit code 2; never a stack trace.
     */
    static int run(List<String> args, PrintStream out, PrintStream err) {
        PluginConfig config;
        Map<String, String> opts;
        try {
            opts = parse(args);
        } catch (IllegalArgumentException e) {
            usageError(err, e.getMessage());
            return 2;
        }
        if (opts.containsKey("--help")) {
            out.print(USAGE);
            return 0;
        }
        try {
            config = config(opts, System.getenv());
        } catch (IllegalArgumentException e) {
            // a flag's value: one line naming it (the usage text is for unknown options)
            err.println("error: " + e.getMessage());
            return 2;
        }
        DevicePlugin plugin;
        KubernetesClient client = null;
        try {
            if (opts.containsKey("--kubernetes")) {
                client = new KubernetesClientBuilder().build();
                Optional<String> api = ApiServerCheck.problem(client, AgentFlags.apiTimeout(opts));
                if (api.isPresent()) {
                    client.close();
                    err.println("error: --kubernetes: " + api.get());
                    return 2;
                }
                config = config.withDecisions(new KubernetesPodDecisions(client, config.nodeName()));
            }
            plugin = DevicePlugin.start(config);
        } catch (RuntimeException | IOException e) {
            if (client != null) {
                client.close();
            }
            err.println("error: " + startFailure(e, opts));
            return e instanceof RuntimeException && !(e instanceof IllegalArgumentException || e instanceof NvmlLibraryException
                    || e instanceof StateFile.StateFileException || e instanceof QgpuException) ? 1 : 2;
        }
        KubernetesClient c = client;
        Path socket = config.pluginDir().resolve(config.endpoint());
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            LOG.info("stopping (signal received): closing {} and NVML", socket);
            plugin.close();
            if (c != null) {
                c.close();
            }
        }, "qgpu-device-plugin-stop"));
        try {
            plugin.awaitClose();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return 0;
    }

    /** Why the plugin did not start, in one line naming the flag the user can change. */
    static String startFailure(Exception e, Map<String, String> opts) {
        if (e instanceof NvmlLibraryException n) {
            return AgentChecks.nvmlLoadFailure(n, Optional.ofNullable(opts.get("--nvml-lib")));
        }
        if (e instanceof StateFile.StateFileException) {
            String file = opts.getOrDefault("--state-file", "(default) ");
            String m = e.getMessage();
            int colon = m.indexOf(": ");
            return "--state-file " + file.trim() + ": " + (m.startsWith("state file ") && colon > 0 ? m.substring(colon + 2) : m);
        }
        return firstLine(e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage());
    }

    private static String firstLine(String s) {
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }

    static void usageError(PrintStream err, String message) {
        err.println("error: " + message);
        err.print(USAGE);
    }

    private static final Set<String> FLAGS = Set.of("--help", "--kubernetes");
    private static final Set<String> VALUED = Set.of("--plugin-dir", "--nvml-lib", "--machine", "--node-name",
            "--state-file", "--rules", "--recover-after", "--api-timeout", "--sharing", "--mps-root", "--mps-control", "--mps-shm-dir",
            "--mps-daemons",
            "--hami-core-library", "--hami-core-cache-root", "--hami-core-lock-dir",
            "--hami-core-preload", "--hami-core-preload-file");

    /** Options to values ({@code ""} for flags); refuses unknown, repeated or valueless options. */
    static Map<String, String> parse(List<String> args) {
        Map<String, String> out = new LinkedHashMap<>();
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            if (FLAGS.contains(a)) {
                out.put(a, "");
            } else if (VALUED.contains(a)) {
                if (i + 1 >= args.size() || args.get(i + 1).startsWith("--")) {
                    throw new IllegalArgumentException(a + " needs a value");
                }
                if (out.put(a, args.get(++i)) != null) {
                    throw new IllegalArgumentException(a + " is given twice");
                }
            } else {
                throw new IllegalArgumentException("unknown argument " + a);
            }
        }
        return out;
    }

    /** The configuration the options describe. */
    static PluginConfig config(Map<String, String> opts, Map<String, String> env) {
        String dir = opts.get("--plugin-dir");
        if (dir == null) {
            throw new IllegalArgumentException("--plugin-dir is required");
        }
        Path pluginDir = Path.of(dir);
        if (!Files.isDirectory(pluginDir)) {
            throw new IllegalArgumentException("--plugin-dir " + dir + ": no such directory");
        }
        PluginConfig c = PluginConfig.defaults(pluginDir);
        Optional<Path> lib = Optional.ofNullable(opts.get("--nvml-lib")).map(Path::of);
        lib.ifPresent(l -> AgentChecks.library("--nvml-lib", l.toString()));
        if (opts.containsKey("--machine")) {
            AgentChecks.fakeMachine(opts.get("--machine"));
        }
        c = c.withNvml(lib, Optional.ofNullable(opts.get("--machine")));
        String node = opts.getOrDefault("--node-name", firstNonBlank(env.get("NODE_NAME"), env.get("HOSTNAME"), "local"));
        AgentChecks.nodeName(opts.containsKey("--node-name") ? "--node-name"
                : notBlank(env.get("NODE_NAME")) ? "--node-name (from $NODE_NAME)"
                : notBlank(env.get("HOSTNAME")) ? "--node-name (from $HOSTNAME)" : "--node-name", node);
        c = c.withNode(node);
        if (opts.containsKey("--state-file")) {
            c = c.withStateFile(Path.of(opts.get("--state-file")));
        }
        checkStateFile(opts.containsKey("--state-file") ? "--state-file " + opts.get("--state-file")
                : "the state file " + c.stateFile() + " (--state-file)", c.stateFile());
        c = AgentFlags.rules(opts).map(c::withRules).orElse(c);
        c = c.withRecovery(AgentFlags.recoverAfter(opts).orElse(c.recoverAfter()), c.recoveryCheckEvery(), c.ticker());
        c = c.withSharing(SharingOptions.parse(opts));
        AgentChecks.sharingPrograms(c.sharing(), env.get("PATH"));
        if (opts.containsKey("--api-timeout") && !opts.containsKey("--kubernetes")) {
            throw new IllegalArgumentException("--api-timeout " + opts.get("--api-timeout") + ": only with --kubernetes");
        }
        AgentFlags.apiTimeout(opts);
        return c;
    }

    /**
     * A state file must be writable where it is (its directory takes a new file) and, when it exists, a readable JSON
     * file: said here, in the user's terms, before anything starts (the plugin's own reader then checks what the JSON
     * holds).
     */
    static void checkStateFile(String label, Path file) {
        AgentChecks.stateFile(label, file, "fix or remove the file (the plugin then starts with no allocations)");
    }

    private static boolean notBlank(String v) {
        return v != null && !v.isBlank();
    }

    private static String firstNonBlank(String... values) {
        for (String v : values) {
            if (v != null && !v.isBlank()) {
                return v;
            }
        }
        return "local";
    }
}
