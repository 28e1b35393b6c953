package io.qgpu.kubernetes.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.CapacityRequestPolicy;
import io.fabric8.kubernetes.api.model.resource.v1.Device;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceCapacity;
import io.qgpu.api.GranularityRules;
import io.qgpu.kubernetes.node.dra.PublishedCapacity;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Issue 38 item 5, without a driver: the capacities and request policies a GPU is published with under each
 * preset, that the API server accepts them ({@link SchedulerModel#refusedByApiServer}), that the scheduler's
 * rounding lands on the rules' grid, and the GPUs a preset's memory unit leaves no room to share.
 */
class PublishedCapacityTest {
    static final long MIB = 1L << 20;
    static final long GIB = 1L << 30;
    /** What NVML reports for an H100 80GB: 81,559 MiB. */
    static final long H100 = 81_559 * MIB;

    static Device device(PublishedCapacity c) {
        return new DeviceBuilder().withName("gpu-0").withCapacity(c.toSlice()).withAllowMultipleAllocations(true).build();
    }

    static long q(Quantity v) {
        return v.getNumericalAmount().longValueExact();
    }

    /** Checks a capacity's value and validRange policy (default = value = max). */
    static void range(DeviceCapacity c, long value, long min, long step) {
        assertEquals(value, q(c.getValue()));
        CapacityRequestPolicy p = c.getRequestPolicy();
        assertEquals(value, q(p.getDefault()), "the default is the whole capacity");
        assertEquals(min, q(p.getValidRange().getMin()));
        assertEquals(value, q(p.getValidRange().getMax()));
        assertEquals(step, q(p.getValidRange().getStep()));
        assertTrue(p.getValidValues() == null || p.getValidValues().isEmpty());
    }

    /** Checks a capacity whose every allocation consumes exactly {@code only}. */
    static void fixed(DeviceCapacity c, long value, long only) {
        assertEquals(value, q(c.getValue()));
        assertEquals(only, q(c.getRequestPolicy().getDefault()));
        assertEquals(List.of(only), c.getRequestPolicy().getValidValues().stream().map(PublishedCapacityTest::q).toList());
        assertNull(c.getRequestPolicy().getValidRange());
    }

    @Test
    void anH100UnderEachPresetIsRoundedDownToTheMemoryUnit() {
        PublishedCapacity qgpu = PublishedCapacity.of(GranularityRules.ofDefaults(), H100, 16);
        Map<String, DeviceCapacity> c = qgpu.toSlice();
        assertEquals(List.of("memory", "cores", "tenants"), List.copyOf(c.keySet()));
        range(c.get("memory"), 79 * GIB, GIB, GIB);
        range(c.get("cores"), 100, 5, 5);
        fixed(c.get("tenants"), 16, 1);

        Map<String, DeviceCapacity> hami = PublishedCapacity.of(GranularityRules.hami(), H100, 10).toSlice();
        range(hami.get("memory"), H100, MIB, MIB);
        range(hami.get("cores"), 100, 1, 1);
        fixed(hami.get("tenants"), 10, 1);

        Map<String, DeviceCapacity> gm = PublishedCapacity.of(GranularityRules.gpuManager(), H100, 100).toSlice();
        range(gm.get("memory"), 81_408 * MIB, 256 * MIB, 256 * MIB);
        range(gm.get("cores"), 100, 1, 1);
        fixed(gm.get("tenants"), 100, 1);

        for (GranularityRules r : List.of(GranularityRules.ofDefaults(), GranularityRules.hami(), GranularityRules.gpuManager())) {
            PublishedCapacity p = PublishedCapacity.of(r, H100, r.maxTenantsPerGpu());
            assertTrue(p.shareable(), r.name());
            assertEquals(List.of(), SchedulerModel.refusedByApiServer(device(p)), r.name());
        }
    }

    @Test
    void theSchedulersRoundingLandsOnTheGridAndNoCapacityMeansTheWholeGpu() {
        GranularityRules rules = GranularityRules.ofDefaults();
        PublishedCapacity p = PublishedCapacity.of(rules, H100, 16);
        Device d = device(p);
        Map<String, Quantity> whole = new SchedulerModel().allocate(d, Map.of()).orElseThrow();
        assertEquals(Map.of("memory", new Quantity(Long.toString(79 * GIB)), "cores", new Quantity("100"), "tenants", new Quantity("1")), whole);
        Capacities.Consumed all = Capacities.of("c", whole).orElseThrow();
        assertTrue(p.isWhole(all.memoryBytes(), all.cores()), "the defaults are the whole GPU");
        assertTrue(p.isWhole(H100, 100), "NVML's memory (an allocation against an unrounded slice) too");

        // 10000Mi and 33%: rounded up to 10 GiB and 35%
        Map<String, Quantity> share = new SchedulerModel().allocate(d, Map.of("memory", new Quantity("10000Mi"), "cores", new Quantity("33")))
                .orElseThrow();
        Capacities.Consumed c = Capacities.of("c", share).orElseThrow();
        assertEquals(new Capacities.Consumed(10 * GIB, 35), c);
        assertFalse(p.isWhole(c.memoryBytes(), c.cores()));
        assertNull(p.offGrid(c.memoryBytes(), c.cores(), rules));
        // a request below the smallest share takes the smallest share; one above the capacity gets no device
        assertEquals(new Capacities.Consumed(GIB, 5), Capacities.of("c", new SchedulerModel().allocate(d,
                Map.of("memory", new Quantity("1Mi"), "cores", new Quantity("1"))).orElseThrow()).orElseThrow());
        assertTrue(new SchedulerModel().allocate(d, Map.of("memory", new Quantity("80Gi"))).isEmpty());
        // a request for two tenants of the GPU cannot be met
        assertTrue(new SchedulerModel().allocate(d, Map.of("tenants", new Quantity("2"))).isEmpty());
        // what is off the published grid says why
        assertTrue(p.offGrid(GIB, 0, rules).contains("cores 0 is below the smallest share's 5"));
        assertTrue(p.offGrid(80 * GIB, 50, rules).contains("memory 85899345920 is more than the published capacity 84825604096"));
    }

    @Test
    void theTenantsCapacityBoundsTheShares() {
        Device t4 = device(PublishedCapacity.of(GranularityRules.ofDefaults(), 16 * GIB, 4));
        SchedulerModel scheduler = new SchedulerModel();
        for (int i = 0; i < 4; i++) {
            assertTrue(scheduler.allocate(t4, Map.of("memory", new Quantity("1Gi"), "cores", new Quantity("5"))).isPresent(), "share " + i);
        }
        assertTrue(scheduler.allocate(t4, Map.of("memory", new Quantity("1Gi"), "cores", new Quantity("5"))).isEmpty(),
                "a fifth share exceeds the 4 tenants qgpu allows a 16 GiB GPU, though memory and cores are left");
    }

    @Test
    void aGpuTooSmallToShareUnderTheRulesIsPublishedWholeOnly() {
        // 1.5 GiB under qgpu: rounded down to 1 GiB, no room for min + step = 2 GiB
        long small = 1536 * MIB;
        PublishedCapacity p = PublishedCapacity.of(GranularityRules.ofDefaults(), small, 16);
        assertFalse(p.shareable());
        Map<String, DeviceCapacity> c = p.toSlice();
        fixed(c.get("memory"), small, small);
        fixed(c.get("cores"), 100, 100);
        fixed(c.get("tenants"), 1, 1);
        assertEquals(List.of(), SchedulerModel.refusedByApiServer(device(p)));
        // whatever a request asks for, it takes the whole GPU
        Map<String, Quantity> got = new SchedulerModel().allocate(device(p), Map.of("memory", new Quantity("1Gi"), "cores", new Quantity("10")))
                .orElseThrow();
        Capacities.Consumed gotWhole = Capacities.of("c", got).orElseThrow();
        assertTrue(p.isWhole(gotWhole.memoryBytes(), gotWhole.cores()));
        assertTrue(p.offGrid(GIB, 10, GranularityRules.ofDefaults()).contains("published whole only"));
        // the edges: 2 GiB is shareable under qgpu, 400 MiB is not under gpu-manager (256 MiB units), 2 MiB is under hami
        assertTrue(PublishedCapacity.of(GranularityRules.ofDefaults(), 2 * GIB, 1).shareable());
        assertFalse(PublishedCapacity.of(GranularityRules.ofDefaults(), 2 * GIB - 1, 1).shareable());
        assertFalse(PublishedCapacity.of(GranularityRules.gpuManager(), 400 * MIB, 100).shareable());
        assertTrue(PublishedCapacity.of(GranularityRules.hami(), 2 * MIB, 10).shareable());
        // a compute step above 50 leaves cores a single valid value: whole only as well
        GranularityRules coarse = GranularityRules.custom().computeUnit(100).build();
        assertFalse(PublishedCapacity.of(coarse, 80 * GIB, 16).shareable());
        GranularityRules halves = GranularityRules.custom().computeUnit(50).build();
        PublishedCapacity h = PublishedCapacity.of(halves, 80 * GIB, 16);
        range(h.toSlice().get("cores"), 100, 50, 50);
        assertEquals(List.of(), SchedulerModel.refusedByApiServer(device(h)));
    }

    @Test
    void aMinimumOffTheMemoryUnitIsRoundedUpToIt() {
        GranularityRules r = GranularityRules.custom().memoryUnitBytes(GIB).minMemoryBytes(1536 * MIB).build();
        PublishedCapacity p = PublishedCapacity.of(r, 80 * GIB, 16);
        range(p.toSlice().get("memory"), 80 * GIB, 2 * GIB, GIB);
        assertEquals(List.of(), SchedulerModel.refusedByApiServer(device(p)));
    }
}
