package io.qgpu.samples.localcluster;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fabric8.kubernetes.api.model.Binding;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.NodeSelector;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodSchedulingGate;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.AllocationResult;
import io.fabric8.kubernetes.api.model.resource.v1.Device;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAttribute;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClaimConfigurationBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceRequestAllocationResult;
import io.fabric8.kubernetes.api.model.resource.v1.ExactDeviceRequestBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimConsumerReferenceBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.zjsonpatch.JsonPatch;
import io.qgpu.kubernetes.allocator.AdmissionWebhook;
import io.qgpu.kubernetes.allocator.AllocatorController;
import io.qgpu.kubernetes.allocator.AllocatorFlags;
import io.qgpu.kubernetes.deviceplugin.v1beta1.AllocateResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerAllocateResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DevicePluginGrpc;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ListAndWatchResponse;
import io.qgpu.kubernetes.dra.DriverNames;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourceResponse;
import io.qgpu.kubernetes.extender.KubernetesCluster;
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
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import java.util.function.Supplier;

/**
 * Walks pods down each path of a {@link LocalCluster}, from what they ask for to what their containers get, and
 * prints each step in a few lines:
 *
 * <ul>
 *   <li>{@link #dra()}: the ResourceSlice the driver published; then for each pod, its ResourceClaim of class
 *       {@code gpu.qgpu.io} (a 10 GiB, 30% share of one GPU with a GpuConfig: online, at most 60%; two whole GPUs;
 *       200 GiB, which no GPU has); the allocator's admission webhook answering the pod's CREATE with the gate
 *       {@code qgpu.io/allocate}; the qgpu DRA allocator writing the claim's {@code status.allocation} and finalizer
 *       and removing the gate (or, for the claim that does not fit, leaving the pod gated with its
 *       {@code QgpuUnschedulable} Event); the part kube-scheduler plays with an allocated claim, which the walk plays
 *       since no kube-scheduler runs: the pod into the claim's {@code status.reservedFor} and a Binding to the node of
 *       the allocation's {@code nodeSelector}; the stand-in kubelet's {@code NodePrepareResources}; the container's
 *       environment from the CDI spec the driver wrote;</li>
 *   <li>{@link #devicePlugin()}: a pod asking for {@code qgpu.io/gpu} (8 GiB, 20%, online, at most 50%) through
 *       the extender's filter, prioritize and bind over HTTP (the local cluster applies the Binding to the pod); the stand-in kubelet's
 *       {@code ListAndWatch}, {@code GetPreferredAllocation} and {@code Allocate}; the container's environment from
 *       the plugin's answer.</li>
 * </ul>
 *
 * <p>Each walk returns the environment of the containers it started. Every wait polls the API server until its
 * condition holds, for at most {@link #WAIT}. Thread safety: one walk at a time.
 */
public final class Walk {
    /** The namespace of the walks' pods and claims. */
    public static final String NS = "default";
    /** How long a step waits for what another part does (the allocator, the driver, the Binding's application). */
    static final Duration WAIT = Duration.ofSeconds(20);

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

    /**
     * Pods with ResourceClaims of class {@code gpu.qgpu.io}: a share of one GPU and two whole GPUs, each allocated by
     * the qgpu DRA allocator and prepared by the DRA driver, and a claim bigger than any GPU, which the allocator
     * leaves gated. Returns the environment of each started container, by pod name, in walk order.
     */
    public Map<String, Map<String, String>> dra() throws Exception {
        String node = LocalCluster.DRA_NODE;
        out.println();
        out.println("== DRA: pods with ResourceClaims of class " + DraNames.DEVICE_CLASS + ", allocated by the qgpu DRA allocator,"
                + " prepared by the DRA driver on node " + node);

        ResourceSlice slice = awaitSlice(node);
        out.println("  the driver published ResourceSlice " + slice.getMetadata().getName() + ": "
                + slice.getSpec().getDevices().size() + " devices, each shareable (allowMultipleAllocations)");
        out.println("     " + describe(slice.getSpec().getDevices().get(0)));
        AllocatorFlags flags = cluster.allocatorFlags();
        out.println("  the allocator runs with " + String.join(" ", LocalCluster.ALLOCATOR_FLAGS) + " (policy " + flags.policy().wireName()
                + ", rules " + flags.rules().name() + ", class " + String.join(", ", flags.deviceClasses()) + "): it allocates the"
                + " claims of pods gated with " + DraNames.SCHEDULING_GATE);
        out.println("  no kube-scheduler runs here: for a claim the allocator allocated, the walk plays only what kube-scheduler"
                + " does with it (the pod into status.reservedFor, the pod bound to the node of the allocation's nodeSelector)");

        Map<String, Map<String, String>> envs = new LinkedHashMap<>();
        Map<String, Quantity> share = new LinkedHashMap<>();
        share.put(DraNames.CAPACITY_MEMORY, new Quantity("10Gi"));
        share.put(DraNames.CAPACITY_CORES, new Quantity("30"));
        Map<String, Object> gpuConfig = new LinkedHashMap<>();
        gpuConfig.put("apiVersion", "gpu.qgpu.io/v1alpha1");
        gpuConfig.put("kind", "GpuConfig");
        gpuConfig.put("priority", "online");
        gpuConfig.put("computeLimit", 60);
        envs.put("dra-infer", allocated("dra-infer", createClaim("infer-gpu", 1, share, gpuConfig),
                "memory 10Gi and cores 30 of one device; GpuConfig priority online, computeLimit 60", slice));
        envs.put("dra-train", allocated("dra-train", createClaim("train-gpus", 2, Map.of(), null),
                "2 whole devices (no capacity requests; no GpuConfig: priority offline)", slice));
        refused("dra-huge", createClaim("huge-gpu", 1, Map.of(DraNames.CAPACITY_MEMORY, new Quantity("200Gi")), null),
                "memory 200Gi of one device: more than any GPU of the node has");
        return envs;
    }

    /** A claim of {@code count} devices of qgpu's class, with these capacity requests (none: whole devices). */
    private ResourceClaim createClaim(String name, int count, Map<String, Quantity> capacity, Map<String, Object> gpuConfig) {
        ResourceClaimBuilder b = new ResourceClaimBuilder().withNewMetadata().withNamespace(NS).withName(name).endMetadata();
        ExactDeviceRequestBuilder exactly = new ExactDeviceRequestBuilder().withDeviceClassName(DraNames.DEVICE_CLASS)
                .withCount((long) count);
        if (!capacity.isEmpty()) {
            exactly.withNewCapacity().withRequests(new LinkedHashMap<>(capacity)).endCapacity();
        }
        var devices = b.withNewSpec().withNewDevices().addNewRequest().withName("gpu").withExactly(exactly.build()).endRequest();
        if (gpuConfig != null) {
            devices.withConfig(new DeviceClaimConfigurationBuilder().withRequests("gpu").withNewOpaque().withDriver(DraNames.DRIVER)
                    .withParameters(gpuConfig).endOpaque().build());
        }
        return client.resources(ResourceClaim.class).inNamespace(NS).resource(devices.endDevices().endSpec().build()).create();
    }

    /**
     * One pod with the claim: admitted with the allocator's gate, allocated by the allocator, reserved and bound as
     * kube-scheduler does, prepared by the driver through the stand-in kubelet; returns its container's environment.
     */
    private Map<String, String> allocated(String podName, ResourceClaim claim, String what, ResourceSlice slice) throws Exception {
        String claimName = claim.getMetadata().getName();
        out.println();
        out.println("-- pod " + NS + "/" + podName + ": ResourceClaim " + NS + "/" + claimName + ", " + what);
        admit(podName, claimName);

        Pod released = await(() -> {
            Pod p = client.pods().inNamespace(NS).withName(podName).get();
            return p != null && !gated(p) ? p : null;
        }, () -> "the allocator did not remove the gate of pod " + NS + "/" + podName + " within " + WAIT.toSeconds() + " s"
                + event(podName, AllocatorController.REASON_UNSCHEDULABLE).map(e -> " (its Event " + e.getReason() + ": "
                + e.getMessage() + ")").orElse(""));
        ResourceClaim rc = client.resources(ResourceClaim.class).inNamespace(NS).withName(claimName).get();
        AllocationResult allocation = rc.getStatus() == null ? null : rc.getStatus().getAllocation();
        if (allocation == null) {
            throw new IllegalStateException("pod " + NS + "/" + podName + " was released but claim " + NS + "/" + claimName
                    + " has no status.allocation");
        }
        String node = nodeOf(allocation);
        out.println("  2. the allocator wrote claim " + claimName + "'s status.allocation (nodeSelector metadata.name In [" + node
                + "]) and removed the gate:");
        for (DeviceRequestAllocationResult r : allocation.getDevices().getResults()) {
            out.println("     request " + r.getRequest() + " -> " + r.getPool() + "/" + r.getDevice() + " (" + uuidOf(slice, r.getDevice())
                    + "), consumedCapacity " + consumed(r, slice));
        }
        Event allocatedEvent = await(() -> event(podName, AllocatorController.REASON_ALLOCATED).orElse(null),
                () -> "no Event " + AllocatorController.REASON_ALLOCATED + " on pod " + NS + "/" + podName);
        out.println("     finalizers " + rc.getMetadata().getFinalizers() + "; Event " + allocatedEvent.getReason() + ": "
                + allocatedEvent.getMessage());

        ResourceClaim reserved = client.resources(ResourceClaim.class).inNamespace(NS).resource(new ResourceClaimBuilder(rc)
                .editStatus().addToReservedFor(new ResourceClaimConsumerReferenceBuilder().withApiGroup("").withResource("pods")
                        .withName(podName).withUid(released.getMetadata().getUid()).build()).endStatus().build()).updateStatus();
        new KubernetesCluster(client).bind(released, node, Map.of());
        awaitBound(podName);
        out.println("  3. kube-scheduler's part, played by the walk: pod " + podName + " added to the claim's status.reservedFor;"
                + " Binding to " + node + ", the node of the allocation's nodeSelector (applied to the pod)");
        return prepare(podName, reserved);
    }

    /** A pod with a claim that does not fit: the allocator leaves it gated and says why in an Event. */
    private void refused(String podName, ResourceClaim claim, String what) throws Exception {
        String claimName = claim.getMetadata().getName();
        out.println();
        out.println("-- pod " + NS + "/" + podName + ": ResourceClaim " + NS + "/" + claimName + ", " + what);
        admit(podName, claimName);
        Event e = await(() -> event(podName, AllocatorController.REASON_UNSCHEDULABLE).orElse(null),
                () -> "no Event " + AllocatorController.REASON_UNSCHEDULABLE + " on pod " + NS + "/" + podName + " within "
                        + WAIT.toSeconds() + " s");
        Pod p = client.pods().inNamespace(NS).withName(podName).get();
        ResourceClaim rc = client.resources(ResourceClaim.class).inNamespace(NS).withName(claimName).get();
        if (!gated(p) || (rc.getStatus() != null && rc.getStatus().getAllocation() != null)) {
            throw new IllegalStateException("pod " + NS + "/" + podName + " does not fit, yet it was released or its claim allocated");
        }
        out.println("  2. the allocator leaves it gated, claim " + claimName + " unallocated, with a " + e.getType() + " Event "
                + e.getReason() + ":");
        out.println("     " + e.getMessage());
        out.println("     kube-scheduler does not place a gated pod; the allocator places it as soon as room frees");
    }

    /**
     * The pod as the allocator's admission webhook answers its CREATE ({@link LocalCluster#admission()}, called as
     * kube-apiserver calls the webhook: the mock has no admission chain), with the answer's JSONPatch applied, created.
     */
    private Pod admit(String podName, String claimName) throws Exception {
        // the webhook reads the claim from its informer cache, as in a cluster; the walk lets the cache catch up
        await(() -> cluster.claimLookup().claim(NS, claimName).orElse(null),
                () -> "the webhook's cache did not see claim " + NS + "/" + claimName);
        Pod pod = new PodBuilder().withNewMetadata().withNamespace(NS).withName(podName).endMetadata()
                .withNewSpec().addNewResourceClaim().withName("gpu").withResourceClaimName(claimName).endResourceClaim()
                .addNewContainer().withName("main").withImage("registry.example.com/infer:1.0")
                .withNewResources().addNewClaim().withName("gpu").endClaim().endResources().endContainer()
                .endSpec().build();
        JsonNode object = JSON.readTree(client.getKubernetesSerialization().asJson(pod));
        ObjectNode review = JSON.createObjectNode().put("apiVersion", AdmissionWebhook.API_VERSION).put("kind", AdmissionWebhook.KIND);
        ObjectNode request = review.putObject("request").put("uid", UUID.randomUUID().toString());
        request.putObject("kind").put("group", "").put("version", "v1").put("kind", "Pod");
        request.putObject("resource").put("group", "").put("version", "v1").put("resource", "pods");
        request.put("operation", "CREATE").put("namespace", NS).put("name", podName).set("object", object);
        JsonNode response = JSON.readTree(cluster.admission().review(JSON.writeValueAsBytes(review))).path("response");
        JsonNode patch = response.hasNonNull("patch") ? JSON.readTree(Base64.getDecoder().decode(response.path("patch").asText())) : null;
        out.println("  1. admission: the allocator's webhook (AdmissionWebhook.review, called as kube-apiserver would) answers the"
                + " pod's CREATE: " + response.path("status").path("message").asText());
        if (patch != null) {
            out.println("     patch " + patch);
        }
        Pod admitted = client.getKubernetesSerialization().unmarshal(
                JSON.writeValueAsString(patch == null ? object : JsonPatch.apply(patch, object)), Pod.class);
        Pod created = client.pods().inNamespace(NS).resource(admitted).create();
        out.println("     pod created with schedulingGates " + created.getSpec().getSchedulingGates().stream()
                .map(PodSchedulingGate::getName).toList() + ": kube-scheduler leaves it alone");
        return created;
    }

    /** The stand-in kubelet's NodePrepareResources of the claim, and the environment of the CDI spec the driver wrote. */
    private Map<String, String> prepare(String podName, ResourceClaim rc) throws Exception {
        String claimName = rc.getMetadata().getName();
        String uid = rc.getMetadata().getUid();
        NodePrepareResourceResponse prepared = cluster.kubelet().prepare(cluster.draInfo(), NS, claimName, uid).getClaimsOrThrow(uid);
        if (!prepared.getError().isEmpty()) {
            throw new IllegalStateException("NodePrepareResources refused claim " + NS + "/" + claimName + ": " + prepared.getError());
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
        printEnvironment(podName, env);
        return env;
    }

    /** The one node an allocation's {@code nodeSelector} names (the allocator writes {@code metadata.name In [node]}). */
    static String nodeOf(AllocationResult a) {
        NodeSelector s = a.getNodeSelector();
        List<String> nodes = s == null || s.getNodeSelectorTerms() == null ? List.of() : s.getNodeSelectorTerms().stream()
                .filter(t -> t.getMatchFields() != null)
                .flatMap(t -> t.getMatchFields().stream())
                .filter(f -> "metadata.name".equals(f.getKey()) && "In".equals(f.getOperator()) && f.getValues() != null)
                .flatMap(f -> f.getValues().stream()).distinct().toList();
        if (nodes.size() != 1) {
            throw new IllegalStateException("the allocation's nodeSelector does not name one node: " + s);
        }
        return nodes.get(0);
    }

    private static boolean gated(Pod p) {
        return p.getSpec().getSchedulingGates() != null
                && p.getSpec().getSchedulingGates().stream().anyMatch(g -> DraNames.SCHEDULING_GATE.equals(g.getName()));
    }

    /** The newest Event with this reason on the pod. */
    private Optional<Event> event(String podName, String reason) {
        return client.v1().events().inNamespace(NS).list().getItems().stream()
                .filter(e -> e.getInvolvedObject() != null && podName.equals(e.getInvolvedObject().getName())
                        && reason.equals(e.getReason()))
                .reduce((a, b) -> b);
    }

    private static String uuidOf(ResourceSlice slice, String device) {
        return slice.getSpec().getDevices().stream().filter(d -> d.getName().equals(device)).findFirst()
                .map(d -> d.getAttributes().get(DraNames.ATTRIBUTE_UUID)).map(DeviceAttribute::getString).orElse("not published");
    }

    /** {@code memory 10 GiB, cores 30, tenants 1}, and whether that is all of the device. */
    private static String consumed(DeviceRequestAllocationResult r, ResourceSlice slice) {
        Map<String, Quantity> c = r.getConsumedCapacity();
        if (c == null || c.isEmpty()) {
            return "none (the whole device)";
        }
        List<String> parts = new ArrayList<>();
        c.forEach((k, v) -> {
            long n = v.getNumericalAmount().longValue();
            parts.add(k + " " + (k.equals(DraNames.CAPACITY_MEMORY) ? gib(n) : String.valueOf(n)));
        });
        boolean whole = slice.getSpec().getDevices().stream().filter(d -> d.getName().equals(r.getDevice())).findFirst()
                .map(d -> d.getCapacity().get(DraNames.CAPACITY_MEMORY).getValue().getNumericalAmount()
                        .compareTo(c.get(DraNames.CAPACITY_MEMORY).getNumericalAmount()) == 0)
                .orElse(false);
        return String.join(", ", parts) + (whole ? " (the whole device)" : "");
    }

    private ResourceSlice awaitSlice(String node) throws InterruptedException {
        String name = DriverNames.sliceName(node);
        return await(() -> {
            ResourceSlice s = client.resources(ResourceSlice.class).withName(name).get();
            return s != null && s.getSpec() != null && s.getSpec().getDevices() != null && !s.getSpec().getDevices().isEmpty() ? s : null;
        }, () -> "the DRA driver did not publish ResourceSlice " + name + " within " + WAIT.toSeconds() + " s");
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

    /** Waits until the pod is on a node: the local cluster applies the Binding created for it, as kube-apiserver does. */
    private void awaitBound(String name) throws InterruptedException {
        await(() -> {
            Pod p = client.pods().inNamespace(NS).withName(name).get();
            return p != null && p.getSpec().getNodeName() != null && !p.getSpec().getNodeName().isEmpty() ? p : null;
        }, () -> {
            Binding b = client.bindings().inNamespace(NS).withName(name).get();
            return "pod " + NS + "/" + name + " is not on a node " + WAIT.toSeconds() + " s after its bind ("
                    + (b == null ? "no Binding was created" : "its Binding to " + b.getTarget().getName() + " was not applied") + ")";
        });
    }

    /**
     * Polls {@code probe} until it gives a value (not null), for up to {@link #WAIT}; at the deadline fails with the
     * message of {@code failure}.
     */
    private static <T> T await(Supplier<T> probe, Supplier<String> failure) throws InterruptedException {
        long until = System.nanoTime() + WAIT.toNanos();
        while (true) {
            T v = probe.get();
            if (v != null) {
                return v;
            }
            if (System.nanoTime() > until) {
                throw new IllegalStateException(failure.get());
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
