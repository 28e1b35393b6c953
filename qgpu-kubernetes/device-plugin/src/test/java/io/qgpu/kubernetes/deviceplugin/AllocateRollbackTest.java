package io.qgpu.kubernetes.deviceplugin;

import static io.qgpu.kubernetes.deviceplugin.LifecycleTest.uuidOf;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.qgpu.api.Placement;
import io.qgpu.kubernetes.deviceplugin.v1beta1.AllocateRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ContainerAllocateRequest;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DevicePluginGrpc;
import io.qgpu.kubernetes.node.mps.FakeMpsControlScript;
import io.qgpu.kubernetes.node.mps.MpsLayout;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 37: an {@code Allocate} whose answer cannot be built (MPS refuses a shared slice on two GPUs) takes back
 * everything it reserved: the ledger, the allocations and the state file are as before the call, and a retry
 * with the same first id is not refused as a duplicate tenant.
 *
 * <p>Fails on the code before the transaction: the refused call's placement stayed in the ledger
 * ({@code devices/<first id>} held there with no allocation), and the retry was refused.
 */
class AllocateRollbackTest extends PluginTestBase {
    FakeMpsControlScript fake;
    MpsLayout layout;
    final List<String> gpus = new ArrayList<>();

    @AfterEach
    void killLeftoverDaemons() throws Exception {
        if (layout != null) {
            FakeMpsControlScript.killAll(layout);   // the agents leave their daemons running when they stop
        }
    }

    SharingOptions mps() throws Exception {
        fake = FakeMpsControlScript.write(Files.createDirectories(tmp.resolve("bin")));
        layout = new MpsLayout(tmp.resolve("mps"));
        return SharingOptions.parse(Map.of("--sharing", "mps", "--mps-root", layout.root().toString(), "--mps-control",
                fake.binary.toString(), "--mps-daemons", "agent")).withMpsTickEvery(Duration.ZERO);
    }

    static List<String> tenants(DevicePlugin plugin) {
        return held(plugin).stream().map(Placement::tenantId).toList();
    }

    static List<Placement> held(DevicePlugin plugin) {
        return plugin.pool().ledger().placements().stream().sorted(java.util.Comparator.comparing(Placement::tenantId)).toList();
    }

    static byte[] bytes(Path p) throws Exception {
        return Files.exists(p) ? Files.readAllBytes(p) : new byte[0];
    }

    @Test
    void anAllocateMpsRefusesLeavesNoReservationAndARetrySucceeds() throws Exception {
        DevicePlugin plugin = start(config("t4x4", PodDecisions.none()).withSharing(mps()));
        for (int g = 0; g < 4; g++) {
            gpus.add(uuidOf(plugin, g));
        }
        DevicePluginGrpc.DevicePluginBlockingStub stub = stub(kubelet.awaitRegistration());
        String first = VirtualDevice.idOf(uuidOf(plugin, 0), 0);
        String other = VirtualDevice.idOf(uuidOf(plugin, 1), 0);
        RestartTest.allocate(stub, VirtualDevice.idOf(uuidOf(plugin, 2), 0));   // something held before
        List<Allocation> allocationsBefore = plugin.pool().allocations();
        List<Placement> ledgerBefore = held(plugin);
        byte[] stateBefore = bytes(state);

        AllocateTest.assertStatus(Status.Code.FAILED_PRECONDITION, "--sharing mps refuses the allocation of",
                () -> RestartTest.allocate(stub, first, other));

        assertEquals(ledgerBefore.stream().map(Placement::tenantId).toList(), tenants(plugin), "the ledger holds nothing of the refused call");
        assertEquals(ledgerBefore, held(plugin));
        assertEquals(allocationsBefore, plugin.pool().allocations());
        assertArrayEquals(stateBefore, bytes(state), "the state file is as before");

        // the kubelet tries again with one id: the same tenant devices/<first id> is free
        Map<String, String> env = stub.allocate(AllocateRequest.newBuilder().addContainerRequests(
                ContainerAllocateRequest.newBuilder().addDevicesIds(first)).build()).getContainerResponses(0).getEnvsMap();
        assertEquals(uuidOf(plugin, 0), env.get("NVIDIA_VISIBLE_DEVICES"));
        assertEquals("mps", env.get("QGPU_SHARING"));
        assertEquals(2, plugin.pool().allocations().size());
        assertEquals(2, held(plugin).size());
        assertTrue(held(plugin).stream().anyMatch(p -> p.tenantId().equals("devices/" + first)));
    }
}
