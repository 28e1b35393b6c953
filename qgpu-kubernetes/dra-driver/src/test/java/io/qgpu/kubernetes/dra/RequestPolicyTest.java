package io.qgpu.kubernetes.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.Device;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.qgpu.api.GranularityRules;
import io.qgpu.kubernetes.dra.v1.DRAPluginGrpc;
import java.io.IOException;
import java.nio.file.Files;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Issue 38 item 5 at prepare: what the scheduler allocates against the published request policies
 * ({@link SchedulerModel}) prepares, as the whole GPU when the request names no capacity; what is off the grid is
 * refused for that claim, naming the value.
 */
class RequestPolicyTest extends DriverTestBase {
    static final long GIB = 1L << 30;
    DraDriver driver;
    DRAPluginGrpc.DRAPluginBlockingStub stub;
    final SchedulerModel scheduler = new SchedulerModel();

    void up(GranularityRules rules) throws IOException {
        driver = DraDriver.start(config("dgx-h100").withRules(rules), client);
        open.add(driver);
        stub = kubelet.v1(register());
    }

    Device device(int index) {
        return slices().get(0).getSpec().getDevices().get(index);
    }

    /** Allocates a claim of one share of gpu-index as the scheduler does; its uid. */
    String allocate(String name, int index, Map<String, Quantity> requests) {
        Map<String, Quantity> consumed = scheduler.allocate(device(index), requests).orElseThrow();
        return Claims.allocated(client, name, Claims.consumed("gpu", "gpu-" + index, consumed));
    }

    String prepare(String name, String uid) {
        return Kubelet.prepare(stub, Kubelet.claim(Claims.NS, name, uid)).getClaimsOrThrow(uid).getError();
    }

    Map<String, String> env(String uid) throws IOException {
        JsonNode s = new ObjectMapper().readTree(cdi.resolve("qgpu.io-gpu_" + uid + ".json").toFile());
        Map<String, String> env = new LinkedHashMap<>();
        for (JsonNode e : s.at("/containerEdits/env")) {
            String[] kv = e.asText().split("=", 2);
            env.put(kv[0], kv[1]);
        }
        return env;
    }

    static Map<String, Quantity> request(String memory, String cores) {
        return Map.of("memory", new Quantity(memory), "cores", new Quantity(cores));
    }

    @ParameterizedTest
    @CsvSource({"qgpu", "hami", "gpu-manager"})
    void aRequestWithoutCapacityConsumesTheDefaultsAndPreparesAsTheWholeGpu(String preset) throws Exception {
        up(GranularityRules.preset(preset));
        String uid = allocate("whole", 2, Map.of());
        assertEquals("", prepare("whole", uid));
        Map<String, String> env = env(uid);
        assertEquals(Long.toString(80 * GIB), env.get("QGPU_MEMORY_LIMIT_BYTES"));
        assertEquals("100", env.get("QGPU_COMPUTE_REQUEST"));
        assertEquals("100", env.get("QGPU_COMPUTE_LIMIT"));
        assertEquals(1, driver.claims().get(uid).orElseThrow().placement().claim().gpuCount());
        assertTrue(driver.claims().get(uid).orElseThrow().placement().claim().exclusive());
        // the scheduler has nothing left of gpu-2 for anyone else, and neither has the ledger
        assertTrue(scheduler.allocate(device(2), request("1Gi", "5")).isEmpty());
        String forced = Claims.allocated(client, "forced", Claims.share("gpu-2", "1Gi", "5", null));
        assertTrue(prepare("forced", forced).contains("does not fit"));
    }

    /** A request off every preset's grid (10000 MiB, 33%), rounded up by the scheduler to the preset's grid, prepares. */
    @ParameterizedTest
    @CsvSource({"qgpu, 10737418240, 35", "hami, 10485760000, 33", "gpu-manager, 10737418240, 33"})
    void aRequestRoundedAsTheSchedulerRoundsItPrepares(String preset, long bytes, int cores) throws Exception {
        up(GranularityRules.preset(preset));
        String uid = allocate("rounded", 0, request("10000Mi", "33"));
        assertEquals("", prepare("rounded", uid));
        Map<String, String> env = env(uid);
        assertEquals(Long.toString(bytes), env.get("QGPU_MEMORY_LIMIT_BYTES"));
        assertEquals(Integer.toString(cores), env.get("QGPU_COMPUTE_REQUEST"));
        assertEquals(Integer.toString(cores), env.get("QGPU_COMPUTE_LIMIT"));
        // and the smallest request takes the smallest share
        String tiny = allocate("tiny", 1, request("1", "1"));
        assertEquals("", prepare("tiny", tiny));
        assertEquals(Long.toString(GranularityRules.preset(preset).minMemoryBytes()), env(tiny).get("QGPU_MEMORY_LIMIT_BYTES"));
    }

    @Test
    void aResultConsumingTheRoundedDownCapacityIsTheWholeGpu() throws Exception {
        // 3 GiB units: the 80 GiB GPUs are published with 78 GiB, and a request without capacity consumes those
        up(GranularityRules.custom().memoryUnitBytes(3 * GIB).minMemoryBytes(3 * GIB).build());
        PublishedCapacityTest.range(device(5).getCapacity().get("memory"), 78 * GIB, 3 * GIB, 3 * GIB);
        String uid = allocate("whole", 5, Map.of());
        ResourceClaim rc = client.resources(ResourceClaim.class).inNamespace(Claims.NS).withName("whole").get();
        assertEquals(new Quantity(Long.toString(78 * GIB)),
                rc.getStatus().getAllocation().getDevices().getResults().get(0).getConsumedCapacity().get("memory"));
        assertEquals("", prepare("whole", uid));
        assertEquals(Long.toString(80 * GIB), env(uid).get("QGPU_MEMORY_LIMIT_BYTES"), "the whole GPU's memory, not the rounded capacity");
        assertEquals("100", env(uid).get("QGPU_COMPUTE_LIMIT"));
        assertTrue(driver.claims().get(uid).orElseThrow().placement().claim().exclusive());
        // a rounded share beside it on another GPU: 10 GiB asked, 12 GiB consumed
        String share = allocate("share", 6, request("10Gi", "30"));
        assertEquals("", prepare("share", share));
        assertEquals(Long.toString(12 * GIB), env(share).get("QGPU_MEMORY_LIMIT_BYTES"));
    }

    @Test
    void aResultOffTheGridIsRefusedNamingTheValue() throws Exception {
        up(GranularityRules.ofDefaults());
        // 10000Mi as requested, not rounded: not whole GiB
        String mem = Claims.allocated(client, "mem", Claims.consumed("gpu", "gpu-0", Map.of("memory", new Quantity("10000Mi"),
                "cores", new Quantity("35"), "tenants", new Quantity("1"))));
        String e = prepare("mem", mem);
        assertTrue(e.contains("memoryPerGpuBytes = 10485760000") && e.contains("multiple of 1073741824"), e);
        String cores = Claims.allocated(client, "cores", Claims.consumed("gpu", "gpu-0", Map.of("memory", new Quantity("10Gi"),
                "cores", new Quantity("33"), "tenants", new Quantity("1"))));
        e = prepare("cores", cores);
        assertTrue(e.contains("computeRequest = 33") && e.contains("multiple of 5"), e);
        String none = Claims.allocated(client, "none", Claims.consumed("gpu", "gpu-0", Map.of("memory", new Quantity("10Gi"),
                "cores", new Quantity("0"), "tenants", new Quantity("1"))));
        e = prepare("none", none);
        assertTrue(e.contains("consumedCapacity = ") && e.contains("cores 0 is below the smallest share's 5 under the qgpu rules"), e);
        String two = Claims.allocated(client, "two", Claims.consumed("gpu", "gpu-0", Map.of("memory", new Quantity("10Gi"),
                "cores", new Quantity("35"), "tenants", new Quantity("2"))));
        e = prepare("two", two);
        assertTrue(e.contains("consumedCapacity[tenants] = 2: an allocation is exactly one tenant of its GPU (must be 1)"), e);
        String more = Claims.allocated(client, "more", Claims.consumed("gpu", "gpu-0", Map.of("memory", new Quantity("81Gi"),
                "cores", new Quantity("35"))));
        e = prepare("more", more);
        assertTrue(e.contains("memory 86973087744 is more than the published capacity 85899345920"), e);
        for (String uid : new String[] {mem, cores, none, two, more}) {
            assertFalse(Files.exists(cdi.resolve("qgpu.io-gpu_" + uid + ".json")), uid);
        }
        // none of them took anything: the whole GPU is still free, and a share with its tenant prepares
        String ok = Claims.allocated(client, "ok", Claims.consumed("gpu", "gpu-0", Map.of("memory", new Quantity("10Gi"),
                "cores", new Quantity("35"), "tenants", new Quantity("1"))));
        assertEquals("", prepare("ok", ok));
    }

    @Test
    void aGpuTheRulesCannotShareIsAllocatedAndPreparedWhole() throws Exception {
        // a custom memory unit of 48 GiB: an 80 GiB GPU rounds down to 48 GiB, no room for a second step
        up(GranularityRules.custom().memoryUnitBytes(48 * GIB).minMemoryBytes(48 * GIB).build());
        Device d = device(3);
        PublishedCapacityTest.fixed(d.getCapacity().get("memory"), 80 * GIB, 80 * GIB);
        PublishedCapacityTest.fixed(d.getCapacity().get("cores"), 100, 100);
        PublishedCapacityTest.fixed(d.getCapacity().get("tenants"), 1, 1);
        String uid = allocate("whole", 3, request("10Gi", "30"));
        assertEquals("", prepare("whole", uid));
        assertEquals("100", env(uid).get("QGPU_COMPUTE_LIMIT"));
        assertTrue(driver.claims().get(uid).orElseThrow().placement().claim().exclusive());
        String share = Claims.allocated(client, "share", Claims.share("gpu-4", "48Gi", "30", null));
        String e = prepare("share", share);
        assertTrue(e.contains("published whole only"), e);
    }
}
