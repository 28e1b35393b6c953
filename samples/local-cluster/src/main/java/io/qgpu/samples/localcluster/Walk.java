package io.qgpu.samples.localcluster;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fabric8.kubernetes.api.model.Binding;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.Device;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAllocationConfigurationBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClaimConfigurationBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceRequestAllocationResultBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimConsumerReferenceBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.qgpu.kubernetes.deviceplugin.v1beta1.AllocateResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerAllocateResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DevicePluginGrpc;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ListAndWatchResponse;
import io.qgpu.kubernetes.dra.DriverNames;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourceResponse;
import io.qgpu.kubernetes.node.CdiSpecs;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;

/**
 * Walks one pod down each path of a {@link LocalCluster}, from what it asks for to what its container gets, and
 * prints each step in a few lines:
 *
 * <ul>
 *   <li>{@link #dra()}: the ResourceSlice the driver published; a pod and its ResourceClaim (a 10 GiB, 30% slice of
 *       one GPU, online, at most 60%), allocated as kube-scheduler would from the slice; the stand-in kubelet's
 *       {@code NodePrepareResources}; the container's environment from the CDI spec the driver wrote;</li>
 *   <li>{@link #devicePlugin()}: a pod asking for {@code qgpu.io/gpu} (8 GiB, 20%, online, at most 50%) through
 *       the extender's filter, prioritize and bind over HTTP (the local cluster applies the Binding to the pod); the stand-in kubelet's
 *       {@code ListAndWatch}, {@code GetPreferredAllocation} and {@code Allocate}; the container's environment from
 *       the plugin's answer.</li>
 * </ul>
 *
 * <p>Each walk returns the container's environment. Thread safety: one walk at a time.
 */
public final class Walk {
    /** The namespace of the walks' pods and claims. */
    public static final String NS = "default";

    private static final ObjectMapper JSON = new ObjectMapper();

    private final LocalCluster cluster;
    private final KubernetesClient client;
    private final PrintStream out;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    public Walk(LocalCluster cluster, PrintStream out) {
        this.cluster = cluster;
        this.client = cluster.client();
        this.out = out;
    }

    // ------------------------------------------------------------------------------------------------ DRA

    /** A pod with a ResourceClaim of driver {@code gpu.qgpu.io}, prepared by the DRA driver; returns its container's environment. */
    public Map<String, String> dra() throws Exception {
        String node = LocalCluster.DRA_NODE;
        out.println();
        out.println("== DRA: a pod with a ResourceClaim on node " + node + " (driver " + DraNames.DRIVER + ")");

        ResourceSlice slice = awaitSlice(node);
        out.println("  1. the driver published ResourceSlice " + slice.getMetadata().getName() + ": "
                + slice.getSpec().getDevices().size() + " devices, each shareable (allowMultipleAllocations)");
        Device first = slice.getSpec().getDevices().get(0);
        out.println("     " + describe(first));

        Pod pod = client.pods().inNamespace(NS).resource(new PodBuilder()
                .withNewMetadata().withNamespace(NS).withName("dra-infer").endMetadata()
                .withNewSpec().withNodeName(node)
                .addNewResourceClaim().withName("gpu").withResourceClaimName("infer-gpu").endResourceClaim()
                .addNewContainer().withName("main").withImage("registry.example.com/infer:1.0")
                .withNewResources().addNewClaim().withName("gpu").endClaim().endResources().endContainer()
                .endSpec().build()).create();
        Map<String, Object> gpuConfig = new LinkedHashMap<>();
        gpuConfig.put("apiVersion", "gpu.qgpu.io/v1alpha1");
        gpuConfig.put("kind", "GpuConfig");
        gpuConfig.put("priority", "online");
        gpuConfig.put("computeLimit", 60);
        Map<String, Quantity> asked = new LinkedHashMap<>();
        asked.put(DraNames.CAPACITY_MEMORY, new Quantity("10Gi"));
        asked.put(DraNames.CAPACITY_CORES, new Quantity("30"));
        ResourceClaim claim = client.resources(ResourceClaim.class).inNamespace(NS).resource(new ResourceClaimBuilder()
                .withNewMetadata().withNamespace(NS).withName("infer-gpu").endMetadata()
                .withNewSpec().withNewDevices()
                .addNewRequest().withName("gpu").withNewExactly().withDeviceClassName(DraNames.DRIVER)
                .withNewCapacity().withRequests(asked).endCapacity().endExactly().endRequest()
                .withConfig(new DeviceClaimConfigurationBuilder().withRequests("gpu").withNewOpaque().withDriver(DraNames.DRIVER)
                        .withParameters(gpuConfig).endOpaque().build())
                .endDevices().endSpec().build()).create();
        out.println("  2. pod " + NS + "/dra-infer uses ResourceClaim " + NS + "/infer-gpu: memory 10Gi, cores 30 of one "
                + DraNames.DRIVER + " device; GpuConfig priority online, computeLimit 60");

        // kube-scheduler's DRA allocator, played here: the first published device that has the memory, the
        // capacity consumed as asked (on the slice's grid), the claim reserved for the pod
        Device chosen = slice.getSpec().getDevices().stream()
                .filter(d -> d.getCapacity().get(DraNames.CAPACITY_MEMORY).getValue().getNumericalAmount()
                        .compareTo(asked.get(DraNames.CAPACITY_MEMORY).getNumericalAmount()) >= 0)
                .findFirst().orElseThrow(() -> new IllegalStateException("no device of " + slice.getMetadata().getName() + " has 10Gi"));
        claim.setStatus(new io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimStatusBuilder()
                .withNewAllocation().withNewDevices()
                .addToResults(new DeviceRequestAllocationResultBuilder().withRequest("gpu").withDriver(DraNames.DRIVER)
                        .withPool(node).withDevice(chosen.getName()).withConsumedCapacity(new LinkedHashMap<>(asked))
                        .withShareID(UUID.randomUUID().toString()).build())
                .addToConfig(new DeviceAllocationConfigurationBuilder().withSource("FromClaim").withRequests("gpu").withNewOpaque()
                        .withDriver(DraNames.DRIVER).withParameters(gpuConfig).endOpaque().build())
                .endDevices().endAllocation()
                .addToReservedFor(new ResourceClaimConsumerReferenceBuilder().withApiGroup("").withResource("pods")
                        .withName(pod.getMetadata().getName()).withUid(pod.getMetadata().getUid()).build())
                .build());
        claim = client.resources(ResourceClaim.class).inNamespace(NS).resource(claim).updateStatus();
        String uid = claim.getMetadata().getUid();
        out.println("  3. allocated as kube-scheduler would: " + node + "/" + chosen.getName() + ", consumedCapacity memory 10Gi, cores 30;"
                + " reserved for the pod");

        NodePrepareResourceResponse prepared = cluster.kubelet().prepare(cluster.draInfo(), NS, "infer-gpu", uid).getClaimsOrThrow(uid);
        if (!prepared.getError().isEmpty()) {
            throw new IllegalStateException("NodePrepareResources refused claim " + NS + "/infer-gpu: " + prepared.getError());
        }
        List<String> cdiIds = new ArrayList<>();
        prepared.getDevicesList().forEach(d -> cdiIds.addAll(d.getCdiDeviceIdsList()));
        out.println("  4. kubelet NodePrepareResources over " + cluster.draInfo().getEndpoint() + " -> CDI devices " + cdiIds);

        java.nio.file.Path spec = new CdiSpecs(cluster.cdiRoot()).file(uid);
        Map<String, String> env = new TreeMap<>();
        List<String> deviceNodes = new ArrayList<>();
        List<String> mounts = new ArrayList<>();
        JsonNode cdi = JSON.readTree(Files.readString(spec));
        collect(cdi.path("containerEdits"), env, deviceNodes, mounts);
        for (JsonNode d : cdi.path("devices")) {
            if (cdiIds.contains(CdiSpecs.qualifiedName(d.path("name").asText()))) {
                collect(d.path("containerEdits"), env, deviceNodes, mounts);
            }
        }
        out.println("  5. the container runtime applies CDI spec " + spec.getFileName() + ": device nodes " + deviceNodes);
        if (!mounts.isEmpty()) {
            out.println("     mounts " + mounts);
        }
        printEnvironment("dra-infer", env);
        return env;
    }

    private ResourceSlice awaitSlice(String node) throws InterruptedException {
        String name = DriverNames.sliceName(node);
        long until = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (true) {
            ResourceSlice s = client.resources(ResourceSlice.class).withName(name).get();
            if (s != null && s.getSpec() != null && s.getSpec().getDevices() != null && !s.getSpec().getDevices().isEmpty()) {
                return s;
            }
            if (System.nanoTime() > until) {
                throw new IllegalStateException("the DRA driver did not publish ResourceSlice " + name + " within 20 s");
            }
            Thread.sleep(20);
        }
    }

    private static String describe(Device d) {
        StringBuilder b = new StringBuilder(d.getName()).append(":");
        d.getAttributes().forEach((k, v) -> {
            if (k.equals("productName") || k.equals("uuid")) {
                b.append(' ').append(k).append('=').append(v.getString());
            }
        });
        d.getCapacity().forEach((k, v) -> {
            long n = v.getValue().getNumericalAmount().longValue();
            b.append(' ').append(k).append('=').append(k.equals(DraNames.CAPACITY_MEMORY) ? gib(n) : String.valueOf(n));
        });
        return b.toString();
    }

    private static void collect(JsonNode edits, Map<String, String> env, List<String> deviceNodes, List<String> mounts) {
        for (JsonNode e : edits.path("env")) {
            String s = e.asText();
            int eq = s.indexOf('=');
            env.put(eq < 0 ? s : s.substring(0, eq), eq < 0 ? "" : s.substring(eq + 1));
        }
        for (JsonNode d : edits.path("deviceNodes")) {
            deviceNodes.add(d.path("path").asText());
        }
        for (JsonNode m : edits.path("mounts")) {
            mounts.add(m.path("containerPath").asText());
        }
    }

    // ------------------------------------------------------------------------------------------------ device plugin

    /** A pod asking for {@code qgpu.io/gpu} through the extender, allocated by the device plugin; returns its container's environment. */
    public Map<String, String> devicePlugin() throws Exception {
        String node = LocalCluster.DEVICE_PLUGIN_NODE;
        out.println();
        out.println("== device plugin: a pod asking for qgpu.io/gpu, scheduled by the extender onto node " + node);

        DevicePluginGrpc.DevicePluginBlockingStub plugin = cluster.kubelet().devicePlugin(cluster.devicePluginRegistration());
        ListAndWatchResponse devices = cluster.kubelet().listDevices(plugin);
        List<String> ids = devices.getDevicesList().stream().map(io.qgpu.kubernetes.deviceplugin.v1beta1.Device::getID).toList();
        out.println("  1. the plugin registered " + cluster.devicePluginRegistration().getResourceName() + " on kubelet.sock;"
                + " ListAndWatch: " + ids.size() + " virtual devices (" + ids.get(0) + ", ...)");

        Map<String, Quantity> limits = new LinkedHashMap<>();
        limits.put("qgpu.io/gpu", new Quantity("1"));
        limits.put("qgpu.io/gpu-memory", new Quantity("8"));
        limits.put("qgpu.io/gpu-core", new Quantity("20"));
        Pod pod = client.pods().inNamespace(NS).resource(new PodBuilder()
                .withNewMetadata().withNamespace(NS).withName("dp-infer")
                .addToAnnotations("qgpu.io/priority", "online").addToAnnotations("qgpu.io/gpu-core-limit", "50").endMetadata()
                .withNewSpec().addNewContainer().withName("main").withImage("registry.example.com/infer:1.0")
                .withNewResources().withLimits(limits).endResources().endContainer().endSpec().build()).create();
        out.println("  2. pod " + NS + "/dp-infer asks for qgpu.io/gpu 1, qgpu.io/gpu-memory 8 (GiB), qgpu.io/gpu-core 20;"
                + " online, gpu-core-limit 50");

        ObjectNode args = JSON.createObjectNode();
        args.set("Pod", JSON.readTree(client.getKubernetesSerialization().asJson(pod)));
        args.putArray("NodeNames").add(node).add(LocalCluster.DRA_NODE);
        JsonNode filtered = post("filter", args);
        out.println("  3. extender filter: fits " + filtered.path("NodeNames") + "; failed " + filtered.path("FailedNodes")
                + filtered.path("FailedAndUnresolvableNodes"));
        args.putArray("NodeNames").add(node);
        JsonNode priorities = post("prioritize", args);
        out.println("     extender prioritize: " + priorities);

        ObjectNode bindArgs = JSON.createObjectNode().put("PodName", "dp-infer").put("PodNamespace", NS)
                .put("PodUID", pod.getMetadata().getUid()).put("Node", node);
        JsonNode bound = post("bind", bindArgs);
        if (!bound.path("Error").asText().isEmpty()) {
            throw new IllegalStateException("the extender's bind failed: " + bound.path("Error").asText());
        }
        awaitBound("dp-infer");
        Pod after = client.pods().inNamespace(NS).withName("dp-infer").get();
        out.println("  4. extender bind: Binding to " + after.getSpec().getNodeName() + " (applied to the pod), qgpu.io/placement: "
                + placementSummary(after.getMetadata().getAnnotations().get(QgpuAnnotationsView.PLACEMENT)));

        AllocateResponse allocated = cluster.kubelet().allocate(plugin, ids, 1);
        ContainerAllocateResponse c = allocated.getContainerResponses(0);
        Pod marked = client.pods().inNamespace(NS).withName("dp-infer").get();
        out.println("  5. kubelet GetPreferredAllocation + Allocate of 1 device -> the plugin matched the extender's decision;"
                + " pod marked " + QgpuAnnotationsView.ALLOCATED + "=" + marked.getMetadata().getAnnotations().get(QgpuAnnotationsView.ALLOCATED));
        out.println("     device nodes " + c.getDevicesList().stream().map(d -> d.getContainerPath()).toList());
        if (c.getMountsCount() > 0) {
            out.println("     mounts " + c.getMountsList().stream().map(m -> m.getContainerPath()).toList());
        }
        Map<String, String> env = new TreeMap<>(c.getEnvsMap());
        printEnvironment("dp-infer", env);
        return env;
    }

    /** The placement annotation in one line: each slice's GPU, memory and compute. */
    private static String placementSummary(String json) throws IOException {
        JsonNode p = JSON.readTree(json);
        List<String> slices = new ArrayList<>();
        for (JsonNode s : p.path("slices")) {
            slices.add(s.path("gpu").asText() + " " + gib(s.path("memoryBytes").asLong()) + ", compute " + s.path("computeRequest").asInt()
                    + "-" + s.path("computeLimit").asInt() + "%");
        }
        return String.join("; ", slices) + ", " + p.path("claim").path("priority").asText();
    }

    private static String gib(long bytes) {
        return bytes % (1L << 30) == 0 ? (bytes >> 30) + " GiB" : bytes + " bytes";
    }

    /** Waits until the pod is on a node: the local cluster applies the Binding the extender created, as kube-apiserver does. */
    private void awaitBound(String name) throws InterruptedException {
        long until = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (true) {
            Pod p = client.pods().inNamespace(NS).withName(name).get();
            if (p != null && p.getSpec().getNodeName() != null && !p.getSpec().getNodeName().isEmpty()) {
                return;
            }
            if (System.nanoTime() > until) {
                Binding b = client.bindings().inNamespace(NS).withName(name).get();
                throw new IllegalStateException("pod " + NS + "/" + name + " is not on a node 20 s after the extender's bind ("
                        + (b == null ? "no Binding was created" : "its Binding to " + b.getTarget().getName() + " was not applied") + ")");
            }
            Thread.sleep(20);
        }
    }

    private JsonNode post(String verb, JsonNode body) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(cluster.extenderUrl() + "/" + verb))
                .header("Content-Type", "application/json").timeout(Duration.ofSeconds(20))
                .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body))).build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IllegalStateException("extender " + verb + ": HTTP " + r.statusCode() + " " + r.body());
        }
        return JSON.readTree(r.body());
    }

    private void printEnvironment(String pod, Map<String, String> env) {
        out.println("  container main of pod " + NS + "/" + pod + " starts with:");
        env.forEach((k, v) -> out.println("     " + k + "=" + v));
    }

    /** The annotation names the walk prints (the extender's and the device plugin's). */
    static final class QgpuAnnotationsView {
        static final String PLACEMENT = io.qgpu.kubernetes.extender.QgpuAnnotations.PLACEMENT;
        static final String ALLOCATED = io.qgpu.kubernetes.deviceplugin.Names.ALLOCATED;

        private QgpuAnnotationsView() {
        }
    }
}
