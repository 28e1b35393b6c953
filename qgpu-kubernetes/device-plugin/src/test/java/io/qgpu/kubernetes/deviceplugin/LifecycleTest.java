package io.qgpu.kubernetes.deviceplugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.kubernetes.deviceplugin.v1beta1.Device;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DevicePluginOptions;
import io.qgpu.kubernetes.deviceplugin.v1beta1.Empty;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ListAndWatchResponse;
import io.qgpu.kubernetes.deviceplugin.v1beta1.RegisterRequest;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** Registration, the device list, health from Xid events and back, and a kubelet restart. */
class LifecycleTest extends PluginTestBase {

    @Test
    void registersAndAdvertisesVirtualDevicesWithHealthAndNuma() throws Exception {
        DevicePlugin plugin = start("dgx-h100");
        RegisterRequest r = kubelet.awaitRegistration();
        assertEquals("v1beta1", r.getVersion());
        assertEquals("qgpu.sock", r.getEndpoint());
        assertEquals("qgpu.io/gpu", r.getResourceName());
        assertTrue(r.getOptions().getGetPreferredAllocationAvailable());
        assertFalse(r.getOptions().getPreStartRequired());
        // start() registers before it returns when the kubelet is up
        assertEquals(1, plugin.server().registrations());

        DevicePluginOptions o = stub(r).getDevicePluginOptions(Empty.getDefaultInstance());
        assertEquals(r.getOptions(), o);

        ListAndWatchResponse first = new DeviceStream(dial(r)).first();
        // 8 x H100 80 GiB under qGPU's rules: min(16, 80 GiB / 4 GiB) = 16 ids per GPU
        assertEquals(8 * 16, first.getDevicesCount());
        Map<String, List<Device>> byGpu = byGpu(first);
        assertEquals(8, byGpu.size());
        List<String> gpus = List.copyOf(byGpu.keySet());
        for (Device d : first.getDevicesList()) {
            assertEquals("Healthy", d.getHealth(), d.getID());
            assertTrue(d.getID().length() <= 63, d.getID());
        }
        // the fake dgx-h100: GPU0-3 on NUMA node 0, GPU4-7 on node 1
        for (int i = 0; i < 8; i++) {
            for (Device d : byGpu.get(uuidOf(plugin, i))) {
                assertEquals(1, d.getTopology().getNodesCount(), d.getID());
                assertEquals(i < 4 ? 0 : 1, d.getTopology().getNodes(0).getID(), d.getID());
            }
        }
        assertEquals(8, gpus.size());
    }

    @Test
    void xidTurnsOneGpusDevicesUnhealthyAndTheyComeBackAfterTheQuietPeriod() throws Exception {
        DevicePlugin plugin = start("t4x4");
        RegisterRequest r = kubelet.awaitRegistration();
        DeviceStream stream = new DeviceStream(dial(r));
        assertEquals(16, stream.first().getDevicesCount());
        String gpu2 = uuidOf(plugin, 2);

        assertEquals(1, FAKE.fake_nvml_inject_xid(2, 48)); // double-bit ECC error
        ListAndWatchResponse bad = stream.await("GPU 2 unhealthy", l -> unhealthy(l).size() == 4);
        assertEquals(List.of(gpu2), List.copyOf(byGpu(bad).keySet().stream()
                .filter(g -> byGpu(bad).get(g).stream().allMatch(d -> d.getHealth().equals("Unhealthy"))).toList()));
        assertTrue(unhealthy(bad).stream().allMatch(id -> id.startsWith(gpu2 + "::")), unhealthy(bad).toString());

        // not yet: one nanosecond short of the quiet period
        clock.addAndGet(RECOVER_AFTER.toNanos() - 1);
        assertEquals(List.of(), plugin.health().recoverDue());
        clock.addAndGet(1);
        assertEquals(List.of(gpu2), plugin.health().recoverDue());
        stream.await("all healthy again", l -> unhealthy(l).isEmpty());
    }

    @Test
    void registersAgainWhenTheKubeletRestartsAndServesOnTheNewSocket() throws Exception {
        start("t4x4");
        RegisterRequest first = kubelet.awaitRegistration();
        DeviceStream before = new DeviceStream(dial(first));
        ListAndWatchResponse list = before.first();

        kubelet.restart();
        RegisterRequest again = kubelet.awaitRegistration();
        assertEquals(first, again);
        assertTrue(Files.exists(dir.resolve("qgpu.sock")));
        assertEquals(list, new DeviceStream(dial(again)).first());
    }

    @Test
    void waitsForAKubeletThatIsNotUpYet() throws Exception {
        kubelet.close();
        Files.deleteIfExists(dir.resolve("kubelet.sock"));
        kubelet = new FakeKubelet(dir);
        DevicePlugin plugin = start("t4x4");
        assertEquals(0, plugin.server().registrations());
        kubelet.start();
        assertEquals("qgpu.io/gpu", kubelet.awaitRegistration().getResourceName());
    }

    static String uuidOf(DevicePlugin plugin, int index) {
        return plugin.pool().devices().stream().map(VirtualDevice::gpu).distinct()
                .filter(g -> plugin.pool().gpu(g).orElseThrow().index() == index).findFirst().orElseThrow();
    }

    static Map<String, List<Device>> byGpu(ListAndWatchResponse l) {
        return l.getDevicesList().stream().collect(Collectors.groupingBy(d -> VirtualDevice.homeOf(d.getID()),
                TreeMap::new, Collectors.toList()));
    }

    static List<String> unhealthy(ListAndWatchResponse l) {
        return l.getDevicesList().stream().filter(d -> d.getHealth().equals("Unhealthy")).map(Device::getID).toList();
    }
}
