package io.qgpu.kubernetes.dra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.qgpu.kubernetes.dra.pluginregistration.PluginInfo;
import io.qgpu.kubernetes.dra.v1.Claim;
import io.qgpu.kubernetes.dra.v1.DRAPluginGrpc;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourceResponse;
import io.qgpu.kubernetes.dra.v1.NodePrepareResourcesResponse;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Items 4 and 5: NodePrepareResources and NodeUnprepareResources as the kubelet calls them, per claim. */
class PrepareTest extends DriverTestBase {
    static final long GIB = 1L << 30;
    DraDriver driver;
    DRAPluginGrpc.DRAPluginBlockingStub stub;

    @BeforeEach
    void up() throws Exception {
        driver = start("dgx-h100");
        PluginInfo info = register();
        stub = kubelet.v1(info);
    }

    static Claim ref(String name, String uid) {
        return Kubelet.claim(Claims.NS, name, uid);
    }

    NodePrepareResourceResponse prepare(String name, String uid) {
        NodePrepareResourcesResponse r = Kubelet.prepare(stub, ref(name, uid));
        assertEquals(Set.of(uid), r.getClaimsMap().keySet(), "one answer for exactly the requested claim");
        return r.getClaimsOrThrow(uid);
    }

    String uuid(int index) {
        return driver.slices().slice().getSpec().getDevices().get(index).getAttributes().get("uuid").getString();
    }

    Path spec(String uid) {
        return cdi.resolve("qgpu.io-gpu_" + uid + ".json");
    }

    /** The environment a container of the claim gets: the spec's env as NAME -> VALUE. */
    Map<String, String> env(String uid) throws IOException {
        JsonNode s = new ObjectMapper().readTree(spec(uid).toFile());
        assertEquals("qgpu.io/gpu", s.get("kind").asText());
        Map<String, String> env = new LinkedHashMap<>();
        for (JsonNode e : s.at("/containerEdits/env")) {
            String[] kv = e.asText().split("=", 2);
            env.put(kv[0], kv[1]);
        }
        return env;
    }

    List<String> deviceNodes(String uid, int device) throws IOException {
        JsonNode s = new ObjectMapper().readTree(spec(uid).toFile());
        List<String> out = new ArrayList<>();
        for (JsonNode n : s.at("/devices/" + device + "/containerEdits/deviceNodes")) {
            out.add(n.get("path").asText());
        }
        return out;
    }

    @Test
    void aResultWithoutConsumedCapacityIsTheWholeGpuExclusively() throws Exception {
        String uid = Claims.allocated(client, "whole", Claims.whole("gpu-2"));
        NodePrepareResourceResponse r = prepare("whole", uid);
        assertEquals("", r.getError());
        assertEquals(1, r.getDevicesCount());
        assertEquals("gpu-2", r.getDevices(0).getDeviceName());
        assertEquals("node-a", r.getDevices(0).getPoolName());
        assertEquals(List.of("gpu"), r.getDevices(0).getRequestNamesList());
        assertEquals(List.of("qgpu.io/gpu=" + uid + "-gpu-2"), r.getDevices(0).getCdiDeviceIdsList());
        assertFalse(r.getDevices(0).hasShareId());
        Map<String, String> env = env(uid);
        assertEquals(uuid(2), env.get("NVIDIA_VISIBLE_DEVICES"));
        assertEquals(Long.toString(80 * GIB), env.get("QGPU_MEMORY_LIMIT_BYTES"));
        assertEquals("100", env.get("QGPU_COMPUTE_REQUEST"));
        assertEquals("100", env.get("QGPU_COMPUTE_LIMIT"));
        assertEquals(uid, env.get("QGPU_TENANT"));
        assertEquals(List.of("/dev/nvidia2"), deviceNodes(uid, 0));
        // exclusively: not even the smallest share fits beside it
        String small = Claims.allocated(client, "small", Claims.share("gpu-2", "1Gi", "5", "aaaaaaaa-0000-0000-0000-000000000001"));
        assertTrue(prepare("small", small).getError().contains("does not fit"), prepare("small", small).getError());
    }

    @Test
    void consumedCapacityBecomesTheLimitsAndTheShareIdIsAnswered() throws Exception {
        String share = "0b0f2f43-7d1c-4b43-9d3c-1b2a3c4d5e6f";
        String uid = Claims.allocated(client, "share", Claims.share("gpu-0", "30Gi", "30", share));
        NodePrepareResourceResponse r = prepare("share", uid);
        assertEquals("", r.getError());
        assertEquals(share, r.getDevices(0).getShareId());
        Map<String, String> env = env(uid);
        assertEquals(uuid(0), env.get("NVIDIA_VISIBLE_DEVICES"));
        assertEquals(Long.toString(30 * GIB), env.get("QGPU_MEMORY_LIMIT_BYTES"));
        assertEquals("30", env.get("QGPU_COMPUTE_REQUEST"));
        assertEquals("30", env.get("QGPU_COMPUTE_LIMIT"));

        // plain bytes are bytes
        String bytes = Claims.allocated(client, "bytes", Claims.share("gpu-1", Long.toString(10 * GIB), "25", null));
        assertEquals("", prepare("bytes", bytes).getError());
        assertEquals(Long.toString(10 * GIB), env(bytes).get("QGPU_MEMORY_LIMIT_BYTES"));

        // the whole published capacity is the whole GPU
        String all = Claims.allocated(client, "all", Claims.share("gpu-3", Long.toString(80 * GIB), "100", null));
        assertEquals("", prepare("all", all).getError());
        assertEquals("100", env(all).get("QGPU_COMPUTE_LIMIT"));
    }

    @Test
    void whatTheGranularityRulesCannotHonourIsRefusedNeverRounded() throws Exception {
        // 1G = 10^9 bytes: less than qgpu's smallest share (1 GiB)
        String g = Claims.allocated(client, "one-g", Claims.share("gpu-0", "1G", "30", null));
        String e = prepare("one-g", g).getError();
        assertTrue(e.contains("memoryPerGpuBytes = 1000000000") && e.contains("at least 1073741824"), e);
        assertFalse(Files.exists(spec(g)));
        // 2G = 2 * 10^9 bytes: not a whole number of GiB (qgpu's memory unit)
        String g2 = Claims.allocated(client, "two-g", Claims.share("gpu-0", "2G", "30", null));
        String e2 = prepare("two-g", g2).getError();
        assertTrue(e2.contains("memoryPerGpuBytes = 2000000000") && e2.contains("multiple of 1073741824"), e2);
        // 1.5Gi is whole bytes but not whole GiB
        String half = Claims.allocated(client, "half", Claims.share("gpu-0", "1.5Gi", "30", null));
        assertTrue(prepare("half", half).getError().contains("1610612736"), prepare("half", half).getError());
        // 33%: not a multiple of 5
        String odd = Claims.allocated(client, "odd", Claims.share("gpu-0", "2Gi", "33", null));
        assertTrue(prepare("odd", odd).getError().contains("33"), prepare("odd", odd).getError());
        // half a percent is not a whole number
        String milli = Claims.allocated(client, "milli", Claims.share("gpu-0", "2Gi", "500m", null));
        String m = prepare("milli", milli).getError();
        assertTrue(m.contains("consumedCapacity[cores] = 500m") && m.contains("whole number"), m);
        // and nothing was reserved by any of them: the whole GPU is still free
        String whole = Claims.allocated(client, "whole", Claims.whole("gpu-0"));
        assertEquals("", prepare("whole", whole).getError());
    }

    @Test
    void twoGpusOfOneClaimAreNamedTogether() throws Exception {
        String uid = Claims.allocated(client, "pair", Claims.whole("gpu-4"), Claims.whole("gpu-5"));
        NodePrepareResourceResponse r = prepare("pair", uid);
        assertEquals("", r.getError());
        assertEquals(List.of("gpu-4", "gpu-5"), r.getDevicesList().stream().map(d -> d.getDeviceName()).toList());
        assertEquals(List.of("qgpu.io/gpu=" + uid + "-gpu-5"), r.getDevices(1).getCdiDeviceIdsList());
        assertEquals(uuid(4) + "," + uuid(5), env(uid).get("NVIDIA_VISIBLE_DEVICES"));
        assertEquals(80 * GIB + "," + 80 * GIB, env(uid).get("QGPU_MEMORY_LIMIT_BYTES"));
        assertEquals(List.of("/dev/nvidia4"), deviceNodes(uid, 0));
        assertEquals(List.of("/dev/nvidia5"), deviceNodes(uid, 1));
    }

    @Test
    void aClaimWhoseResultsQgpuCannotPlaceAsOneSliceIsRefusedWithTheReason() throws Exception {
        String mixed = Claims.allocated(client, "mixed", Claims.share("gpu-0", "8Gi", "20", null), Claims.share("gpu-1", "4Gi", "20", null));
        String e = prepare("mixed", mixed).getError();
        assertTrue(e.contains("results[1].consumedCapacity") && e.contains("differs from the claim's first result"), e);
        String twice = Claims.allocated(client, "twice", Claims.share("gpu-0", "8Gi", "20", "aaaaaaaa-0000-0000-0000-000000000003"),
                Claims.share("gpu-0", "8Gi", "20", "aaaaaaaa-0000-0000-0000-000000000004"));
        String t = prepare("twice", twice).getError();
        assertTrue(t.contains("results[1].device = gpu-0") && t.contains("a second share of one GPU"), t);
        // two equal shares on two GPUs are one placement
        String equal = Claims.allocated(client, "equal", Claims.share("gpu-0", "8Gi", "20", null), Claims.share("gpu-1", "8Gi", "20", null));
        assertEquals("", prepare("equal", equal).getError());
        assertEquals(8 * GIB + "," + 8 * GIB, env(equal).get("QGPU_MEMORY_LIMIT_BYTES"));
    }

    @Test
    void eachClaimGetsItsOwnErrorAndTheOthersArePrepared() throws Exception {
        String first = Claims.allocated(client, "first", Claims.share("gpu-3", "60Gi", "50", null));
        assertEquals("", prepare("first", first).getError());

        String good = Claims.allocated(client, "good", Claims.share("gpu-6", "8Gi", "20", null));
        String replaced = Claims.allocated(client, "replaced", Claims.whole("gpu-1"));
        String notAllocated = Claims.unallocated(client, "pending");
        String elsewhere = Claims.allocated(client, "elsewhere", Claims.result("gpu", "node-b", "gpu-0", null, null, null));
        String unknownDevice = Claims.allocated(client, "ghost", Claims.whole("gpu-9"));
        String tooBig = Claims.allocated(client, "too-big", Claims.share("gpu-3", "30Gi", "30", null));
        NodePrepareResourcesResponse all = Kubelet.prepare(stub, ref("good", good), ref("missing", "11111111-2222-3333-4444-555555555555"),
                ref("replaced", "99999999-0000-0000-0000-000000000000"), ref("pending", notAllocated), ref("elsewhere", elsewhere),
                ref("ghost", unknownDevice), ref("too-big", tooBig));
        assertEquals(Set.of(good, "11111111-2222-3333-4444-555555555555", "99999999-0000-0000-0000-000000000000", notAllocated,
                elsewhere, unknownDevice, tooBig), all.getClaimsMap().keySet());
        assertEquals("", all.getClaimsOrThrow(good).getError());
        assertEquals("gpu-6", all.getClaimsOrThrow(good).getDevices(0).getDeviceName());
        assertError(all, "11111111-2222-3333-4444-555555555555", "no such ResourceClaim");
        assertError(all, "99999999-0000-0000-0000-000000000000", "has uid " + replaced);
        assertError(all, notAllocated, "is not allocated");
        assertError(all, elsewhere, "pool = node-b: allocated to another node's pool");
        assertError(all, unknownDevice, "device = gpu-9: this node never published such a device");
        assertError(all, tooBig, "does not fit");
        // the claims prepared before and beside them keep their devices and specs
        assertTrue(Files.exists(spec(first)));
        assertTrue(Files.exists(spec(good)));
        assertEquals(Set.of(first, good), Set.copyOf(driver.claims().all().stream().map(PreparedClaim::uid).toList()));
        for (String failed : List.of(notAllocated, elsewhere, unknownDevice, tooBig)) {
            assertFalse(Files.exists(spec(failed)), failed);
            assertEquals(0, all.getClaimsOrThrow(failed).getDevicesCount());
        }
    }

    static void assertError(NodePrepareResourcesResponse all, String uid, String part) {
        String e = all.getClaimsOrThrow(uid).getError();
        assertTrue(e.contains(part) && e.contains(uid), "error of " + uid + " should say '" + part + "': " + e);
    }

    @Test
    void theSamePrepareAgainGivesTheSameAnswerAndReservesNothingMore() throws Exception {
        String uid = Claims.allocated(client, "c", Claims.share("gpu-0", "50Gi", "50", "aaaaaaaa-0000-0000-0000-000000000002"));
        NodePrepareResourceResponse once = prepare("c", uid);
        String specOnce = Files.readString(spec(uid));
        NodePrepareResourceResponse twice = prepare("c", uid);
        assertEquals(once, twice);
        assertEquals(specOnce, Files.readString(spec(uid)));
        // 80 GiB - 50 GiB = 30 GiB are left: a 30 GiB share fits only if the second prepare reserved nothing
        String rest = Claims.allocated(client, "rest", Claims.share("gpu-0", "30Gi", "50", null));
        assertEquals("", prepare("rest", rest).getError());
    }

    @Test
    void unprepareRemovesTheSpecAndFreesTheShareAndAnUnknownClaimSucceeds() throws Exception {
        String big = Claims.allocated(client, "big", Claims.share("gpu-7", "50Gi", "50", null));
        assertEquals("", prepare("big", big).getError());
        String next = Claims.allocated(client, "next", Claims.share("gpu-7", "40Gi", "40", null));
        assertTrue(prepare("next", next).getError().contains("does not fit"));

        assertEquals("", Kubelet.unprepare(stub, ref("big", big)).getClaimsOrThrow(big).getError());
        assertFalse(Files.exists(spec(big)));
        assertEquals("", prepare("next", next).getError());
        // again, and a claim this driver never saw: both succeed
        var r = Kubelet.unprepare(stub, ref("big", big), ref("never", "12345678-1234-1234-1234-123456789012"));
        assertEquals(Set.of(big, "12345678-1234-1234-1234-123456789012"), r.getClaimsMap().keySet());
        assertEquals("", r.getClaimsOrThrow(big).getError());
        assertEquals("", r.getClaimsOrThrow("12345678-1234-1234-1234-123456789012").getError());
    }
}
