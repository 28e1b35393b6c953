package io.qgpu.kubernetes.deviceplugin;

import static io.qgpu.kubernetes.deviceplugin.LifecycleTest.uuidOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.qgpu.api.GpuDevice;
import io.qgpu.kubernetes.deviceplugin.v1beta1.AllocateRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.AllocateResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerAllocateRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerAllocateResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerPreferredAllocationRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DevicePluginGrpc;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DeviceSpec;
import io.qgpu.kubernetes.deviceplugin.v1beta1.PreStartContainerRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.PreferredAllocationRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.RegisterRequest;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Allocate and GetPreferredAllocation through a real socket, and every refusal as a gRPC status. */
class AllocateTest extends PluginTestBase {
    DevicePlugin plugin;
    DevicePluginGrpc.DevicePluginBlockingStub stub;

    void up(String machine, PodDecisions decisions) throws Exception {
        plugin = start(config(machine, decisions));
        RegisterRequest r = kubelet.awaitRegistration();
        stub = stub(r);
    }

    String id(int gpu, int slot) {
        return VirtualDevice.idOf(uuidOf(plugin, gpu), slot);
    }

    String uuid(int gpu) {
        return uuidOf(plugin, gpu);
    }

    @SafeVarargs
    final AllocateResponse allocate(List<String>... containers) {
        AllocateRequest.Builder b = AllocateRequest.newBuilder();
        for (List<String> c : containers) {
            b.addContainerRequests(ContainerAllocateRequest.newBuilder().addAllDevicesIds(c));
        }
        return stub.allocate(b.build());
    }

    List<String> preferred(List<String> available, List<String> must, int size) {
        return stub.getPreferredAllocation(PreferredAllocationRequest.newBuilder().addContainerRequests(
                ContainerPreferredAllocationRequest.newBuilder().addAllAvailableDeviceIDs(available)
                        .addAllMustIncludeDeviceIDs(must).setAllocationSize(size)).build())
                .getContainerResponses(0).getDeviceIDsList();
    }

    Set<String> visible(ContainerAllocateResponse r) {
        return new HashSet<>(Arrays.asList(r.getEnvsOrThrow("NVIDIA_VISIBLE_DEVICES").split(",")));
    }

    List<String> allIds() {
        return plugin.pool().devices().stream().map(VirtualDevice::id).toList();
    }

    @Test
    void oneIdGoesToItsHomeGpuWithTheLimitsDeviceNodesAndAnnotations() throws Exception {
        up("t4x4", PodDecisions.none());
        ContainerAllocateResponse r = allocate(List.of(id(1, 0))).getContainerResponses(0);
        Map<String, String> env = r.getEnvsMap();
        assertEquals(uuid(1), env.get("NVIDIA_VISIBLE_DEVICES"));
        assertEquals(Long.toString(4 * GpuDevice.GIB), env.get("QGPU_MEMORY_LIMIT_BYTES"));
        assertEquals("0", env.get("QGPU_COMPUTE_REQUEST"));
        assertEquals("100", env.get("QGPU_COMPUTE_LIMIT"));
        assertEquals("offline", env.get("QGPU_PRIORITY"));
        assertEquals("devices/" + id(1, 0), env.get("QGPU_TENANT"));
        assertEquals(id(1, 0), env.get("QGPU_VIRTUAL_DEVICES"));
        assertEquals(List.of("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia1"),
                r.getDevicesList().stream().map(DeviceSpec::getContainerPath).toList());
        for (DeviceSpec d : r.getDevicesList()) {
            assertEquals(d.getContainerPath(), d.getHostPath());
            assertEquals("rw", d.getPermissions());
        }
        assertEquals(Map.of("qgpu.io/gpus", uuid(1), "qgpu.io/tenant", "devices/" + id(1, 0)), r.getAnnotationsMap());
    }

    @Test
    void idsOfAFullGpuAreMappedToTheLeastLoadedBestLinkedGpus() throws Exception {
        up("t4x4", PodDecisions.none());
        // GPU0 holds four 4 GiB slots: full
        for (int s = 0; s < 4; s++) {
            assertEquals(uuid(0), allocate(List.of(id(0, s))).getContainerResponses(0).getEnvsOrThrow("NVIDIA_VISIBLE_DEVICES"));
        }
        // two ids of GPU1 for one container: two GPUs are needed, GPU1 cannot hold both; GPU2 and GPU3
        // share a host bridge (better than any pair with GPU1 across the bridges) and are empty
        ContainerAllocateResponse r = allocate(List.of(id(1, 0), id(1, 1))).getContainerResponses(0);
        assertEquals(Set.of(uuid(2), uuid(3)), visible(r));
        Map<String, String> on = plugin.pool().devices().stream()
                .collect(Collectors.toMap(VirtualDevice::id, VirtualDevice::gpu));
        assertEquals(Set.of(uuid(2), uuid(3)), Set.of(on.get(id(1, 0)), on.get(id(1, 1))));
        assertEquals(uuid(1), on.get(id(1, 2)), "an id without an allocation stays on its home GPU");
    }

    @Test
    void theExtendersPlacementWinsAndThePodIsMarkedApplied() throws Exception {
        RecordingDecisions d = new RecordingDecisions();
        up("t4x4", d);
        d.pod("infer", "two-gpus", 2, 10, 50, uuid(0), uuid(1));
        d.pod("infer", "web", 8, 30, 60, uuid(3));
        ContainerAllocateResponse r = allocate(List.of(id(0, 0))).getContainerResponses(0);
        Map<String, String> env = r.getEnvsMap();
        assertEquals(uuid(3), env.get("NVIDIA_VISIBLE_DEVICES"));
        assertEquals(Long.toString(8 * GpuDevice.GIB), env.get("QGPU_MEMORY_LIMIT_BYTES"));
        assertEquals("30", env.get("QGPU_COMPUTE_REQUEST"));
        assertEquals("60", env.get("QGPU_COMPUTE_LIMIT"));
        assertEquals("online", env.get("QGPU_PRIORITY"));
        assertEquals("infer/web", env.get("QGPU_TENANT"));
        assertEquals(List.of("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia3"),
                r.getDevicesList().stream().map(DeviceSpec::getContainerPath).toList());
        assertEquals(Map.of("infer/web", List.of(id(0, 0))), d.applied);
        assertEquals(uuid(3), plugin.pool().devices().stream().filter(v -> v.id().equals(id(0, 0))).findFirst()
                .orElseThrow().gpu());
        // the next one-GPU container finds no pending pod: the plugin decides (home GPU)
        assertEquals(uuid(2), visible(allocate(List.of(id(2, 0))).getContainerResponses(0)).iterator().next());
        // a two-GPU container gets the two-GPU pod's placement
        ContainerAllocateResponse two = allocate(List.of(id(3, 0), id(3, 1))).getContainerResponses(0);
        assertEquals(uuid(0) + "," + uuid(1), two.getEnvsOrThrow("NVIDIA_VISIBLE_DEVICES"));
        assertEquals("infer/two-gpus", two.getEnvsOrThrow("QGPU_TENANT"));
    }

    @Test
    void preferredAllocationTakesTheBestLinkedLeastLoadedGpus() throws Exception {
        up("a100-bridged", PodDecisions.none());
        // GPU0-GPU1 and GPU2-GPU3 are NVLink-bridged pairs
        List<String> two = preferred(allIds(), List.of(), 2);
        Set<String> homes = two.stream().map(VirtualDevice::homeOf).collect(Collectors.toSet());
        assertTrue(homes.equals(Set.of(uuid(0), uuid(1))) || homes.equals(Set.of(uuid(2), uuid(3))), two.toString());

        allocate(List.of(id(0, 0)));
        List<String> free = allIds().stream().filter(i -> !i.equals(id(0, 0))).toList();
        List<String> pair = preferred(free, List.of(), 2);
        assertEquals(Set.of(uuid(2), uuid(3)), pair.stream().map(VirtualDevice::homeOf).collect(Collectors.toSet()));
        String one = preferred(free, List.of(), 1).get(0);
        assertNotEquals(uuid(0), VirtualDevice.homeOf(one), "the least loaded GPU, not the one that holds a slot");

        // around a must-include id: its NVLink peer
        List<String> around = preferred(free, List.of(id(2, 5)), 2);
        assertEquals(id(2, 5), around.get(0));
        assertEquals(uuid(3), VirtualDevice.homeOf(around.get(1)));
        assertEquals(2, new HashSet<>(around).size());
    }

    /**
     * NVIDIA's {@code distributed} policy: a pod asking for two time-sliced replicas on a node whose GPUs
     * have two replicas each, one already taken on GPU 1, gets one replica of each GPU (not both of GPU 0,
     * whose two replicas are both free), and Allocate puts them on those two GPUs.
     */
    @Test
    void replicasOfOneRequestAreSpreadOverGpus() throws Exception {
        plugin = start(config("t4x4", PodDecisions.none())
                .withRules(new io.qgpu.api.GranularityRules("two-replicas", GpuDevice.GIB, GpuDevice.GIB, 5, 2, 0)));
        stub = stub(kubelet.awaitRegistration());
        assertEquals(8, allIds().size(), "two replicas per GPU");
        allocate(List.of(id(1, 0)));
        List<String> offered = List.of(id(0, 0), id(0, 1), id(1, 1));
        List<String> two = preferred(offered, List.of(), 2);
        assertEquals(Set.of(uuid(0), uuid(1)), two.stream().map(VirtualDevice::homeOf).collect(Collectors.toSet()), two.toString());
        assertEquals(Set.of(uuid(0), uuid(1)), visible(allocate(two).getContainerResponses(0)));
    }

    /**
     * Issue 41 item 5 through gRPC: GPUs of two replicas each, GPU2 and GPU3 full, GPU1's first replica taken by
     * a live container and its second held by a container that is gone (the kubelet offers its id). NVIDIA's
     * {@code distributed} policy counts one replica taken on GPU1 and gives one replica of GPU0 and one of GPU1;
     * so does the plugin, and Allocate gives the container both GPUs (before: both replicas on GPU0).
     */
    @Test
    void aGoneContainersReplicaDoesNotKeepTheRequestOffItsGpu() throws Exception {
        plugin = start(config("t4x4", PodDecisions.none())
                .withRules(new io.qgpu.api.GranularityRules("two-replicas", GpuDevice.GIB, GpuDevice.GIB, 5, 2, 0)));
        stub = stub(kubelet.awaitRegistration());
        for (int g = 2; g < 4; g++) {
            allocate(List.of(id(g, 0)));
            allocate(List.of(id(g, 1)));
        }
        allocate(List.of(id(1, 1)));   // gone by now
        allocate(List.of(id(1, 0)));
        List<String> two = preferred(List.of(id(0, 0), id(0, 1), id(1, 1)), List.of(), 2);
        assertEquals(Map.of(0, 1L, 1, 1L), perGpu(two), two.toString());
        assertEquals(Set.of(uuid(0), uuid(1)), visible(allocate(two).getContainerResponses(0)));
        assertEquals(6, plugin.pool().allocations().size(), "the gone container's allocation released");
    }

    /** Chosen ids per home GPU position (0..3), GPUs without one absent. */
    Map<Integer, Long> perGpu(List<String> ids) {
        Map<Integer, Long> out = new java.util.TreeMap<>();
        for (String id : ids) {
            for (int g = 0; g < 4; g++) {
                if (VirtualDevice.homeOf(id).equals(uuid(g))) {
                    out.merge(g, 1L, Long::sum);
                }
            }
        }
        return out;
    }

    /** Every id of the given GPU positions, in advertising order. */
    List<String> idsOf(Integer... gpus) {
        Set<String> on = Arrays.stream(gpus).map(this::uuid).collect(Collectors.toSet());
        return allIds().stream().filter(i -> on.contains(VirtualDevice.homeOf(i))).toList();
    }

    /**
     * NVIDIA's device plugin tests for its {@code distributed} replica policy, in our words: GPUs with
     * four replicas each (t4x4: 16 GiB, 4 GiB slots); the GPUs a request may use are those whose ids the
     * kubelet offers. More ids than GPUs stack evenly (never 3 + 1 where 2 + 2 fits).
     */
    @Test
    void preferredReplicasFollowTheDistributedPolicysCases() throws Exception {
        up("t4x4", PodDecisions.none());
        assertEquals(Map.of(0, 1L, 1, 1L), perGpu(preferred(idsOf(0, 1), List.of(), 2)), "2 GPUs, 2 replicas");
        assertEquals(Map.of(0, 1L, 1, 1L, 2, 1L), perGpu(preferred(idsOf(0, 1, 2), List.of(), 3)), "3 GPUs, 3 replicas");
        assertEquals(Map.of(0, 2L, 1, 2L), perGpu(preferred(idsOf(0, 1), List.of(), 4)), "2 GPUs, 4 replicas");
        assertEquals(List.of(3L, 2L), perGpu(preferred(idsOf(0, 1), List.of(), 5)).values().stream()
                .sorted(java.util.Comparator.reverseOrder()).toList(), "2 GPUs, 5 replicas");
        assertEquals(Map.of(0, 1L), perGpu(preferred(idsOf(0), List.of(), 1)), "1 GPU, 1 replica");
        // GPU0's four replicas all taken: the kubelet offers only GPU1's, and both go there
        for (int s = 0; s < 4; s++) {
            allocate(List.of(id(0, s)));
        }
        assertEquals(Map.of(1, 2L), perGpu(preferred(idsOf(1), List.of(), 2)), "a full GPU");
        assertStatus(Status.Code.INVALID_ARGUMENT, "allocation_size = 5", () -> preferred(idsOf(1), List.of(), 5));
    }

    @Test
    void preferredReplicasStackEvenlyAroundOtherTenants() throws Exception {
        up("t4x4", PodDecisions.none());
        allocate(List.of(id(0, 0)));   // GPU0 has room for 3 more, GPU1 for 4
        List<String> offered = idsOf(0, 1).stream().filter(i -> !i.equals(id(0, 0))).toList();
        assertEquals(Map.of(0, 2L, 1, 2L), perGpu(preferred(offered, List.of(), 4)));
    }

    /**
     * Allocate of more ids than GPUs that can take one: one replica per id, 2 + 2 over GPU0 and GPU1 (GPU2
     * and GPU3 are full), reserved together, released together when the ids are handed out again, and
     * kept across a restart.
     */
    @Test
    void allocateStacksReplicasEvenlyAndReleasesThemTogether() throws Exception {
        plugin = start(config("t4x4", PodDecisions.none())
                .withRules(new io.qgpu.api.GranularityRules("two-replicas", GpuDevice.GIB, GpuDevice.GIB, 5, 2, 0)));
        stub = stub(kubelet.awaitRegistration());
        for (int g = 2; g < 4; g++) {
            allocate(List.of(id(g, 0)));
            allocate(List.of(id(g, 1)));
        }
        List<String> four = preferred(idsOf(0, 1), List.of(), 4);
        assertEquals(Map.of(0, 2L, 1, 2L), perGpu(four));
        ContainerAllocateResponse r = allocate(four).getContainerResponses(0);
        assertEquals(Set.of(uuid(0), uuid(1)), visible(r));
        long slot = plugin.pool().allocations().get(0).placement().slices().get(0).memoryBytes();   // a one-id container's
        String two = Long.toString(2 * slot);
        assertEquals(two + "," + two, r.getEnvsOrThrow("QGPU_MEMORY_LIMIT_BYTES"), "two slots on each GPU");
        Allocation a = plugin.pool().allocations().get(4);
        assertEquals(4, a.replicas().size());
        assertEquals(four.stream().collect(Collectors.toMap(i -> i, VirtualDevice::homeOf)), a.gpuOf(),
                "every id on its home GPU");

        // the same ids again: the old container is gone, all four replicas are released, and they fit again
        ContainerAllocateResponse again = allocate(four).getContainerResponses(0);
        assertEquals(Set.of(uuid(0), uuid(1)), visible(again));
        assertEquals(5, plugin.pool().allocations().size());

        List<Allocation> before = plugin.pool().allocations();
        plugin.close();
        open.remove(plugin);
        DevicePlugin second = start(config("t4x4", PodDecisions.none())
                .withRules(new io.qgpu.api.GranularityRules("two-replicas", GpuDevice.GIB, GpuDevice.GIB, 5, 2, 0)));
        kubelet.awaitRegistration();
        assertEquals(before, second.pool().allocations());
        second.close();
        open.remove(second);

        // a state file whose replicas are not placements is refused by file and JSON path
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        com.fasterxml.jackson.databind.node.ObjectNode root = (com.fasterxml.jackson.databind.node.ObjectNode) json.readTree(state.toFile());
        ((com.fasterxml.jackson.databind.node.ObjectNode) root.get("allocations").get(4)).put("replicas", 7);
        json.writeValue(state.toFile(), root);
        RuntimeException e = assertThrows(StateFile.StateFileException.class, () -> start(config("t4x4", PodDecisions.none())
                .withRules(new io.qgpu.api.GranularityRules("two-replicas", GpuDevice.GIB, GpuDevice.GIB, 5, 2, 0))));
        assertTrue(e.getMessage().contains("$.allocations[4].replicas: 7 must be an array of placements"), e.getMessage());
    }

    @Test
    void anIdHandedOutAgainReleasesItsOldAllocation() throws Exception {
        up("t4x4", PodDecisions.none());
        allocate(List.of(id(1, 0), id(2, 0)));
        allocate(List.of(id(2, 0)));
        assertEquals(1, plugin.pool().allocations().size());
        assertEquals(List.of(id(2, 0)), plugin.pool().allocations().get(0).deviceIds());
    }

    @Test
    void containersOfOneRequestAreAllocatedAllOrNone() throws Exception {
        up("t4x4", PodDecisions.none());
        // five replicas on four GPUs would stack unevenly (2 + 1 + 1 + 1): refused, and the first container with it
        assertStatus(Status.Code.RESOURCE_EXHAUSTED, "only unevenly", () -> allocate(List.of(id(1, 0)),
                List.of(id(0, 0), id(0, 1), id(0, 2), id(0, 3), id(2, 0))));
        assertEquals(List.of(), plugin.pool().allocations());
        assertStatus(Status.Code.NOT_FOUND, "no such device", () -> allocate(List.of(id(1, 0)), List.of("GPU-nope::0")));
        assertEquals(List.of(), plugin.pool().allocations());
        ContainerAllocateResponse ok = allocate(List.of(id(1, 0))).getContainerResponses(0);
        assertEquals(uuid(1), ok.getEnvsOrThrow("NVIDIA_VISIBLE_DEVICES"));
    }

    @Test
    void malformedAndUnknownRequestsGetAStatusAndThePluginGoesOn() throws Exception {
        up("t4x4", PodDecisions.none());
        assertStatus(Status.Code.INVALID_ARGUMENT, "AllocateRequest.container_requests = []",
                () -> stub.allocate(AllocateRequest.getDefaultInstance()));
        assertStatus(Status.Code.INVALID_ARGUMENT, "AllocateRequest.container_requests[0].devices_ids = []",
                () -> allocate(List.of()));
        assertStatus(Status.Code.NOT_FOUND, "AllocateRequest.container_requests[0].devices_ids[1] = GPU-x::0",
                () -> allocate(List.of(id(0, 0), "GPU-x::0")));
        assertStatus(Status.Code.INVALID_ARGUMENT, "devices_ids[0] = \"\"", () -> allocate(List.of("")));
        assertStatus(Status.Code.INVALID_ARGUMENT, "is named twice", () -> allocate(List.of(id(0, 0), id(0, 0))));
        assertStatus(Status.Code.INVALID_ARGUMENT, "is named twice", () -> allocate(List.of(id(0, 0)), List.of(id(0, 0))));

        assertStatus(Status.Code.INVALID_ARGUMENT, "PreferredAllocationRequest.container_requests",
                () -> stub.getPreferredAllocation(PreferredAllocationRequest.getDefaultInstance()));
        assertStatus(Status.Code.INVALID_ARGUMENT, "PreferredAllocationRequest.container_requests[0].allocation_size = 0", () -> preferred(allIds(), List.of(), 0));
        assertStatus(Status.Code.INVALID_ARGUMENT, "allocation_size = 17", () -> preferred(allIds(), List.of(), 17));
        assertStatus(Status.Code.INVALID_ARGUMENT, "is not among available_deviceIDs",
                () -> preferred(List.of(id(0, 0)), List.of(id(1, 0)), 1));
        assertStatus(Status.Code.NOT_FOUND, "PreferredAllocationRequest.container_requests[0].available_deviceIDs[0] = bogus", () -> preferred(List.of("bogus"), List.of(), 1));
        assertStatus(Status.Code.INVALID_ARGUMENT, "must not be more than allocation_size",
                () -> preferred(List.of(id(0, 0), id(1, 0)), List.of(id(0, 0), id(1, 0)), 1));

        assertStatus(Status.Code.NOT_FOUND, "PreStartContainerRequest.devices_ids[0] = bogus",
                () -> stub.preStartContainer(PreStartContainerRequest.newBuilder().addDevicesIds("bogus").build()));
        stub.preStartContainer(PreStartContainerRequest.newBuilder().addDevicesIds(id(0, 0)).build());

        assertEquals(List.of(), plugin.pool().allocations());
        assertEquals(uuid(0), allocate(List.of(id(0, 0))).getContainerResponses(0).getEnvsOrThrow("NVIDIA_VISIBLE_DEVICES"));
    }

    @Test
    void anExtenderPlacementOnAGpuThisNodeLacksIsRefused() throws Exception {
        RecordingDecisions d = new RecordingDecisions();
        up("t4x4", d);
        d.pod("infer", "elsewhere", 4, 0, 100, "GPU-00000000-0000-0000-0000-000000000000");
        assertStatus(Status.Code.FAILED_PRECONDITION, "which node node-a does not have", () -> allocate(List.of(id(0, 0))));
        assertEquals(Map.of(), d.applied);
        assertEquals(List.of(), plugin.pool().allocations());
    }

    static void assertStatus(Status.Code code, String part, Executable call) {
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class, call);
        assertEquals(code, e.getStatus().getCode(), e.getStatus().toString());
        String d = String.valueOf(e.getStatus().getDescription());
        assertTrue(d.contains(part), "\"" + d + "\" should contain \"" + part + "\"");
    }
}
