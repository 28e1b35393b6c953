package io.qgpu.kubernetes.deviceplugin;

import static io.qgpu.kubernetes.deviceplugin.LifecycleTest.uuidOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.kubernetes.deviceplugin.v1beta1.AllocateRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerAllocateRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.Device;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DevicePluginGrpc;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ListAndWatchResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.RegisterRequest;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** The plugin restarts: same ids, same mapping of ids to GPUs, same reservations; a bad state file is refused by name. */
class RestartTest extends PluginTestBase {

    @Test
    void aRestartedPluginAdvertisesTheSameIdsOnTheSameGpus() throws Exception {
        DevicePlugin first = start("t4x4");
        RegisterRequest r = kubelet.awaitRegistration();
        DevicePluginGrpc.DevicePluginBlockingStub stub = stub(r);
        String id10 = VirtualDevice.idOf(uuidOf(first, 1), 0);
        String id11 = VirtualDevice.idOf(uuidOf(first, 1), 1);
        for (int s = 0; s < 4; s++) {
            allocate(stub, VirtualDevice.idOf(uuidOf(first, 0), s));
        }
        allocate(stub, id10, id11); // GPU0 is full: these two land on GPU2 and GPU3
        List<VirtualDevice> before = first.pool().devices();
        List<Allocation> allocations = first.pool().allocations();
        assertEquals(uuidOf(first, 2), gpuOf(before, id10));
        first.close();
        assertEquals(0, FAKE.fake_nvml_init_count());
        try (Stream<java.nio.file.Path> files = Files.list(state.getParent())) {
            assertEquals(List.of(), files.filter(f -> f.getFileName().toString().endsWith(".tmp")).toList(),
                    "no temporary file left beside the state file");
        }

        DevicePlugin second = start("t4x4");
        RegisterRequest again = kubelet.awaitRegistration();
        assertEquals(before, second.pool().devices());
        assertEquals(allocations, second.pool().allocations());
        DeviceStream stream = new DeviceStream(dial(again));
        ListAndWatchResponse list = stream.first();
        assertEquals(before.stream().map(VirtualDevice::id).toList(), list.getDevicesList().stream().map(Device::getID).toList());

        // an Xid on GPU2 turns the id of GPU1 that lives there unhealthy, not its siblings on GPU1
        assertEquals(1, FAKE.fake_nvml_inject_xid(2, 79));
        ListAndWatchResponse bad = stream.await("GPU2 unhealthy", l -> LifecycleTest.unhealthy(l).size() == 5);
        List<String> unhealthy = LifecycleTest.unhealthy(bad);
        assertTrue(unhealthy.contains(id10), unhealthy.toString());
        assertTrue(!unhealthy.contains(id11), unhealthy.toString());
        assertEquals(4, unhealthy.stream().filter(id -> VirtualDevice.homeOf(id).equals(uuidOf(second, 2))).count());

        // the reservations came back: GPU0 is still full, so its id goes elsewhere
        Map<String, String> env = stub(again).allocate(AllocateRequest.newBuilder().addContainerRequests(
                ContainerAllocateRequest.newBuilder().addDevicesIds(VirtualDevice.idOf(uuidOf(second, 1), 2))
                        .addDevicesIds(VirtualDevice.idOf(uuidOf(second, 1), 3))).build())
                .getContainerResponses(0).getEnvsMap();
        assertEquals(uuidOf(second, 1) + "," + uuidOf(second, 3), env.get("NVIDIA_VISIBLE_DEVICES"),
                "GPU0 full, GPU2 unhealthy: GPU1 (home) and GPU3");
    }

    @Test
    void aStateFileThatCannotBeReadIsRefusedByFileAndJsonPath() throws Exception {
        Files.writeString(state, "{\"version\": 1, \"node\": \"node-a\", \"allocations\": [{\"deviceIds\": 7}]}");
        RuntimeException e = assertThrows(StateFile.StateFileException.class, () -> start("t4x4"));
        assertTrue(e.getMessage().contains(state.toAbsolutePath() + ": $.allocations[0].deviceIds: 7 must be"), e.getMessage());

        Files.writeString(state, "{\"version\": 1, \"node\": \"node-b\", \"allocations\": []}");
        e = assertThrows(StateFile.StateFileException.class, () -> start("t4x4"));
        assertTrue(e.getMessage().contains("$.node: \"node-b\" must be this node's name \"node-a\""), e.getMessage());

        Files.writeString(state, "{\"version\": 1, ");
        e = assertThrows(StateFile.StateFileException.class, () -> start("t4x4"));
        assertTrue(e.getMessage().contains("$: cannot be read as JSON"), e.getMessage());
    }

    static void allocate(DevicePluginGrpc.DevicePluginBlockingStub stub, String... ids) {
        stub.allocate(AllocateRequest.newBuilder().addContainerRequests(
                ContainerAllocateRequest.newBuilder().addAllDevicesIds(List.of(ids))).build());
    }

    static String gpuOf(List<VirtualDevice> devices, String id) {
        return devices.stream().collect(Collectors.toMap(VirtualDevice::id, VirtualDevice::gpu)).get(id);
    }

    /**
     * A plugin killed between creating its state write's temporary file and renaming it leaves that file behind
     * (a leading dot, {@code .tmp}): the next start removes it before it writes, and leaves other files alone.
     */
    @Test
    void aStartRemovesTheTemporaryFileOfAStateWriteAKillCutShort() throws Exception {
        java.nio.file.Path left = Files.createTempFile(tmp, "." + state.getFileName(), ".tmp");
        java.nio.file.Path other = Files.createTempFile(tmp, ".other.json", ".tmp");
        start("t4x4");
        assertTrue(!Files.exists(left), "the unfinished state write's temporary file is removed");
        assertTrue(Files.exists(other), "another file's temporary file is left alone");
    }
}
