package io.qgpu.kubernetes.deviceplugin;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

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
              --machine NAME        with the fake NVML library only: dgx-h100, t4x4 or a100-bridged
              --node-name NAME      the node's name (default: $NODE_NAME, else $HOSTNAME, else local)
              --state-file PATH     allocations kept across restarts
                                    (default: DIR/../qgpu-device-plugin-state.json)
              --rules NAME          granularity rules: qgpu (default), hami or gpu-manager
              --recover-after SEC   seconds without a critical Xid before a GPU is healthy again (default 300)
              --kubernetes          read the extender's decisions from the pods of this node
                                    (kubeconfig: $KUBECONFIG, ~/.kube/config, or in-cluster)
            """ + SharingOptions.USAGE + """
              --help                this text
            """;

    private Main() {
    }

    public static void main(String[] args) throws Exception {
        // Netty warns on every Unix socket that TCP keep-alive does not apply to it
        if (System.getProperty("org.slf4j.simpleLogger.log.io.grpc.netty.shaded.io.netty.bootstrap") == null) {
            System.setProperty("org.slf4j.simpleLogger.log.io.grpc.netty.shaded.io.netty.bootstrap", "error");
        }
        PluginConfig config;
        boolean kubernetes;
        try {
            Map<String, String> opts = parse(List.of(args));
            if (opts.containsKey("--help")) {
                System.out.print(USAGE);
                return;
            }
            config = config(opts, System.getenv());
            kubernetes = opts.containsKey("--kubernetes");
        } catch (IllegalArgumentException e) {
            usageError(System.err, e.getMessage());
            System.exit(2);
            return;
        }
        KubernetesClient client = null;
        if (kubernetes) {
            client = new KubernetesClientBuilder().build();
            config = config.withDecisions(new KubernetesPodDecisions(client, config.nodeName()));
        }
        DevicePlugin plugin = DevicePlugin.start(config);
        KubernetesClient c = client;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            plugin.close();
            if (c != null) {
                c.close();
            }
        }, "qgpu-device-plugin-stop"));
        plugin.awaitClose();
    }

    static void usageError(PrintStream err, String message) {
        err.println("error: " + message);
        err.print(USAGE);
    }

    private static final Set<String> FLAGS = Set.of("--help", "--kubernetes");
    private static final Set<String> VALUED = Set.of("--plugin-dir", "--nvml-lib", "--machine", "--node-name",
            "--state-file", "--rules", "--recover-after", "--sharing", "--mps-root", "--mps-control", "--mps-shm-dir",
            "--hami-core-library", "--hami-core-cache-root", "--hami-core-lock-dir");

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
        if (lib.isPresent() && !Files.isRegularFile(lib.get())) {
            throw new IllegalArgumentException("--nvml-lib " + lib.get() + ": no such file");
        }
        c = c.withNvml(lib, Optional.ofNullable(opts.get("--machine")));
        String node = opts.getOrDefault("--node-name", firstNonBlank(env.get("NODE_NAME"), env.get("HOSTNAME"), "local"));
        c = c.withNode(node);
        if (opts.containsKey("--state-file")) {
            c = c.withStateFile(Path.of(opts.get("--state-file")));
        }
        if (opts.containsKey("--rules")) {
            try {
                c = c.withRules(GranularityRules.preset(opts.get("--rules")));
            } catch (InvalidValueException e) {
                throw new IllegalArgumentException("--rules " + opts.get("--rules") + ": must be qgpu, hami or gpu-manager");
            }
        }
        if (opts.containsKey("--recover-after")) {
            String v = opts.get("--recover-after");
            long seconds;
            try {
                seconds = Long.parseLong(v);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--recover-after " + v + ": must be a whole number of seconds");
            }
            if (seconds < 1) {
                throw new IllegalArgumentException("--recover-after " + v + ": must be at least 1");
            }
            c = c.withRecovery(Duration.ofSeconds(seconds), c.recoveryCheckEvery(), c.ticker());
        }
        c = c.withSharing(SharingOptions.parse(opts));
        return c;
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
