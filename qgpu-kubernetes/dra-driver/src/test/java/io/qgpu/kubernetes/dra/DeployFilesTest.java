package io.qgpu.kubernetes.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.rbac.ClusterRole;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAllocationConfiguration;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClaimConfiguration;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClass;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceRequestAllocationResult;
import io.fabric8.kubernetes.api.model.resource.v1.ExactDeviceRequest;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimTemplate;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourceResponse;
import io.qgpu.kubernetes.node.dra.PublishedSlice;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Item 6: the deploy files parse as the objects they claim to be, the DaemonSet's flags are the driver's,
 * and each example template, allocated as the scheduler allocates it (its capacity requests rounded up to the
 * published request policies, else each capacity's default: {@link SchedulerModel}; its configuration copied
 * into the allocation with source FromClaim), is prepared into the container environment the README shows.
 */
class DeployFilesTest extends DriverTestBase {
    static final Path DEPLOY = Path.of(System.getProperty("qgpu.dra.deploy", "deploy"));

    static List<HasMetadata> load(String file) throws Exception {
        try (InputStream in = Files.newInputStream(DEPLOY.resolve(file))) {
            return client.load(in).items();
        }
    }

    @Test
    void daemonSetRbacAndDeviceClass() throws Exception {
        List<HasMetadata> objects = load("daemonset.yaml");
        DaemonSet ds = objects.stream().filter(DaemonSet.class::isInstance).map(DaemonSet.class::cast).findFirst().orElseThrow();
        List<String> command = ds.getSpec().getTemplate().getSpec().getContainers().get(0).getCommand();
        assertEquals(List.of("java", "-jar", "/opt/qgpu/qgpu-dra-driver.jar"), command.subList(0, 3));
        Map<String, String> flags = Main.parse(command.subList(3, command.size()));
        assertEquals(List.of("--node-name", "--kubelet-registrar-directory-path", "--kubelet-plugins-directory-path", "--cdi-root",
                "--state-file"), List.copyOf(flags.keySet()));
        assertEquals("/var/lib/kubelet/plugins_registry", flags.get("--kubelet-registrar-directory-path"));
        ClusterRole role = objects.stream().filter(ClusterRole.class::isInstance).map(ClusterRole.class::cast).findFirst().orElseThrow();
        assertTrue(role.getRules().stream().anyMatch(r -> r.getResources().contains("resourceslices")
                && r.getVerbs().containsAll(List.of("list", "create", "update", "delete"))));
        assertTrue(role.getRules().stream().anyMatch(r -> r.getResources().contains("resourceclaims") && r.getVerbs().contains("get")));
        // the pods in a claim's status.reservedFor, read at prepare to find the containers that use it: get, nothing more
        List<List<String>> podVerbs = role.getRules().stream().filter(r -> r.getResources().contains("pods")).map(r -> {
            assertEquals(List.of(""), r.getApiGroups(), "pods are in the core group");
            return r.getVerbs();
        }).toList();
        assertEquals(List.of(List.of("get")), podVerbs);

        DeviceClass dc = (DeviceClass) load("deviceclass.yaml").get(0);
        assertEquals("gpu.qgpu.io", dc.getMetadata().getName());
        assertEquals("device.driver == \"gpu.qgpu.io\"", dc.getSpec().getSelectors().get(0).getCel().getExpression());
        // the class that the stand-ins for the driver (a trace replay, a benchmark) name: the same
        assertEquals(PublishedSlice.deviceClass().getMetadata().getName(), dc.getMetadata().getName());
        assertEquals(PublishedSlice.deviceClass().getSpec(), dc.getSpec());
    }

    /**
     * Issue 38: the MPS control daemon DaemonSet runs the daemons apart from the driver, with the host's PID
     * namespace, the compute and utility driver capabilities, privileges, and the node's MPS shared-memory directory
     * as its /dev/shm (the directory the clients get), each setting explained by the comment above it.
     */
    @Test
    void theMpsControlDaemonSetHasWhatTheDaemonsNeedEachExplained() throws Exception {
        List<HasMetadata> objects = load("mps-control-daemon.yaml");
        assertEquals(1, objects.size());
        DaemonSet ds = (DaemonSet) objects.get(0);
        assertEquals("kube-system", ds.getMetadata().getNamespace());
        var pod = ds.getSpec().getTemplate().getSpec();
        assertEquals(Boolean.TRUE, pod.getHostPID());
        assertEquals("OnDelete", ds.getSpec().getUpdateStrategy().getType(), "a new pod cuts the old daemons' clients off");
        var c = pod.getContainers().get(0);
        assertEquals(List.of("java", "-cp", "/opt/qgpu/qgpu-dra-driver.jar", "io.qgpu.kubernetes.node.mps.MpsControlDaemon",
                "--mps-root=/run/qgpu/mps", "--mps-shm-dir=/dev/shm", "--rules=qgpu"), c.getCommand());
        assertEquals(io.qgpu.kubernetes.node.mps.MpsControlDaemon.class.getName(), c.getCommand().get(3), "the class exists");
        Map<String, String> env = new LinkedHashMap<>();
        c.getEnv().forEach(e -> env.put(e.getName(), e.getValue()));
        assertEquals("compute,utility", env.get("NVIDIA_DRIVER_CAPABILITIES"));
        assertEquals("all", env.get("NVIDIA_VISIBLE_DEVICES"));
        assertEquals(Boolean.TRUE, c.getSecurityContext().getPrivileged());
        Map<String, String> mounts = new LinkedHashMap<>();
        c.getVolumeMounts().forEach(m -> mounts.put(m.getMountPath(), m.getName()));
        Map<String, String> hostPaths = new LinkedHashMap<>();
        pod.getVolumes().forEach(v -> hostPaths.put(v.getName(), v.getHostPath().getPath()));
        assertEquals("/run/qgpu/mps/shm", hostPaths.get(mounts.get("/dev/shm")), "the node's MPS shm directory is the daemons' /dev/shm");
        assertEquals("/run/qgpu/mps", hostPaths.get(mounts.get("/run/qgpu/mps")));
        assertEquals(new io.qgpu.kubernetes.node.mps.MpsLayout(Path.of("/run/qgpu/mps")).defaultShmDir().toString(),
                hostPaths.get("mps-shm"), "the directory the driver mounts into the clients by default");

        io.qgpu.kubernetes.node.mps.MpsDeployFile text = io.qgpu.kubernetes.node.mps.MpsDeployFile.read(DEPLOY.resolve("mps-control-daemon.yaml"));
        assertTrue(text.commentAbove("hostPID: true").contains("PID namespace"), text.commentAbove("hostPID: true"));
        String caps = text.commentAbove("- name: NVIDIA_DRIVER_CAPABILITIES");
        assertTrue(caps.contains("compute:") && caps.contains("nvidia-cuda-mps-control") && caps.contains("utility:"), caps);
        assertTrue(text.commentAbove("privileged: true").contains("root"), text.commentAbove("privileged: true"));
        String shm = text.commentAbove("- name: mps-shm");
        assertTrue(shm.contains("/dev/shm") && shm.contains("every client"), shm);
        assertTrue(text.commentAbove("updateStrategy:").contains("by hand"), text.commentAbove("updateStrategy:"));
    }

    @Test
    void eachTemplateAllocatedAsTheSchedulerDoesIsPreparedIntoTheReadmesEnvironment() throws Exception {
        start("dgx-h100");
        var stub = kubelet.v1(register());
        ResourceSlice slice = slices().get(0);
        Map<String, ResourceClaimTemplate> templates = new LinkedHashMap<>();
        for (HasMetadata o : load("resourceclaimtemplates.yaml")) {
            templates.put(o.getMetadata().getName(), (ResourceClaimTemplate) o);
        }
        assertEquals(List.of("qgpu-whole-gpu", "qgpu-share-10gi-30", "qgpu-two-gpus", "qgpu-online-share"),
                List.copyOf(templates.keySet()));

        Map<String, String> whole = prepare(stub, slice, templates.get("qgpu-whole-gpu"), 0);
        assertEquals("100", whole.get("QGPU_COMPUTE_LIMIT"));
        assertEquals(Long.toString(80L << 30), whole.get("QGPU_MEMORY_LIMIT_BYTES"));

        Map<String, String> share = prepare(stub, slice, templates.get("qgpu-share-10gi-30"), 1);
        assertEquals(Long.toString(10L << 30), share.get("QGPU_MEMORY_LIMIT_BYTES"));
        assertEquals("30", share.get("QGPU_COMPUTE_REQUEST"));
        assertEquals("30", share.get("QGPU_COMPUTE_LIMIT"));
        assertEquals("offline", share.get("QGPU_PRIORITY"));

        Map<String, String> two = prepare(stub, slice, templates.get("qgpu-two-gpus"), 2);
        assertEquals(2, two.get("NVIDIA_VISIBLE_DEVICES").split(",").length);

        Map<String, String> online = prepare(stub, slice, templates.get("qgpu-online-share"), 4);
        assertEquals(Long.toString(10L << 30), online.get("QGPU_MEMORY_LIMIT_BYTES"));
        assertEquals("30", online.get("QGPU_COMPUTE_REQUEST"));
        assertEquals("60", online.get("QGPU_COMPUTE_LIMIT"));
        assertEquals("online", online.get("QGPU_PRIORITY"));
    }

    /** Allocates the template's claim on consecutive devices from {@code first}, prepares it, returns its environment. */
    Map<String, String> prepare(io.qgpu.kubernetes.dra.v1.DRAPluginGrpc.DRAPluginBlockingStub stub, ResourceSlice slice,
                                ResourceClaimTemplate t, int first) throws Exception {
        ExactDeviceRequest req = t.getSpec().getSpec().getDevices().getRequests().get(0).getExactly();
        assertEquals("gpu.qgpu.io", req.getDeviceClassName());
        int count = req.getCount() == null ? 1 : req.getCount().intValue();
        List<DeviceRequestAllocationResult> results = new ArrayList<>();
        SchedulerModel scheduler = new SchedulerModel();
        for (int i = 0; i < count; i++) {
            var device = slice.getSpec().getDevices().get(first + i);
            Map<String, Quantity> requested = req.getCapacity() == null ? Map.of() : req.getCapacity().getRequests();
            Map<String, Quantity> consumed = scheduler.allocate(device, requested).orElseThrow();
            results.add(Claims.consumed(t.getSpec().getSpec().getDevices().getRequests().get(0).getName(), device.getName(), consumed,
                    "aaaaaaaa-0000-0000-0000-00000000000" + i));
        }
        List<DeviceAllocationConfiguration> config = new ArrayList<>();
        List<DeviceClaimConfiguration> fromClaim = t.getSpec().getSpec().getDevices().getConfig();
        for (DeviceClaimConfiguration c : fromClaim == null ? List.<DeviceClaimConfiguration>of() : fromClaim) {
            config.add(Claims.config("FromClaim", c.getRequests(), c.getOpaque().getDriver(), c.getOpaque().getParameters()));
        }
        String name = t.getMetadata().getName() + "-claim";
        String uid = Claims.allocated(client, name, config, results.toArray(DeviceRequestAllocationResult[]::new));
        NodePrepareResourceResponse r = Kubelet.prepare(stub, Kubelet.claim(Claims.NS, name, uid)).getClaimsOrThrow(uid);
        assertEquals("", r.getError());
        JsonNode spec = new ObjectMapper().readTree(cdi.resolve("qgpu.io-gpu_" + uid + ".json").toFile());
        Map<String, String> env = new LinkedHashMap<>();
        for (JsonNode e : spec.at("/containerEdits/env")) {
            String[] kv = e.asText().split("=", 2);
            env.put(kv[0], kv[1]);
        }
        assertEquals(uid, env.get("QGPU_TENANT"));
        return env;
    }
}
