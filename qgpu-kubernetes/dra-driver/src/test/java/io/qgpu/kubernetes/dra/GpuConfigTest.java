package io.qgpu.kubernetes.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAllocationConfiguration;
import io.qgpu.api.PriorityClass;
import io.qgpu.kubernetes.dra.v1.DRAPluginGrpc;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourceResponse;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourcesResponse;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 38 item 4: a claim's GpuConfig ({@code status.allocation.devices.config}, opaque parameters of driver
 * gpu.qgpu.io) sets the placement's priority and compute limit; the CDI spec's environment shows them; anything
 * else in it refuses that claim alone, naming the field and the value.
 */
class GpuConfigTest extends DriverTestBase {
    static final long GIB = 1L << 30;
    DraDriver driver;
    DRAPluginGrpc.DRAPluginBlockingStub stub;

    @BeforeEach
    void up() throws Exception {
        driver = start("dgx-h100");
        stub = kubelet.v1(register());
    }

    NodePrepareResourceResponse prepare(String name, String uid) {
        return Kubelet.prepare(stub, Kubelet.claim(Claims.NS, name, uid)).getClaimsOrThrow(uid);
    }

    Path spec(String uid) {
        return cdi.resolve("qgpu.io-gpu_" + uid + ".json");
    }

    Map<String, String> env(String uid) throws IOException {
        JsonNode s = new ObjectMapper().readTree(spec(uid).toFile());
        Map<String, String> env = new LinkedHashMap<>();
        for (JsonNode e : s.at("/containerEdits/env")) {
            String[] kv = e.asText().split("=", 2);
            env.put(kv[0], kv[1]);
        }
        return env;
    }

    /** Prepares a 10 GiB / 30% share of gpu-0 (request "gpu") with this configuration; its environment. */
    Map<String, String> share(String name, DeviceAllocationConfiguration... config) throws IOException {
        String uid = Claims.allocated(client, name, List.of(config), Claims.share("gpu-0", "10Gi", "30", null));
        assertEquals("", prepare(name, uid).getError());
        Map<String, String> env = env(uid);
        assertEquals(Long.toString(10 * GIB), env.get("QGPU_MEMORY_LIMIT_BYTES"));
        assertEquals("30", env.get("QGPU_COMPUTE_REQUEST"));
        Kubelet.unprepare(stub, Kubelet.claim(Claims.NS, name, uid));
        return env;
    }

    @Test
    void withoutAGpuConfigAClaimIsOfflineWithItsLimitItsRequest() throws Exception {
        Map<String, String> env = share("plain");
        assertEquals("offline", env.get("QGPU_PRIORITY"));
        assertEquals("30", env.get("QGPU_COMPUTE_LIMIT"));
        // a GpuConfig with neither field changes nothing
        Map<String, String> empty = share("empty", Claims.gpuConfig("FromClaim"));
        assertEquals("offline", empty.get("QGPU_PRIORITY"));
        assertEquals("30", empty.get("QGPU_COMPUTE_LIMIT"));
    }

    @Test
    void theClaimsGpuConfigSetsThePriorityAndTheComputeLimit() throws Exception {
        Map<String, String> env = share("online", Claims.gpuConfig("FromClaim", "priority", "online", "computeLimit", 60));
        assertEquals("online", env.get("QGPU_PRIORITY"));
        assertEquals("30", env.get("QGPU_COMPUTE_REQUEST"));
        assertEquals("60", env.get("QGPU_COMPUTE_LIMIT"));
        // the limit may be the request itself, or 100
        assertEquals("30", share("tight", Claims.gpuConfig("FromClaim", "computeLimit", 30)).get("QGPU_COMPUTE_LIMIT"));
        assertEquals("100", share("burst", Claims.gpuConfig("FromClaim", "computeLimit", 100)).get("QGPU_COMPUTE_LIMIT"));
        assertEquals("offline", share("offline", Claims.gpuConfig("FromClaim", "priority", "offline")).get("QGPU_PRIORITY"));
        // and the class's configuration alone applies too
        assertEquals("online", share("by-class", Claims.gpuConfig("FromClass", "priority", "online")).get("QGPU_PRIORITY"));
    }

    @Test
    void theClaimsConfigurationWinsOverTheClassesFieldByField() throws Exception {
        // the claim's entry comes first in the list and still wins; the class's priority stays where the claim sets none
        Map<String, String> env = share("both", Claims.gpuConfig("FromClaim", "computeLimit", 70),
                Claims.gpuConfig("FromClass", "priority", "online", "computeLimit", 50));
        assertEquals("online", env.get("QGPU_PRIORITY"));
        assertEquals("70", env.get("QGPU_COMPUTE_LIMIT"));
        Map<String, String> down = share("down", Claims.gpuConfig("FromClass", "priority", "online"),
                Claims.gpuConfig("FromClaim", "priority", "offline"));
        assertEquals("offline", down.get("QGPU_PRIORITY"));
        // within one source, the later entry wins
        assertEquals("80", share("later", Claims.gpuConfig("FromClaim", "computeLimit", 40),
                Claims.gpuConfig("FromClaim", "computeLimit", 80)).get("QGPU_COMPUTE_LIMIT"));
    }

    @Test
    void anEntryAppliesToTheResultsOfTheRequestsItNames() throws Exception {
        // another request's entry does not apply; the result's own request's does, and a main request covers its subrequests
        assertEquals("offline", share("other", Claims.gpuConfig("FromClaim", List.of("other"), "priority", "online")).get("QGPU_PRIORITY"));
        assertEquals("online", share("named", Claims.gpuConfig("FromClaim", List.of("other", "gpu"), "priority", "online"))
                .get("QGPU_PRIORITY"));
        String sub = Claims.allocated(client, "sub", List.of(Claims.gpuConfig("FromClaim", List.of("gpu"), "priority", "online")),
                Claims.result("gpu/small", "node-a", "gpu-1", "4Gi", "20", null));
        assertEquals("", prepare("sub", sub).getError());
        assertEquals("online", env(sub).get("QGPU_PRIORITY"));
        // two requests of one claim configured differently: qgpu gives a claim one priority and one limit
        String split = Claims.allocated(client, "split", List.of(Claims.gpuConfig("FromClaim", List.of("a"), "priority", "online")),
                Claims.result("a", "node-a", "gpu-2", "4Gi", "20", null), Claims.result("b", "node-a", "gpu-3", "4Gi", "20", null));
        String e = prepare("split", split).getError();
        assertTrue(e.contains("results[1].request = b") && e.contains("priority (none)") && e.contains("priority online")
                && e.contains("differs from the claim's first result's"), e);
        assertFalse(Files.exists(spec(split)));
        // configured alike, they are one placement
        String alike = Claims.allocated(client, "alike", List.of(Claims.gpuConfig("FromClaim", List.of("a", "b"), "priority", "online")),
                Claims.result("a", "node-a", "gpu-2", "4Gi", "20", null), Claims.result("b", "node-a", "gpu-3", "4Gi", "20", null));
        assertEquals("", prepare("alike", alike).getError());
        assertEquals("online", env(alike).get("QGPU_PRIORITY"));
    }

    @Test
    void otherDriversConfigurationIsIgnored() throws Exception {
        Map<String, Object> theirs = Map.of("apiVersion", "other.example.com/v1", "kind", "Whatever", "priority", "urgent", "x", 1);
        Map<String, String> env = share("theirs", Claims.config("FromClaim", List.of(), "other.example.com", theirs));
        assertEquals("offline", env.get("QGPU_PRIORITY"));
        assertEquals("30", env.get("QGPU_COMPUTE_LIMIT"));
    }

    @Test
    void aWholeGpuClaimMayBeOnlineAndHasOnlyLimit100() throws Exception {
        String whole = Claims.allocated(client, "whole", List.of(Claims.gpuConfig("FromClaim", "priority", "online", "computeLimit", 100)),
                Claims.whole("gpu-4"));
        assertEquals("", prepare("whole", whole).getError());
        assertEquals("online", env(whole).get("QGPU_PRIORITY"));
        assertEquals("100", env(whole).get("QGPU_COMPUTE_LIMIT"));
        String capped = Claims.allocated(client, "capped", List.of(Claims.gpuConfig("FromClaim", "computeLimit", 80)), Claims.whole("gpu-5"));
        String e = prepare("capped", capped).getError();
        assertTrue(e.contains("status.allocation.devices.config[0].opaque.parameters.computeLimit = 80: a whole-GPU claim has compute limit 100"), e);
    }

    /** A claim whose configuration is refused, and what its error must say. */
    record Refused(List<DeviceAllocationConfiguration> config, String error) {
        Refused(DeviceAllocationConfiguration config, String error) {
            this(List.of(config), error);
        }
    }

    @Test
    void eachInvalidGpuConfigRefusesItsClaimNamingTheFieldAndTheValue() throws Exception {
        String at = "status.allocation.devices.config[0].opaque.parameters";
        String d = DraNames.DRIVER;
        List<Refused> cases = List.of(
                new Refused(Claims.gpuConfig("FromClaim", "priority", "online", "gpuMemory", "8Gi"), at + ".gpuMemory = \"8Gi\": unknown field"),
                new Refused(Claims.config("FromClaim", List.of(), d, Map.of("apiVersion", "gpu.qgpu.io/v1", "kind", "GpuConfig")),
                        at + ".apiVersion = \"gpu.qgpu.io/v1\": must be gpu.qgpu.io/v1alpha1"),
                new Refused(Claims.config("FromClaim", List.of(), d, Map.of("apiVersion", "gpu.qgpu.io/v1alpha1", "kind", "GpuSettings")),
                        at + ".kind = \"GpuSettings\": must be GpuConfig"),
                new Refused(Claims.config("FromClaim", List.of(), d, Map.of("priority", "online")),
                        at + ".apiVersion is missing: must be gpu.qgpu.io/v1alpha1"),
                new Refused(Claims.gpuConfig("FromClaim", "computeLimit", 20),
                        at + ".computeLimit = 20: must be at least the consumed cores (30) and at most 100"),
                new Refused(Claims.gpuConfig("FromClaim", "computeLimit", 120), at + ".computeLimit = 120: must be a whole number from 1 to 100"),
                new Refused(Claims.gpuConfig("FromClaim", "computeLimit", 0), at + ".computeLimit = 0: must be a whole number from 1 to 100"),
                new Refused(Claims.gpuConfig("FromClaim", "computeLimit", 50.5), at + ".computeLimit = 50.5: must be a whole number"),
                new Refused(Claims.gpuConfig("FromClaim", "computeLimit", "50"), at + ".computeLimit = \"50\": must be a whole number"),
                new Refused(Claims.gpuConfig("FromClaim", "computeLimit", 42), at + ".computeLimit = 42: must be a multiple of 5 under the qgpu rules"),
                new Refused(Claims.gpuConfig("FromClaim", "priority", "urgent"), at + ".priority = \"urgent\": must be online or offline"),
                new Refused(Claims.gpuConfig("FromClaim", "priority", "Online"), at + ".priority = \"Online\": must be online or offline"),
                new Refused(Claims.gpuConfig("FromClaim", "priority", 1), at + ".priority = 1: must be online or offline"),
                new Refused(Claims.gpuConfig("FromSomewhere", "priority", "online"),
                        "status.allocation.devices.config[0].source = FromSomewhere: must be FromClass or FromClaim"),
                // an entry is named by its own index, also when it applies to no result of the claim
                new Refused(List.of(Claims.gpuConfig("FromClass", "priority", "online"),
                        Claims.gpuConfig("FromClaim", List.of("elsewhere"), "priority", "high")),
                        "status.allocation.devices.config[1].opaque.parameters.priority = \"high\": must be online or offline"));

        List<io.qgpu.kubernetes.dra.v1.Claim> asked = new ArrayList<>();
        List<String> uids = new ArrayList<>();
        for (int i = 0; i < cases.size(); i++) {
            String uid = Claims.allocated(client, "bad-" + i, cases.get(i).config(), Claims.share("gpu-6", "10Gi", "30", null));
            uids.add(uid);
            asked.add(Kubelet.claim(Claims.NS, "bad-" + i, uid));
        }
        String good = Claims.allocated(client, "good", List.of(Claims.gpuConfig("FromClaim", "priority", "online")),
                Claims.share("gpu-6", "10Gi", "30", null));
        asked.add(Kubelet.claim(Claims.NS, "good", good));
        NodePrepareResourcesResponse all = Kubelet.prepare(stub, asked.toArray(io.qgpu.kubernetes.dra.v1.Claim[]::new));
        for (int i = 0; i < cases.size(); i++) {
            String e = all.getClaimsOrThrow(uids.get(i)).getError();
            String want = cases.get(i).error();
            assertTrue(e.contains(want) && e.contains(uids.get(i)), "error of bad-" + i + " should say '" + want + "': " + e);
            assertFalse(Files.exists(spec(uids.get(i))), "bad-" + i);
        }
        // the valid claim beside them is prepared, and nothing of the refused ones is held
        assertEquals("", all.getClaimsOrThrow(good).getError());
        assertEquals("online", env(good).get("QGPU_PRIORITY"));
        assertEquals(List.of(good), driver.claims().all().stream().map(PreparedClaim::uid).toList());
    }

    @Test
    void thePriorityAndLimitSurviveARestart() throws Exception {
        String uid = Claims.allocated(client, "kept", List.of(Claims.gpuConfig("FromClaim", "priority", "online", "computeLimit", 90)),
                Claims.share("gpu-7", "20Gi", "40", null));
        NodePrepareResourceResponse first = prepare("kept", uid);
        assertEquals("", first.getError());
        driver.close();
        open.remove(driver);
        driver = start("dgx-h100");
        stub = kubelet.v1(register());
        PreparedClaim restored = driver.claims().get(uid).orElseThrow();
        assertEquals(PriorityClass.ONLINE, restored.placement().claim().priority());
        assertEquals(90, restored.placement().claim().computeLimit());
        assertEquals(first, prepare("kept", uid));
        assertEquals("90", env(uid).get("QGPU_COMPUTE_LIMIT"));
    }
}
