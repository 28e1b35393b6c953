package io.qgpu.samples.localcluster;

import io.fabric8.kubernetes.api.model.Binding;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.qgpu.api.GranularityRules;
import io.qgpu.json.QgpuJson;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementConfig;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.kubernetes.deviceplugin.DevicePlugin;
import io.qgpu.kubernetes.deviceplugin.LocalClusterDecisions;
import io.qgpu.kubernetes.deviceplugin.PluginConfig;
import io.qgpu.kubernetes.deviceplugin.v1beta1.RegisterRequest;
import io.qgpu.kubernetes.dra.DraDriver;
import io.qgpu.kubernetes.dra.DriverConfig;
import io.qgpu.kubernetes.dra.pluginregistration.PluginInfo;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClass;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClassBuilder;
import io.qgpu.kubernetes.allocator.AdmissionWebhook;
import io.qgpu.kubernetes.allocator.AllocatorApp;
import io.qgpu.kubernetes.allocator.AllocatorFlags;
import io.qgpu.kubernetes.allocator.ClaimLookup;
import io.qgpu.kubernetes.allocator.ClaimScope;
import io.qgpu.kubernetes.allocator.InformerClaimLookup;
import io.qgpu.kubernetes.extender.ExtenderServer;
import io.qgpu.kubernetes.extender.GpuExtender;
import io.qgpu.kubernetes.extender.KubernetesCluster;
import io.qgpu.kubernetes.extender.KubernetesSync;
import io.qgpu.kubernetes.extender.QgpuAnnotations;
import io.qgpu.kubernetes.node.AgentStartup;
import io.qgpu.kubernetes.node.dra.DraNames;
import io.qgpu.kubernetes.node.sharing.SharingBackend;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.discovery.NvmlDiscovery;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * A throwaway cluster in one JVM, good enough for qgpu's Kubernetes parts: fabric8's mock API server in CRUD mode
 * on a free loopback port, two GPU nodes on the fake NVML library (one for each node agent), the scheduler
 * extender against the API server, a {@link StandInKubelet} on the real Unix sockets, the DRA driver (registered
 * through the plugin watcher's socket), the DeviceClass {@value DraNames#DEVICE_CLASS} and the qgpu DRA allocator
 * ({@link AllocatorApp} with {@link #ALLOCATOR_FLAGS}: no webhook server, which would need a certificate; its
 * admission answer is {@link #admission()}, which the walk calls as kube-apiserver would), and the device plugin
 * (registered on {@code kubelet.sock}). No kube-scheduler runs: what it does with a claim the allocator allocated
 * (reserve it for the pod, bind the pod) is the walk's to play. Everything lives in one temporary directory,
 * removed by {@link #close()}.
 *
 * <pre>{@code
 * try (LocalCluster c = LocalCluster.start(LocalCluster.Options.defaults(fakeNvml))) {
 *     new Walk(c, System.out).dra();
 * }
 * }</pre>
 *
 * <p>Thread safety: start and close from one thread.
 */
public final class LocalCluster implements AutoCloseable {
    /** The node the DRA driver runs on. */
    public static final String DRA_NODE = "gpu-dra";
    /** The node the device plugin runs on (the extender's inventory node). */
    public static final String DEVICE_PLUGIN_NODE = "gpu-dp";
    /**
     * The DRA allocator's command line: its defaults (policy {@code fragmentation}, rules {@code qgpu}, the class
     * {@value DraNames#DEVICE_CLASS}) without the webhook's HTTPS server.
     */
    public static final List<String> ALLOCATOR_FLAGS = List.of("--no-webhook");

    /**
     * What to start: the fake NVML library, the machine each node plays, and the sharing back end both agents use
     * ({@code none} or {@code hami-core}: HAMi-core with a placeholder {@code libvgpu.so} in the temporary directory,
     * so that the containers' environment and mounts are what they would be; nothing runs to enforce them).
     */
    public record Options(Path nvmlLibrary, String draMachine, String devicePluginMachine, SharingBackend sharing) {
        public Options {
            if (sharing == SharingBackend.MPS) {
                throw new IllegalArgumentException("--sharing mps: not in the local cluster (it needs nvidia-cuda-mps-control and a GPU);"
                        + " none or hami-core");
            }
        }

        /** The DRA node a dgx-h100, the device plugin's node a t4x4, HAMi-core. */
        public static Options defaults(Path nvmlLibrary) {
            return new Options(nvmlLibrary, "dgx-h100", "t4x4", SharingBackend.HAMI_CORE);
        }
    }

    private final Options options;
    private final Path work;
    private final List<AutoCloseable> open = new ArrayList<>();
    private KubernetesMockServer api;
    private KubernetesClient client;
    private Path kubeconfig;
    private GpuExtender extender;
    private ExtenderServer extenderServer;
    private StandInKubelet kubelet;
    private DraDriver draDriver;
    private PluginInfo draInfo;
    private AllocatorFlags allocatorFlags;
    private AllocatorApp allocator;
    private InformerClaimLookup claimLookup;
    private AdmissionWebhook admission;
    private DevicePlugin devicePlugin;
    private RegisterRequest devicePluginRegistration;
    private Path draNvml;
    private Path devicePluginNvml;

    private LocalCluster(Options options, Path work) {
        this.options = options;
        this.work = work;
    }

    /** Starts everything; closes what it started when a step fails. */
    public static LocalCluster start(Options options) throws Exception {
        if (!Files.isRegularFile(options.nvmlLibrary())) {
            throw new IllegalArgumentException("--nvml-lib " + options.nvmlLibrary() + ": no such file (the build compiles the fake "
                    + "library into samples/local-cluster/target/fake-nvml)");
        }
        // short: Unix socket paths are limited to 108 bytes
        LocalCluster c = new LocalCluster(options, Files.createTempDirectory("qgpu-local-"));
        try {
            c.startAll();
            return c;
        } catch (Exception | Error e) {
            c.close();
            throw e;
        }
    }

    private void startAll() throws Exception {
        // one copy of the fake library per node: each agent gets its own NVML (its own machine, event sets and
        // sessions), as on two real nodes; the library hides all but its API, so the copies share nothing
        draNvml = copyLibrary("dra");
        devicePluginNvml = copyLibrary("device-plugin");

        // --- the API server: fabric8's mock in CRUD mode (objects are stored, listed, watched, patched) ---
        api = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(), new KubernetesCrudDispatcher(), false);
        api.init(InetAddress.getLoopbackAddress(), 0);
        open.add(api::destroy);
        client = api.createClient();
        open.add(client);
        kubeconfig = Files.writeString(work.resolve("kubeconfig"), kubeconfigYaml(client.getConfiguration().getMasterUrl()));
        // the mock stores a pod's Binding as an object of its own: apply it to the pod as kube-apiserver does, so that
        // a bind through the extender (the walk's, or a user's with curl under --keep) puts the pod on its node
        open.add(client.bindings().inAnyNamespace().watch(new Watcher<Binding>() {
            @Override
            public void eventReceived(Action action, Binding b) {
                if (action == Action.ADDED) {
                    applyBinding(b);
                }
            }

            @Override
            public void onClose(WatcherException cause) {
                // closed with the cluster
            }
        }));

        // --- the nodes: the device plugin's carries its GPUs as the extender reads them (qgpu.io/inventory) ---
        client.nodes().resource(new NodeBuilder().withNewMetadata().withName(DRA_NODE).endMetadata().build()).create();
        client.nodes().resource(new NodeBuilder().withNewMetadata().withName(DEVICE_PLUGIN_NODE)
                .addToAnnotations(QgpuAnnotations.INVENTORY, inventoryOf(DEVICE_PLUGIN_NODE)).endMetadata().build()).create();

        // --- the scheduler extender against the API server (what kube-scheduler calls) ---
        Ledger ledger = Ledger.create(GranularityRules.preset("qgpu"), List.of());
        extender = new GpuExtender(ledger, PlacementConfig.builder().nodePolicy(PlacementPolicy.fromName("--node-policy", "binpack"))
                .gpuPolicy(PlacementPolicy.fromName("--gpu-policy", "spread")).build(), new KubernetesCluster(client));
        KubernetesSync sync = new KubernetesSync(client, extender);
        open.add(sync);
        sync.start(Duration.ofSeconds(30));
        extenderServer = ExtenderServer.builder(extender).host("127.0.0.1").port(0).urlPrefix("/qgpu")
                .ledgerView(() -> QgpuJson.writeSnapshot(ledger.snapshot())).build().start();
        open.add(extenderServer);

        // --- the stand-in kubelet, then the node agents on the fake NVML library ---
        Path devicePlugins = Files.createDirectories(work.resolve("device-plugins"));
        kubelet = StandInKubelet.start(devicePlugins);
        open.add(kubelet);

        Path registrar = Files.createDirectories(work.resolve("plugins_registry"));
        Path plugins = Files.createDirectories(work.resolve("plugins"));
        DriverConfig dra = DriverConfig.defaults(DRA_NODE).withDirectories(registrar, plugins, work.resolve("cdi"))
                .withStateFile(work.resolve("dra-state.json"))
                .withNvml(Optional.of(draNvml), Optional.of(options.draMachine()))
                .withSharing(sharing("dra"));
        draDriver = DraDriver.start(dra, client);
        open.add(draDriver);
        draInfo = kubelet.registerDraDriver(registrar);

        // --- the DRA allocator: the class its claims name (as the DRA driver's deploy/deviceclass.yaml), the
        // allocator as its jar starts it, and its webhook's answer over claim and template caches of its own ---
        client.resources(DeviceClass.class).resource(new DeviceClassBuilder()
                .withNewMetadata().withName(DraNames.DEVICE_CLASS).endMetadata()
                .withNewSpec().addNewSelector().withNewCel().withExpression("device.driver == \"" + DraNames.DRIVER + "\"")
                .endCel().endSelector().endSpec().build()).create();
        allocatorFlags = AllocatorFlags.parse(ALLOCATOR_FLAGS.toArray(String[]::new));
        allocator = AllocatorApp.start(allocatorFlags, client, Map.of());
        open.add(allocator);
        claimLookup = InformerClaimLookup.start(client, Duration.ofSeconds(30));
        open.add(claimLookup);
        admission = new AdmissionWebhook(new ClaimScope(claimLookup, allocatorFlags.deviceClasses()));

        PluginConfig dp = PluginConfig.defaults(devicePlugins)
                .withNvml(Optional.of(devicePluginNvml), Optional.of(options.devicePluginMachine()))
                .withSharing(sharing("device-plugin"))
                .withNode(DEVICE_PLUGIN_NODE)
                .withStateFile(work.resolve("device-plugin-state.json"))
                .withDecisions(LocalClusterDecisions.withoutFieldSelector(client, DEVICE_PLUGIN_NODE));
        devicePlugin = DevicePlugin.start(dp);
        open.add(devicePlugin);
        devicePluginRegistration = kubelet.awaitDevicePlugin();

        // the extender has seen the node's inventory before any pod is scheduled
        long until = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (ledger.node(DEVICE_PLUGIN_NODE).isEmpty()) {
            if (System.nanoTime() > until) {
                throw new IllegalStateException("the extender did not see node " + DEVICE_PLUGIN_NODE + "'s inventory within 20 s");
            }
            Thread.sleep(20);
        }
    }

    private void applyBinding(Binding b) {
        try {
            String ns = b.getMetadata().getNamespace();
            String node = b.getTarget().getName();
            client.pods().inNamespace(ns).withName(b.getMetadata().getName())
                    .edit(p -> new PodBuilder(p).editSpec().withNodeName(node).endSpec().build());
        } catch (RuntimeException e) {
            System.err.println("qgpu-local-cluster: cannot apply the Binding of pod " + b.getMetadata().getNamespace() + "/"
                    + b.getMetadata().getName() + ": " + e.getMessage());
        }
    }

    /** The node's GPUs as {@code QgpuJson.writeNode} writes them, discovered through the fake NVML library. */
    private String inventoryOf(String node) {
        try (Nvml nvml = AgentStartup.openNvml(Optional.of(devicePluginNvml), Optional.of(options.devicePluginMachine()))) {
            return QgpuJson.writeNode(NvmlDiscovery.builder().session(nvml).build().inventory(node).node());
        }
    }

    /** The node agent's sharing flags, with HAMi-core's files under the temporary directory. */
    private SharingOptions sharing(String agent) throws IOException {
        Map<String, String> flags = new LinkedHashMap<>();
        flags.put(SharingBackend.FLAG, options.sharing().wireName());
        if (options.sharing() == SharingBackend.HAMI_CORE) {
            Path library = work.resolve("hami-core").resolve("libvgpu.so");
            if (!Files.exists(library)) {
                Files.createDirectories(library.getParent());
                Files.writeString(library, "placeholder: the local cluster runs no container\n");
            }
            flags.put("--hami-core-library", library.toString());
            flags.put("--hami-core-cache-root", work.resolve(agent).resolve("hami-core-cache").toString());
            flags.put("--hami-core-lock-dir", work.resolve("hami-core").resolve("vgpulock").toString());
        }
        return SharingOptions.parse(flags);
    }

    private Path copyLibrary(String node) throws IOException {
        Path dir = Files.createDirectories(work.resolve("nvml").resolve(node));
        return Files.copy(options.nvmlLibrary(), dir.resolve("libnvidia-ml.so.1"));
    }

    private static String kubeconfigYaml(String server) {
        return """
                apiVersion: v1
                kind: Config
                clusters:
                  - name: qgpu-local
                    cluster:
                      server: %s
                users:
                  - name: qgpu-local
                    user:
                      token: local
                contexts:
                  - name: qgpu-local
                    context:
                      cluster: qgpu-local
                      user: qgpu-local
                current-context: qgpu-local
                """.formatted(server);
    }

    public Options options() {
        return options;
    }

    /** The temporary directory that holds the sockets, state files, CDI specs and kubeconfig. */
    public Path workDirectory() {
        return work;
    }

    public KubernetesClient client() {
        return client;
    }

    /** The API server's URL ({@code http://127.0.0.1:PORT/}). */
    public String apiServerUrl() {
        return client.getConfiguration().getMasterUrl();
    }

    /** A kubeconfig file that points at the API server. */
    public Path kubeconfig() {
        return kubeconfig;
    }

    public GpuExtender extender() {
        return extender;
    }

    /** The extender's URL prefix ({@code http://127.0.0.1:PORT/qgpu}). */
    public String extenderUrl() {
        return extenderServer.baseUrl();
    }

    public StandInKubelet kubelet() {
        return kubelet;
    }

    public DraDriver draDriver() {
        return draDriver;
    }

    /** What the DRA driver answered to the plugin watcher's {@code GetInfo}. */
    public PluginInfo draInfo() {
        return draInfo;
    }

    /** The DRA driver's CDI root. */
    public Path cdiRoot() {
        return work.resolve("cdi");
    }

    /** The DRA allocator's flags ({@link #ALLOCATOR_FLAGS}, read). */
    public AllocatorFlags allocatorFlags() {
        return allocatorFlags;
    }

    /**
     * The allocator's mutating admission webhook without its HTTPS server: {@link AdmissionWebhook#review} answers an
     * AdmissionReview as the allocator's {@code /mutate} does, from claim and template informers of its own.
     */
    public AdmissionWebhook admission() {
        return admission;
    }

    /** The claims and templates as the admission webhook sees them (its informer caches). */
    public ClaimLookup claimLookup() {
        return claimLookup;
    }

    public DevicePlugin devicePlugin() {
        return devicePlugin;
    }

    /** What the device plugin sent to {@code Registration.Register}. */
    public RegisterRequest devicePluginRegistration() {
        return devicePluginRegistration;
    }

    /** Stops everything, newest first, and removes the temporary directory. */
    @Override
    public void close() {
        for (int i = open.size() - 1; i >= 0; i--) {
            try {
                open.get(i).close();
            } catch (Exception e) {
                System.err.println("qgpu-local-cluster: closing: " + e);
            }
        }
        open.clear();
        try (Stream<Path> files = Files.walk(work)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            System.err.println("qgpu-local-cluster: cannot remove " + work + ": " + e.getMessage());
        }
    }
}
