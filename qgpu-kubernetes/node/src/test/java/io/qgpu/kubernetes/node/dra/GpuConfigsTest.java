package io.qgpu.kubernetes.node.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.resource.v1.DeviceAllocationConfiguration;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAllocationConfigurationBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClaimConfiguration;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClaimConfigurationBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClassConfiguration;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClassConfigurationBuilder;
import io.qgpu.api.PriorityClass;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The GpuConfig parser the DRA driver (an allocation's {@code status.allocation.devices.config}) and the DRA
 * allocator (a claim's {@code spec.devices.config} and its DeviceClasses' {@code spec.config}, before allocation)
 * share: the same precedence, the same checks, the messages naming the field where the user wrote it. The
 * driver's {@code GpuConfigTest} checks the same through prepare.
 */
class GpuConfigsTest {

    /** Opaque parameters of a GpuConfig: apiVersion and kind, then these fields (name, value, ...). */
    static Map<String, Object> params(Object... fields) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("apiVersion", GpuConfigs.API_VERSION);
        p.put("kind", GpuConfigs.KIND);
        for (int i = 0; i + 1 < fields.length; i += 2) {
            p.put((String) fields[i], fields[i + 1]);
        }
        return p;
    }

    static DeviceAllocationConfiguration allocated(String source, List<String> requests, String driver, Object parameters) {
        return new DeviceAllocationConfigurationBuilder().withSource(source).withRequests(requests).withNewOpaque()
                .withDriver(driver).withParameters(parameters).endOpaque().build();
    }

    static DeviceClaimConfiguration claim(List<String> requests, Object parameters) {
        return new DeviceClaimConfigurationBuilder().withRequests(requests).withNewOpaque().withDriver(DraNames.DRIVER)
                .withParameters(parameters).endOpaque().build();
    }

    static DeviceClassConfiguration deviceClass(Object parameters) {
        return new DeviceClassConfigurationBuilder().withNewOpaque().withDriver(DraNames.DRIVER).withParameters(parameters)
                .endOpaque().build();
    }

    static Optional<PriorityClass> priority(GpuConfigs c, String request) {
        return c.forRequest(request).priority().map(GpuConfigs.Setting::value);
    }

    static Optional<Integer> limit(GpuConfigs c, String request) {
        return c.forRequest(request).computeLimit().map(GpuConfigs.Setting::value);
    }

    @Test
    void anAllocationsClassEntriesComeFirstAndTheClaimsWinFieldByField() {
        GpuConfigs c = GpuConfigs.of(List.of(
                allocated("FromClaim", List.of(), DraNames.DRIVER, params("computeLimit", 70)),
                allocated("FromClass", List.of(), DraNames.DRIVER, params("priority", "online", "computeLimit", 50))));
        assertEquals(Optional.of(PriorityClass.ONLINE), priority(c, "gpu"));
        assertEquals(Optional.of(70), limit(c, "gpu"));
        assertEquals("status.allocation.devices.config[0].opaque.parameters.computeLimit", c.forRequest("gpu").computeLimit().get().at());
        assertEquals("status.allocation.devices.config[1].opaque.parameters.priority", c.forRequest("gpu").priority().get().at());
        // within one source the later entry wins; an entry names its requests, a main request covers its subrequests
        GpuConfigs later = GpuConfigs.of(List.of(
                allocated("FromClaim", List.of("gpu"), DraNames.DRIVER, params("computeLimit", 40)),
                allocated("FromClaim", List.of("gpu"), DraNames.DRIVER, params("computeLimit", 80))));
        assertEquals(Optional.of(80), limit(later, "gpu/small"));
        assertEquals(Optional.empty(), limit(later, "other"));
        assertEquals(Optional.empty(), limit(later, "gpus"), "gpu covers gpu/..., not gpus");
        assertEquals(GpuConfigs.Effective.NONE, GpuConfigs.of(null).forRequest("gpu"));
    }

    @Test
    void beforeAllocationTheClassesConfigurationAppliesToTheRequestsThatUseTheClass() {
        List<GpuConfigs.ClassConfig> classes = List.of(
                new GpuConfigs.ClassConfig("gpu.qgpu.io", List.of("a", "b/small"), List.of(deviceClass(params("priority", "online", "computeLimit", 50)))),
                new GpuConfigs.ClassConfig("batch.qgpu.io", List.of("c"), List.of(deviceClass(params("priority", "offline")))));
        GpuConfigs c = GpuConfigs.beforeAllocation(classes, List.of(claim(List.of("a"), params("computeLimit", 90))));
        // a: the class's priority, the claim's limit
        assertEquals(Optional.of(PriorityClass.ONLINE), priority(c, "a"));
        assertEquals(Optional.of(90), limit(c, "a"));
        assertEquals("spec.devices.config[0].opaque.parameters.computeLimit", c.forRequest("a").computeLimit().get().at());
        assertEquals("DeviceClass gpu.qgpu.io spec.config[0].opaque.parameters.priority", c.forRequest("a").priority().get().at());
        // b/small uses the class, b/big does not; c has the other class's
        assertEquals(Optional.of(50), limit(c, "b/small"));
        assertEquals(Optional.empty(), limit(c, "b/big"));
        assertEquals(Optional.of(PriorityClass.OFFLINE), priority(c, "c"));
        assertEquals(Optional.empty(), limit(c, "c"));
        // the claim's entry without requests applies to every request, and wins over every class
        GpuConfigs all = GpuConfigs.beforeAllocation(classes, List.of(claim(null, params("priority", "offline"))));
        assertEquals(Optional.of(PriorityClass.OFFLINE), priority(all, "a"));
        assertEquals(Optional.of(50), limit(all, "a"));
        assertEquals(Optional.of(PriorityClass.OFFLINE), priority(all, "z"));
        // a class no request uses applies to none, but is checked
        GpuConfigs unused = GpuConfigs.beforeAllocation(List.of(new GpuConfigs.ClassConfig("gpu.qgpu.io", List.of(),
                List.of(deviceClass(params("priority", "online"))))), null);
        assertEquals(GpuConfigs.Effective.NONE, unused.forRequest("a"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> GpuConfigs.beforeAllocation(
                List.of(new GpuConfigs.ClassConfig("gpu.qgpu.io", List.of(), List.of(deviceClass(params("priority", "soon"))))), null));
        assertEquals("DeviceClass gpu.qgpu.io spec.config[0].opaque.parameters.priority = \"soon\": must be online or offline", e.getMessage());
    }

    @Test
    void theSameConfigurationGivesTheSameSettingsBeforeAndAfterAllocation() {
        // what the scheduler writes into the allocation: the class's entry FromClass for its requests, the claim's FromClaim
        Map<String, Object> byClass = params("priority", "online", "computeLimit", 40);
        Map<String, Object> byClaim = params("computeLimit", 60);
        GpuConfigs before = GpuConfigs.beforeAllocation(List.of(new GpuConfigs.ClassConfig("gpu.qgpu.io", List.of("gpu"),
                List.of(deviceClass(byClass)))), List.of(claim(List.of("gpu"), byClaim)));
        GpuConfigs after = GpuConfigs.of(List.of(allocated("FromClass", List.of("gpu"), DraNames.DRIVER, byClass),
                allocated("FromClaim", List.of("gpu"), DraNames.DRIVER, byClaim)));
        for (String request : List.of("gpu", "gpu/sub", "other")) {
            assertTrue(before.forRequest(request).sameValues(after.forRequest(request)), request);
        }
        assertEquals("priority online, computeLimit 60", before.forRequest("gpu").describe());
        assertEquals("priority (none), computeLimit (none)", before.forRequest("other").describe());
    }

    @Test
    void otherDriversEntriesAndEntriesWithoutOpaqueAreIgnored() {
        Map<String, Object> theirs = Map.of("apiVersion", "other.example.com/v1", "kind", "Whatever", "priority", "urgent");
        assertEquals(GpuConfigs.Effective.NONE, GpuConfigs.of(List.of(allocated("FromClaim", List.of(), "other.example.com", theirs),
                new DeviceAllocationConfigurationBuilder().withSource("FromClaim").build())).forRequest("gpu"));
        DeviceClaimConfiguration other = new DeviceClaimConfigurationBuilder().withNewOpaque().withDriver("other.example.com")
                .withParameters(theirs).endOpaque().build();
        assertEquals(GpuConfigs.Effective.NONE, GpuConfigs.beforeAllocation(List.of(), List.of(other)).forRequest("gpu"));
    }

    @Test
    void eachInvalidEntryIsRefusedNamingTheFieldAsWrittenAndTheValue() {
        String alloc = "status.allocation.devices.config[0].opaque.parameters";
        String spec = "spec.devices.config[1].opaque.parameters";
        Object[][] cases = {
                {params("gpuMemory", "8Gi"), ".gpuMemory = \"8Gi\": unknown field (GpuConfig has apiVersion, kind, priority, computeLimit)"},
                {Map.of("apiVersion", "gpu.qgpu.io/v1", "kind", "GpuConfig"), ".apiVersion = \"gpu.qgpu.io/v1\": must be gpu.qgpu.io/v1alpha1"},
                {Map.of("apiVersion", "gpu.qgpu.io/v1alpha1", "kind", "GpuSettings"), ".kind = \"GpuSettings\": must be GpuConfig"},
                {Map.of("priority", "online"), ".apiVersion is missing: must be gpu.qgpu.io/v1alpha1"},
                {Map.of("apiVersion", "gpu.qgpu.io/v1alpha1"), ".kind is missing: must be GpuConfig"},
                {params("computeLimit", 120), ".computeLimit = 120: must be a whole number from 1 to 100"},
                {params("computeLimit", 0), ".computeLimit = 0: must be a whole number from 1 to 100"},
                {params("computeLimit", 50.5), ".computeLimit = 50.5: must be a whole number from 1 to 100"},
                {params("computeLimit", "50"), ".computeLimit = \"50\": must be a whole number from 1 to 100"},
                {params("priority", "urgent"), ".priority = \"urgent\": must be online or offline"},
                {params("priority", "Online"), ".priority = \"Online\": must be online or offline"},
                {params("priority", 1), ".priority = 1: must be online or offline"},
                {List.of(1, 2), " = [1,2]: must be a GpuConfig object {apiVersion: gpu.qgpu.io/v1alpha1, kind: GpuConfig, priority, computeLimit}"}};
        for (Object[] c : cases) {
            IllegalArgumentException after = assertThrows(IllegalArgumentException.class,
                    () -> GpuConfigs.of(List.of(allocated("FromClaim", List.of(), DraNames.DRIVER, c[0]))), Arrays.toString(c));
            assertEquals(alloc + c[1], after.getMessage());
            // before allocation: the same message at the claim's own path (the entry's index as the user wrote it)
            List<DeviceClaimConfiguration> claimConfig = new ArrayList<>();
            claimConfig.add(claim(List.of("gpu"), params("priority", "online")));
            claimConfig.add(claim(List.of("elsewhere"), c[0]));
            IllegalArgumentException before = assertThrows(IllegalArgumentException.class,
                    () -> GpuConfigs.beforeAllocation(List.of(), claimConfig), Arrays.toString(c));
            assertEquals(spec + c[1], before.getMessage());
        }
        IllegalArgumentException source = assertThrows(IllegalArgumentException.class, () -> GpuConfigs.of(List.of(
                allocated("FromSomewhere", List.of(), DraNames.DRIVER, params("priority", "online")))));
        assertEquals("status.allocation.devices.config[0].source = FromSomewhere: must be FromClass or FromClaim", source.getMessage());
    }
}
