package io.qgpu.kubernetes.extender;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.QgpuException;
import io.qgpu.core.time.Durations;
import io.qgpu.json.Inventory;
import io.qgpu.json.QgpuJson;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementConfig;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

/**
 * Starts the extender.
 *
 * <pre>
 * java -jar qgpu-kubernetes/scheduler-extender/target/qgpu-scheduler-extender.jar --demo --inventory FILE [options]
 * java -jar qgpu-kubernetes/scheduler-extender/target/qgpu-scheduler-extender.jar [--kubeconfig FILE] [--inventory FILE] [options]
 *
 *   --demo                 no Kubernetes API: nodes from --inventory (and from Nodes payloads), bind only commits to the ledger
 *   --kubeconfig FILE      the cluster to talk to (default: fabric8's usual lookup: KUBECONFIG, ~/.kube/config, in-cluster)
 *   --inventory FILE       a static inventory (QgpuJson inventory file: rules and nodes); with Kubernetes, node annotations add more
 *   --rules NAME           granularity preset when no inventory file gives rules: qgpu (default), hami, gpu-manager
 *   --host ADDR            listen address (default 127.0.0.1: this machine only; 0.0.0.0 for every interface)
 *   --port N               listen port (default 8888)
 *   --url-prefix PATH      path before the verbs (default /qgpu): POST PATH/filter, PATH/prioritize, PATH/bind, PATH/preempt
 *   --max-body-bytes N     largest request body (default 4194304); larger ones get 413
 *   --threads N            server threads, each serving its connections (default 8; 0: one thread accepts and serves them all)
 *   --worker-threads N     threads for bind, which waits on the API server (default 16)
 *   --node-policy P        binpack (default) or spread, at node level
 *   --gpu-policy P         spread (default) or binpack, at GPU level
 *   --sync-timeout D       how long to wait for the informers at start-up (default 60s; a number and a unit)
 *   --api-timeout D        how long the API server may take to answer /version at start-up (default 10s); a server that
 *                          does not is one line naming its URL and the cause, exit code 2
 *   --leader-elect         run as one of several replicas: leader election on a coordination.k8s.io Lease (see LeaderElection)
 *   --lease-namespace NS   the Lease's namespace (default: $POD_NAMESPACE, else kube-system)
 *   --lease-name NAME      the Lease's name (default qgpu-scheduler-extender)
 *   --identity ID          this replica's name in the Lease (default: $POD_NAME, else the host name)
 *   --lease-duration D     15s (default); --renew-deadline D 10s; --retry-period D 2s (a number and a unit; a bare number is refused)
 * </pre>
 *
 * <p>Thread safety: a program entry point.
 */
public final class Main {

    private Main() {
    }

    public static void main(String[] argv) throws Exception {
        if (System.getProperty("io.netty.noUnsafe") == null) {
            // JDK 24+: no warning about Netty's sun.misc.Unsafe memory calls (the API client's Vert.x); a value given wins
            System.setProperty("io.netty.noUnsafe", "true");
        }
        int rc = run(argv, System.out, System.err);
        if (rc != 0) {
            System.exit(rc);
        }
    }

    /** Parses, starts, and blocks until the JVM is stopped; returns a non-zero code on bad usage. */
    static int run(String[] argv, PrintStream out, PrintStream err) throws Exception {
        Map<String, String> opts;
        try {
            opts = parse(argv);
        } catch (BadValue e) {
            // a flag's value: one line naming it
            err.println("qgpu-scheduler-extender: " + e.getMessage());
            return 2;
        } catch (IllegalArgumentException e) {
            err.println("qgpu-scheduler-extender: " + e.getMessage());
            err.println(usage());
            return 2;
        }
        if (opts.containsKey("help")) {
            out.println(usage());
            return 0;
        }
        Running started;
        try {
            started = start(opts);
        } catch (IllegalArgumentException | QgpuException e) {
            // a flag's value, a file or the API server: one line naming it (the usage text is for unknown options)
            err.println("qgpu-scheduler-extender: " + e.getMessage());
            return 2;
        } catch (IOException e) {
            err.println("qgpu-scheduler-extender: " + e.getMessage());
            return 1;
        } catch (java.util.concurrent.TimeoutException e) {
            err.println("qgpu-scheduler-extender: the informers did not sync within --sync-timeout "
                    + opts.getOrDefault("sync-timeout", "60s") + " (the API server answered /version; it may be slow or the"
                    + " nodes and pods many: raise --sync-timeout)");
            return 1;
        } catch (RuntimeException e) {
            String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
            err.println("qgpu-scheduler-extender: could not start: " + (m.indexOf('\n') < 0 ? m : m.substring(0, m.indexOf('\n'))));
            return 1;
        }
        try (Running r = started) {
            out.println("qgpu scheduler extender serving " + r.server.baseUrl() + "/{filter,prioritize,bind,preempt}"
                    + (r.client == null ? " (demo: no Kubernetes API)" : ""));
            CountDownLatch stop = new CountDownLatch(1);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                err.println("qgpu-scheduler-extender: stopping (signal received)");
                stop.countDown();
            }, "qgpu-extender-shutdown"));
            stop.await();
        }
        return 0;
    }

    /** What {@link #start} brought up; closing stops it all. */
    record Running(ExtenderServer server, GpuExtender extender, KubernetesClient client, KubernetesSync sync, boolean ownsClient,
                   LeaderElection election)
            implements AutoCloseable {
        @Override
        public void close() {
            if (election != null) {
                election.close(); // gives the Lease back first, so that another replica takes over at once
            }
            server.stop();
            if (sync != null) {
                sync.close();
            }
            if (client != null && ownsClient) {
                client.close();
            }
        }
    }

    static Running start(Map<String, String> opts) throws Exception {
        return start(opts, null);
    }

    /** With {@code given} (tests), that client is used instead of one built from the kubeconfig. */
    static Running start(Map<String, String> opts, KubernetesClient given) throws Exception {
        boolean demo = opts.containsKey("demo");
        Inventory inventory;
        if (opts.containsKey("inventory")) {
            inventory = QgpuJson.readInventory(Path.of(opts.get("inventory")));
        } else if (demo) {
            throw new IllegalArgumentException("--demo needs --inventory FILE");
        } else {
            inventory = new Inventory(rules(opts.getOrDefault("rules", "qgpu")), List.of());
        }
        Ledger ledger = Ledger.create(inventory.rules(), inventory.nodes());
        PlacementConfig config = PlacementConfig.builder()
                .nodePolicy(PlacementPolicy.fromName("--node-policy", opts.getOrDefault("node-policy", "binpack")))
                .gpuPolicy(PlacementPolicy.fromName("--gpu-policy", opts.getOrDefault("gpu-policy", "spread")))
                .build();
        KubernetesClient client = null;
        KubernetesSync sync = null;
        ClusterApi cluster;
        if (demo) {
            cluster = new DemoCluster();
        } else if (given != null) {
            client = given;
            cluster = new KubernetesCluster(client);
        } else {
            Config cfg = opts.containsKey("kubeconfig")
                    ? Config.fromKubeconfig(Files.readString(Path.of(opts.get("kubeconfig"))))
                    : Config.autoConfigure(null);
            client = new KubernetesClientBuilder().withConfig(cfg).build();
            java.util.Optional<String> api = io.qgpu.kubernetes.node.ApiServerCheck.problem(client, Durations.parse("--api-timeout",
                    opts.getOrDefault("api-timeout", "10s")));
            if (api.isPresent()) {
                client.close();
                throw new IllegalArgumentException((opts.containsKey("kubeconfig") ? "--kubeconfig " + opts.get("kubeconfig")
                        : "kubeconfig (KUBECONFIG, ~/.kube/config or in-cluster)") + ": " + api.get());
            }
            cluster = new KubernetesCluster(client);
        }
        GpuExtender extender = new GpuExtender(ledger, config, cluster);
        ExtenderServer server;
        LeaderElection election = null;
        try {
            if (client != null) {
                sync = new KubernetesSync(client, extender);
                sync.start(Durations.parse("--sync-timeout", opts.getOrDefault("sync-timeout", "60s")));
            }
            // --- leader election (--leader-elect): only the leader serves; it rebuilds the ledger when it takes over ---
            if (opts.containsKey("leader-elect")) {
                if (client == null) {
                    throw new IllegalArgumentException("--leader-elect needs a Kubernetes API; it cannot be used with --demo");
                }
                KubernetesClient api = client;
                election = new LeaderElection(client, leaderSettings(opts),
                        () -> extender.reconcile(api.pods().inAnyNamespace().list().getItems()));
                server = server(opts, new LeaderOnlyExtender(extender, election), ledger, election::leading);
                election.start();
            } else {
                server = server(opts, extender, ledger, () -> true);
            }
        } catch (Exception | Error e) {
            if (election != null) {
                election.close();
            }
            if (sync != null) {
                sync.close();
            }
            if (client != null && given == null) {
                client.close();
            }
            throw e;
        }
        return new Running(server, extender, client, sync, given == null, election);
    }

    /** The leader election flags, with the defaults of the class comment. */
    static LeaderElection.Settings leaderSettings(Map<String, String> opts) {
        String namespace = opts.getOrDefault("lease-namespace", envOr("POD_NAMESPACE", "kube-system"));
        String identity = opts.getOrDefault("identity", envOr("POD_NAME", envOr("HOSTNAME", "qgpu-extender")));
        return new LeaderElection.Settings(namespace, opts.getOrDefault("lease-name", "qgpu-scheduler-extender"), identity,
                LeaderElection.parseDuration("--lease-duration", opts.getOrDefault("lease-duration", "15s")),
                LeaderElection.parseDuration("--renew-deadline", opts.getOrDefault("renew-deadline", "10s")),
                LeaderElection.parseDuration("--retry-period", opts.getOrDefault("retry-period", "2s")));
    }

    private static String envOr(String name, String fallback) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? fallback : v;
    }

    private static ExtenderServer server(Map<String, String> opts, Extender extender, Ledger ledger,
                                         java.util.function.BooleanSupplier ready) throws IOException {
        String host = opts.getOrDefault("host", "127.0.0.1");
        int port = Integer.parseInt(opts.getOrDefault("port", "8888"));
        if (new java.net.InetSocketAddress(host, 0).isUnresolved()) {
            throw new IllegalArgumentException("--host " + host + ": not an address, nor a host name this machine can resolve");
        }
        try {
            return builder(opts, extender, ledger, ready, host, port).start();
        } catch (java.net.BindException e) {
            throw new IllegalArgumentException("--host " + host + " --port " + port + ": cannot listen on " + host + ":" + port + " ("
                    + (e.getMessage() == null ? "refused" : e.getMessage().toLowerCase(java.util.Locale.ROOT))
                    + "); another process may listen there: pick another --port, or stop it");
        }
    }

    private static ExtenderServer builder(Map<String, String> opts, Extender extender, Ledger ledger,
                                          java.util.function.BooleanSupplier ready, String host, int port) {
        return ExtenderServer.builder(extender)
                .host(host)
                .port(port)
                .urlPrefix(opts.getOrDefault("url-prefix", "/qgpu"))
                .maxBodyBytes(Integer.parseInt(opts.getOrDefault("max-body-bytes", String.valueOf(ExtenderServer.DEFAULT_MAX_BODY_BYTES))))
                .threads(Integer.parseInt(opts.getOrDefault("threads", "8")))
                .workerThreads(Integer.parseInt(opts.getOrDefault("worker-threads", "16")))
                .ledgerView(() -> QgpuJson.writeSnapshot(ledger.snapshot()))
                .readiness(ready)
                .build();
    }

    private static final List<String> FLAGS = List.of("demo", "help",
            "leader-elect");
    private static final List<String> VALUED = List.of("kubeconfig", "inventory", "rules", "host", "port", "url-prefix",
            "max-body-bytes", "threads", "worker-threads", "node-policy", "gpu-policy", "sync-timeout", "api-timeout",
            "lease-namespace", "lease-name", "identity", "lease-duration", "renew-deadline", "retry-period");

    static Map<String, String> parse(String[] argv) {
        Map<String, String> m = new LinkedHashMap<>();
        List<String> args = new ArrayList<>(List.of(argv));
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            if (a.equals("-h")) {
                a = "--help";
            }
            if (!a.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument " + a);
            }
            String name = a.substring(2);
            String value = null;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            }
            if (FLAGS.contains(name)) {
                if (value != null) {
                    throw new IllegalArgumentException("--" + name + " takes no value");
                }
                m.put(name, "true");
            } else if (VALUED.contains(name)) {
                if (value == null) {
                    if (i + 1 >= args.size()) {
                        throw new IllegalArgumentException("--" + name + " needs a value");
                    }
                    value = args.get(++i);
                }
                m.put(name, value);
            } else {
                throw new IllegalArgumentException("unknown option --" + name);
            }
        }
        for (String d : List.of("sync-timeout", "api-timeout")) {
            if (m.containsKey(d)) {
                java.time.Duration parsed;
                try {
                    parsed = Durations.parse("--" + d, m.get(d));
                } catch (InvalidValueException e) {
                    throw new BadValue(e.getMessage());
                }
                if (parsed.isZero() || parsed.isNegative()) {
                    throw new BadValue("--" + d + " " + m.get(d) + ": must be above 0");
                }
            }
        }
        if (m.containsKey("api-timeout") && m.containsKey("demo")) {
            throw new BadValue("--api-timeout " + m.get("api-timeout") + ": not with --demo (no Kubernetes API)");
        }
        if (m.containsKey("rules")) {
            rules(m.get("rules"));
        }
        for (Map.Entry<String, long[]> r : RANGES.entrySet()) {
            String n = r.getKey();
            if (m.containsKey(n)) {
                long v;
                try {
                    v = Long.parseLong(m.get(n));
                } catch (NumberFormatException e) {
                    v = Long.MIN_VALUE;
                }
                if (v < r.getValue()[0] || v > r.getValue()[1]) {
                    throw new BadValue("--" + n + " " + m.get(n) + ": must be a whole number between " + r.getValue()[0]
                            + " and " + r.getValue()[1]);
                }
            }
        }
        return m;
    }

    /** {@code --rules}: a preset, else a {@link BadValue} naming the flag, the value and the presets. */
    static GranularityRules rules(String name) {
        try {
            return GranularityRules.preset(name);
        } catch (InvalidValueException e) {
            throw new BadValue("--rules " + name + ": must be qgpu, hami or gpu-manager");
        }
    }

    /** A flag with a value it does not take (as opposed to an unknown flag): one line, no usage text. */
    static final class BadValue extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        BadValue(String message) {
            super(message);
        }
    }

    /**
     * The numeric flags and their ranges, checked before anything starts; the same as
     * {@link ExtenderServer.Builder}'s (MainTest holds them in step).
     */
    static final Map<String, long[]> RANGES = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(Map.of(
            "port", new long[] {0, 65535},
            "max-body-bytes", new long[] {1024, Integer.MAX_VALUE - 16384},
            "threads", new long[] {0, 1024},
            "worker-threads", new long[] {1, 1024})));

    static String usage() {
        return String.join("\n",
                "usage: qgpu-scheduler-extender --demo --inventory FILE [options]",
                "       qgpu-scheduler-extender [--kubeconfig FILE] [--inventory FILE] [options]",
                "  --demo                no Kubernetes API; bind only commits to the ledger",
                "  --kubeconfig FILE     cluster to use (default: KUBECONFIG, ~/.kube/config or in-cluster)",
                "  --inventory FILE      static inventory (rules and nodes, QgpuJson format)",
                "  --rules NAME          qgpu (default), hami or gpu-manager when no inventory gives rules",
                "  --host ADDR           listen address (default 127.0.0.1, this machine only; 0.0.0.0 listens on",
                "                        every interface, as a scheduler in another pod or machine needs)",
                "  --port N              listen port (default 8888)",
                "  --url-prefix PATH     path before the verbs (default /qgpu)",
                "  --max-body-bytes N    largest request body (default 4194304)",
                "  --threads N           server threads, each serving its connections (default 8; 0: one thread accepts and serves them all)",
                "  --worker-threads N    threads for bind, which waits on the API server (default 16)",
                "  --node-policy P       binpack (default) or spread",
                "  --gpu-policy P        spread (default) or binpack",
                "  --sync-timeout D      informer sync timeout at start-up: a number and a unit (ns, us, ms, s, m),",
                "                        default 60s; a bare number is refused",
                "  --api-timeout D       how long the API server may take to answer at start-up (default 10s)",
                "  --leader-elect        several replicas: leader election on a coordination.k8s.io Lease",
                "  --lease-namespace NS  the Lease's namespace (default: $POD_NAMESPACE, else kube-system)",
                "  --lease-name NAME     the Lease's name (default qgpu-scheduler-extender)",
                "  --identity ID         this replica in the Lease (default: $POD_NAME, else the host name)",
                "  --lease-duration D    15s (default); --renew-deadline D: 10s; --retry-period D: 2s");
    }
}
