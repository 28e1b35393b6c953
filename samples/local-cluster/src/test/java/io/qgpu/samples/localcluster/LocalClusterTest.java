package io.qgpu.samples.localcluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.resource.v1.AllocationResult;
import io.fabric8.kubernetes.api.model.resource.v1.Device;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceRequestAllocationResult;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.qgpu.kubernetes.allocator.AllocatorController;
import io.qgpu.kubernetes.dra.DriverNames;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * End to end: what {@code ./qgpu-local-cluster} runs ({@link Main#run}), with its defaults (a dgx-h100 for the DRA driver, a t4x4
 * for the device plugin, HAMi-core), with the printed environments of the containers checked line by line, and the
 * API server read before the cluster stops: what the node's DRA driver prepared (the container's environment from
 * its CDI spec) is exactly what the qgpu DRA allocator wrote into the claims' {@code status.allocation} (the same
 * devices, the consumed memory and cores as the limits, the GpuConfig's priority), and the pod whose claim no GPU
 * can hold stays gated with the allocator's {@code QgpuUnschedulable} Event.
 */
class LocalClusterTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern ENV = Pattern.compile("^ {5}([A-Z_][A-Z0-9_]*)=(.*)$");

    /** The API server's state after the walks. */
    record Cluster(ResourceSlice slice, Map<String, ResourceClaim> claims, Map<String, Pod> pods, List<Event> events) {
        Optional<Event> event(String pod, String reason) {
            return events.stream().filter(e -> pod.equals(e.getInvolvedObject().getName()) && reason.equals(e.getReason())).findFirst();
        }
    }

    @Test
    @Timeout(120)
    void walksPodsDownEachPathFromClaimToContainerEnvironment() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        AtomicReference<Cluster> seen = new AtomicReference<>();
        AtomicReference<Main.Walks> walked = new AtomicReference<>();
        int rc = Main.run(new String[0], new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), (cluster, walks) -> {
                    KubernetesClient c = cluster.client();
                    seen.set(new Cluster(c.resources(ResourceSlice.class).withName(DriverNames.sliceName(LocalCluster.DRA_NODE)).get(),
                            byName(c.resources(ResourceClaim.class).inNamespace(Walk.NS).list().getItems(), x -> x.getMetadata().getName()),
                            byName(c.pods().inNamespace(Walk.NS).list().getItems(), x -> x.getMetadata().getName()),
                            c.v1().events().inNamespace(Walk.NS).list().getItems()));
                    walked.set(walks);
                });
        String text = out.toString(StandardCharsets.UTF_8);
        System.out.println(text);
        assertEquals(0, rc, () -> "exit code; stderr: " + err.toString(StandardCharsets.UTF_8));

        String[] parts = text.split("\n== ");
        assertEquals(3, parts.length, text);
        assertTrue(parts[1].startsWith("DRA:"), parts[1]);
        assertTrue(parts[2].startsWith("device plugin:"), parts[2]);
        assertTrue(parts[1].contains("ResourceSlice gpu-dra-gpu.qgpu.io: 8 devices"), parts[1]);
        String[] pods = parts[1].split("\n-- pod ");
        assertEquals(4, pods.length, parts[1]);
        assertTrue(pods[1].startsWith("default/dra-infer:"), pods[1]);
        assertTrue(pods[2].startsWith("default/dra-train:"), pods[2]);
        assertTrue(pods[3].startsWith("default/dra-huge:"), pods[3]);
        for (int i = 1; i < pods.length; i++) {
            assertTrue(pods[i].contains("gated: claim default/"), pods[i]);
            assertTrue(pods[i].contains("pod created with schedulingGates [qgpu.io/allocate]"), pods[i]);
        }
        assertTrue(pods[1].contains("-> CDI devices [qgpu.io/gpu="), pods[1]);
        assertTrue(parts[2].contains("fits [\"gpu-dp\"]"), parts[2]);
        Cluster api = seen.get();
        assertNotNull(api, "the check after the walks ran");
        Main.Walks walks = walked.get();
        assertEquals(List.of("dra-infer", "dra-train"), List.copyOf(walks.dra().keySet()));

        // DRA, a share: 10Gi and 30 cores of one GPU, GpuConfig online, at most 60%
        Map<String, String> infer = environment(pods[1]);
        assertEquals(walks.dra().get("dra-infer"), infer, "the printed environment is the prepared one");
        ResourceClaim inferClaim = api.claims().get("infer-gpu");
        preparedIsWhatWasAllocated(api, "dra-infer", inferClaim, infer);
        DeviceRequestAllocationResult share = results(inferClaim).get(0);
        assertEquals(1, results(inferClaim).size());
        assertEquals(10L << 30, bytes(share, DraNames.CAPACITY_MEMORY));
        assertEquals(30, bytes(share, DraNames.CAPACITY_CORES));
        assertEquals("online", infer.get("QGPU_PRIORITY"));
        assertEquals("60", infer.get("QGPU_COMPUTE_LIMIT"), "the GpuConfig's compute limit");
        assertEquals("hami-core", infer.get("QGPU_SHARING"), infer.toString());
        assertEquals("10240m", infer.get("CUDA_DEVICE_MEMORY_LIMIT_0"), infer.toString());
        assertEquals("60", infer.get("CUDA_DEVICE_SM_LIMIT"), infer.toString());   // HAMi-core holds the limit

        // DRA, two whole GPUs: each consumes its device's whole capacity; no GpuConfig, so offline; no sharing back end
        Map<String, String> train = environment(pods[2]);
        assertEquals(walks.dra().get("dra-train"), train, "the printed environment is the prepared one");
        ResourceClaim trainClaim = api.claims().get("train-gpus");
        preparedIsWhatWasAllocated(api, "dra-train", trainClaim, train);
        assertEquals(2, results(trainClaim).size());
        for (DeviceRequestAllocationResult r : results(trainClaim)) {
            Device d = device(api.slice(), r.getDevice());
            assertEquals(d.getCapacity().get(DraNames.CAPACITY_MEMORY).getValue().getNumericalAmount().longValueExact(),
                    bytes(r, DraNames.CAPACITY_MEMORY), "a whole GPU consumes all of its memory");
            assertEquals(100, bytes(r, DraNames.CAPACITY_CORES));
            assertTrue(!r.getDevice().equals(share.getDevice()), "the whole GPUs are not the one holding the share");
        }
        assertEquals("offline", train.get("QGPU_PRIORITY"));
        assertEquals("100", train.get("QGPU_COMPUTE_LIMIT"));
        assertEquals("none", train.get("QGPU_SHARING"), train.toString());

        // DRA, a claim bigger than any GPU: gated, unallocated, with the allocator's reasons
        Pod huge = api.pods().get("dra-huge");
        assertTrue(huge.getSpec().getSchedulingGates().stream().anyMatch(g -> DraNames.SCHEDULING_GATE.equals(g.getName())), huge.toString());
        assertNull(huge.getSpec().getNodeName());
        ResourceClaim hugeClaim = api.claims().get("huge-gpu");
        assertTrue(hugeClaim.getStatus() == null || hugeClaim.getStatus().getAllocation() == null, hugeClaim.toString());
        Event refusal = api.event("dra-huge", AllocatorController.REASON_UNSCHEDULABLE).orElseThrow(() -> new AssertionError(api.events()));
        assertEquals("Warning", refusal.getType());
        assertTrue(refusal.getMessage().contains("claim default/huge-gpu") && refusal.getMessage().contains("INSUFFICIENT_MEMORY requested 200 GiB"),
                refusal.getMessage());
        assertTrue(api.event("dra-huge", AllocatorController.REASON_ALLOCATED).isEmpty());
        assertTrue(pods[3].contains("the allocator leaves it gated"), pods[3]);

        // device plugin: the extender's decision, 8 GiB and 20%, online, at most 50%
        Map<String, String> dp = environment(parts[2]);
        assertEquals(walks.devicePlugin(), dp, "the printed environment is the allocated one");
        assertTrue(dp.get("NVIDIA_VISIBLE_DEVICES").matches("GPU-[0-9a-f-]+"), dp.toString());
        assertEquals(String.valueOf(8L << 30), dp.get("QGPU_MEMORY_LIMIT_BYTES"), dp.toString());
        assertEquals("20", dp.get("QGPU_COMPUTE_REQUEST"));
        assertEquals("50", dp.get("QGPU_COMPUTE_LIMIT"));
        assertEquals("online", dp.get("QGPU_PRIORITY"));
        assertEquals("default/dp-infer", dp.get("QGPU_TENANT"));
        assertEquals("hami-core", dp.get("QGPU_SHARING"), dp.toString());
        assertEquals("8192m", dp.get("CUDA_DEVICE_MEMORY_LIMIT_0"), dp.toString());
        assertEquals("50", dp.get("CUDA_DEVICE_SM_LIMIT"), dp.toString());
        // two nodes, two machines: H100s for the DRA claims, a T4 for the device plugin's pod
        assertTrue(!infer.get("NVIDIA_VISIBLE_DEVICES").equals(dp.get("NVIDIA_VISIBLE_DEVICES")), text);
        assertTrue(text.contains("done in "), text);
    }

    /**
     * The claim as the allocator wrote it (its finalizer, results of the DRA node's pool, a node selector) and as
     * kube-scheduler's part left it (reserved for the pod, the pod bound to that node, the gate gone), and the
     * container's environment is exactly its allocation: the devices' UUIDs in result order, the consumed memory
     * per device, the consumed cores as the compute request, the priority of the allocation's GpuConfig (offline
     * without one), the claim's uid as the tenant.
     */
    private static void preparedIsWhatWasAllocated(Cluster api, String podName, ResourceClaim claim, Map<String, String> env) {
        AllocationResult a = claim.getStatus().getAllocation();
        assertNotNull(a, claim.getMetadata().getName() + " allocated");
        assertTrue(claim.getMetadata().getFinalizers().contains(DraNames.ALLOCATION_FINALIZER), claim.getMetadata().toString());
        Pod pod = api.pods().get(podName);
        assertEquals(List.of(pod.getMetadata().getUid()), claim.getStatus().getReservedFor().stream().map(r -> r.getUid()).toList());
        assertEquals(LocalCluster.DRA_NODE, Walk.nodeOf(a));
        assertEquals(Walk.nodeOf(a), pod.getSpec().getNodeName(), "bound to the node of the allocation's nodeSelector");
        assertTrue(pod.getSpec().getSchedulingGates() == null || pod.getSpec().getSchedulingGates().isEmpty(), pod.getSpec().toString());
        assertTrue(api.event(podName, AllocatorController.REASON_ALLOCATED).isPresent(), api.events().toString());

        List<DeviceRequestAllocationResult> results = results(claim);
        assertEquals(results.size(), results.stream().map(DeviceRequestAllocationResult::getDevice).distinct().count(), "distinct GPUs");
        List<String> uuids = new ArrayList<>();
        List<String> memory = new ArrayList<>();
        for (DeviceRequestAllocationResult r : results) {
            assertEquals(DraNames.DRIVER, r.getDriver());
            assertEquals(LocalCluster.DRA_NODE, r.getPool());
            uuids.add(device(api.slice(), r.getDevice()).getAttributes().get(DraNames.ATTRIBUTE_UUID).getString());
            memory.add(Long.toString(bytes(r, DraNames.CAPACITY_MEMORY)));
            assertEquals(bytes(results.get(0), DraNames.CAPACITY_CORES), bytes(r, DraNames.CAPACITY_CORES));
        }
        assertEquals(String.join(",", uuids), env.get("NVIDIA_VISIBLE_DEVICES"), "the allocated devices");
        assertEquals(String.join(",", memory), env.get("QGPU_MEMORY_LIMIT_BYTES"), "the consumed memory");
        assertEquals(Long.toString(bytes(results.get(0), DraNames.CAPACITY_CORES)), env.get("QGPU_COMPUTE_REQUEST"), "the consumed cores");
        assertEquals(claim.getMetadata().getUid(), env.get("QGPU_TENANT"));
        String priority = a.getDevices().getConfig() == null ? "offline" : a.getDevices().getConfig().stream()
                .filter(c -> c.getOpaque() != null && DraNames.DRIVER.equals(c.getOpaque().getDriver()))
                .map(c -> JSON.convertValue(c.getOpaque().getParameters(), JsonNode.class).path("priority"))
                .filter(JsonNode::isTextual).map(JsonNode::asText).reduce((x, y) -> y).orElse("offline");
        assertEquals(priority, env.get("QGPU_PRIORITY"), "the GpuConfig's priority");
    }

    private static List<DeviceRequestAllocationResult> results(ResourceClaim claim) {
        return claim.getStatus().getAllocation().getDevices().getResults();
    }

    private static long bytes(DeviceRequestAllocationResult r, String capacity) {
        return r.getConsumedCapacity().get(capacity).getNumericalAmount().longValueExact();
    }

    private static Device device(ResourceSlice slice, String name) {
        return slice.getSpec().getDevices().stream().filter(d -> d.getName().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("the slice has no device " + name));
    }

    private static <T> Map<String, T> byName(List<T> items, Function<T, String> name) {
        Map<String, T> m = new LinkedHashMap<>();
        items.forEach(i -> m.put(name.apply(i), i));
        return m;
    }

    @Test
    void badUsageIsRefusedWithExitCode2() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        assertEquals(2, Main.run(new String[] {"--bogus"}, new PrintStream(new ByteArrayOutputStream()),
                new PrintStream(err, true, StandardCharsets.UTF_8)));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("unknown option --bogus"));
        ByteArrayOutputStream mps = new ByteArrayOutputStream();
        assertEquals(2, Main.run(new String[] {"--sharing", "mps"}, new PrintStream(new ByteArrayOutputStream()),
                new PrintStream(mps, true, StandardCharsets.UTF_8)));
        assertTrue(mps.toString(StandardCharsets.UTF_8).contains("--sharing mps: not in the local cluster"), mps.toString(StandardCharsets.UTF_8));
    }

    /** The {@code NAME=value} lines of one walk's container. */
    private static Map<String, String> environment(String walk) {
        Map<String, String> env = new LinkedHashMap<>();
        List<String> lines = walk.lines().toList();
        int from = 0;
        while (from < lines.size() && !lines.get(from).contains("starts with:")) {
            from++;
        }
        for (String line : lines.subList(Math.min(from + 1, lines.size()), lines.size())) {
            Matcher m = ENV.matcher(line);
            if (m.matches()) {
                env.put(m.group(1), m.group(2));
            }
        }
        assertTrue(!env.isEmpty(), walk);
        return env;
    }
}
