package io.qgpu.kubernetes.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.Device;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAttribute;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSliceBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceCapacity;
import io.qgpu.api.GranularityRules;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Item 3: the node's ResourceSlice on the API server; issue 38 item 5: its capacities' request policies. */
class SliceTest extends DriverTestBase {

    ResourceSlice only() {
        List<ResourceSlice> mine = slices().stream().filter(s -> "node-a".equals(s.getSpec().getNodeName())).toList();
        assertEquals(1, mine.size(), "exactly one slice for node-a: " + mine);
        return mine.get(0);
    }

    List<String> names(ResourceSlice s) {
        return s.getSpec().getDevices().stream().map(Device::getName).toList();
    }

    /** Waits for the published slice to satisfy a condition (health changes publish from NVML's event thread). */
    ResourceSlice await(String what, Predicate<ResourceSlice> p) {
        long deadline = System.nanoTime() + Kubelet.DEADLINE_SECONDS * 1_000_000_000L;
        while (System.nanoTime() < deadline) {
            ResourceSlice s = only();
            if (p.test(s)) {
                return s;
            }
            Thread.onSpinWait();
        }
        throw new AssertionError("no slice where " + what + " within " + Kubelet.DEADLINE_SECONDS + " s: " + only());
    }

    @Test
    void oneDevicePerGpuWithAttributesCapacityAndMultipleAllocations() throws Exception {
        start("dgx-h100");
        ResourceSlice s = only();
        assertEquals("node-a-gpu.qgpu.io", s.getMetadata().getName());
        assertEquals("gpu.qgpu.io", s.getSpec().getDriver());
        assertEquals("node-a", s.getSpec().getNodeName());
        assertEquals("node-a", s.getSpec().getPool().getName());
        assertEquals(1L, s.getSpec().getPool().getResourceSliceCount());
        assertEquals(List.of("gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5", "gpu-6", "gpu-7"), names(s));
        Device d = s.getSpec().getDevices().get(5);
        assertTrue(d.getAttributes().get("uuid").getString().startsWith("GPU-"), d.toString());
        assertEquals("NVIDIA H100 80GB HBM3", d.getAttributes().get("productName").getString());
        assertEquals(5L, d.getAttributes().get("index").getInt());
        assertEquals("9.0.0", d.getAttributes().get("computeCapability").getVersion());
        assertEquals(1L, d.getAttributes().get("numaNode").getInt());
        assertEquals(Boolean.FALSE, d.getAttributes().get("migEnabled").getBool());
        assertEquals(new Quantity("85899345920"), d.getCapacity().get("memory").getValue());
        assertEquals(Quantity.getAmountInBytes(new Quantity("80Gi")), Quantity.getAmountInBytes(d.getCapacity().get("memory").getValue()));
        assertEquals(new Quantity("100"), d.getCapacity().get("cores").getValue());
        assertEquals(Boolean.TRUE, d.getAllowMultipleAllocations());
    }

    /**
     * Each preset on the fake machines (whole GiB of memory, so rounding down to any preset's unit keeps it): memory
     * with {@code validRange} from the smallest share to the whole in the rules' memory unit, default the whole;
     * cores 100 in the rules' compute step, default 100; tenants the rules' limit, each allocation consuming 1; all
     * of it acceptable to the API server.
     */
    @ParameterizedTest
    @CsvSource({
            "qgpu, dgx-h100, 80, 1073741824, 5, 16",
            "qgpu, t4x4, 16, 1073741824, 5, 4",
            "qgpu, x86-numa, 48, 1073741824, 5, 12",
            "hami, dgx-h100, 80, 1048576, 1, 10",
            "hami, t4x4, 16, 1048576, 1, 10",
            "gpu-manager, dgx-h100, 80, 268435456, 1, 100",
            "gpu-manager, t4x4, 16, 268435456, 1, 100"})
    void eachPresetPublishesItsGridAsRequestPolicies(String preset, String machine, long gib, long memoryUnit, int computeStep,
                                                     int tenants) throws Exception {
        DraDriver d = DraDriver.start(config(machine).withRules(GranularityRules.preset(preset)), client);
        open.add(d);
        List<Device> devices = only().getSpec().getDevices();
        assertTrue(devices.size() >= 4, devices.toString());
        for (Device dev : devices) {
            Map<String, DeviceCapacity> c = dev.getCapacity();
            assertEquals(List.of("memory", "cores", "tenants"), List.copyOf(c.keySet()));
            PublishedCapacityTest.range(c.get("memory"), gib << 30, memoryUnit, memoryUnit);
            PublishedCapacityTest.range(c.get("cores"), 100, computeStep, computeStep);
            PublishedCapacityTest.fixed(c.get("tenants"), tenants, 1);
            assertEquals(Boolean.TRUE, dev.getAllowMultipleAllocations());
            assertEquals(List.of(), SchedulerModel.refusedByApiServer(dev), dev.getName());
        }
    }

    /**
     * The topology attributes on each fake machine: {@code nvlink} as {@link io.qgpu.kubernetes.node.dra.NvLinkAttribute}
     * writes it (left out without NVLink), {@code resource.kubernetes.io/pcieRoot} naming each group of GPUs under one
     * host bridge after its lowest PCI address (the machines' buses are in fake_nvml.c).
     */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "dgx-h100     | *:18s,*:18s,*:18s,*:18s,*:18s,*:18s,*:18s,*:18s | 18,2a,3a,5d,9a,ab,ba,db",
            "t4x4         | -,-,-,-                                         | 3b,3b,86,86",
            "a100-bridged | 1:12,0:12,3:12,2:12                             | 17,17,b1,b1",
            "x86-numa     | -,-,-,-                                         | 1b,1b,9b,c3",
            "h100-vm      | -,-,-,-                                         | 05,06,07,08"})
    void eachGpuCarriesItsNvLinksAndItsPcieRoot(String machine, String nvlinks, String roots) throws Exception {
        start(machine);
        List<Device> devices = only().getSpec().getDevices();
        List<String> wantLinks = List.of(nvlinks.split(","));
        List<String> wantRoots = List.of(roots.split(","));
        assertEquals(wantLinks.size(), devices.size());
        for (int i = 0; i < devices.size(); i++) {
            Map<String, DeviceAttribute> a = devices.get(i).getAttributes();
            String link = a.containsKey("nvlink") ? a.get("nvlink").getString() : "-";
            assertEquals(wantLinks.get(i), link, devices.get(i).getName());
            assertEquals("pci0000:" + wantRoots.get(i), a.get("resource.kubernetes.io/pcieRoot").getString(), devices.get(i).getName());
        }
    }

    @Test
    void aRestartRepublishesWithoutDuplicatesAndLeavesOtherNodesAlone() throws Exception {
        // a slice of this driver and node under another name (an earlier run's), and another node's slice
        client.resources(ResourceSlice.class).resource(new ResourceSliceBuilder().withNewMetadata().withName("node-a-gpu.qgpu.io-x7k2")
                .endMetadata().withNewSpec().withDriver("gpu.qgpu.io").withNodeName("node-a").withNewPool().withName("node-a")
                .withGeneration(4L).withResourceSliceCount(1L).endPool().endSpec().build()).create();
        client.resources(ResourceSlice.class).resource(new ResourceSliceBuilder().withNewMetadata().withName("node-b-gpu.qgpu.io")
                .endMetadata().withNewSpec().withDriver("gpu.qgpu.io").withNodeName("node-b").withNewPool().withName("node-b")
                .withGeneration(1L).withResourceSliceCount(1L).endPool().endSpec().build()).create();
        DraDriver first = start("t4x4");
        ResourceSlice s1 = only();
        assertEquals("node-a-gpu.qgpu.io", s1.getMetadata().getName());
        assertTrue(s1.getSpec().getPool().getGeneration() > 4, "the pool's generation grows past the old slice's");
        first.close();
        // a restart that finds the slice right leaves it as it is (same generation: nothing changed for the scheduler)
        DraDriver second = start("t4x4");
        assertEquals(s1, only());
        second.close();
        // one edited behind the driver's back (a device removed) is put right, with a higher generation
        ResourceSlice edited = only();
        edited.getSpec().getDevices().remove(3);
        client.resources(ResourceSlice.class).resource(edited).update();
        start("t4x4");
        ResourceSlice s2 = only();
        assertEquals(4, s2.getSpec().getDevices().size());
        assertTrue(s2.getSpec().getPool().getGeneration() > s1.getSpec().getPool().getGeneration());
        assertEquals(List.of("node-a-gpu.qgpu.io", "node-b-gpu.qgpu.io"),
                slices().stream().map(s -> s.getMetadata().getName()).sorted().toList());
    }

    @Test
    void anUnhealthyGpuIsTakenOutAndPutBackAfterTheQuietPeriod() throws Exception {
        DraDriver driver = start("t4x4");
        String gpu2 = only().getSpec().getDevices().get(2).getAttributes().get("uuid").getString();
        long before = only().getSpec().getPool().getGeneration();
        assertEquals(1, FAKE.fake_nvml_inject_xid(2, 48)); // double-bit ECC error
        ResourceSlice out = await("gpu-2 is gone", s -> !names(s).contains("gpu-2"));
        assertEquals(List.of("gpu-0", "gpu-1", "gpu-3"), names(out));
        assertTrue(out.getSpec().getPool().getGeneration() > before);
        // and it takes no claim meanwhile
        String uid = Claims.allocated(client, "on-bad", Claims.share("gpu-2", "4Gi", "20", null));
        String e = Kubelet.prepare(kubelet.v1(register()), Kubelet.claim(Claims.NS, "on-bad", uid)).getClaimsOrThrow(uid).getError();
        assertTrue(e.contains("does not fit"), e);

        clock.addAndGet(RECOVER_AFTER.toNanos() - 1);
        assertEquals(List.of(), driver.health().recoverDue());
        clock.addAndGet(1);
        assertEquals(List.of(gpu2), driver.health().recoverDue());
        ResourceSlice back = await("gpu-2 is back", s -> names(s).contains("gpu-2"));
        assertEquals(List.of("gpu-0", "gpu-1", "gpu-2", "gpu-3"), names(back));
        assertEquals("", Kubelet.prepare(kubelet.v1(register()), Kubelet.claim(Claims.NS, "on-bad", uid)).getClaimsOrThrow(uid).getError());
    }
}
