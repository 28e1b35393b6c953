package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PriorityClass;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** What a pod asks for, read into a claim; every refusal names the field. */
class PodClaimsTest {

    private final PodClaims claims = new PodClaims(GranularityRules.ofDefaults());

    private static Pod pod(Map<String, String> limits, Map<String, String> annotations) {
        PodBuilder b = new PodBuilder().withNewMetadata().withName("p").withNamespace("ns").withUid("u")
                .addToAnnotations(annotations).endMetadata()
                .withNewSpec().addNewContainer().withName("c").withNewResources().endResources().endContainer().endSpec();
        Pod p = b.build();
        limits.forEach((k, v) -> p.getSpec().getContainers().get(0).getResources().getLimits().put(k, new Quantity(v)));
        return p;
    }

    private Claim claim(Map<String, String> limits, Map<String, String> annotations) {
        return claims.claimOf(pod(limits, annotations)).orElseThrow();
    }

    private String refused(Map<String, String> limits, Map<String, String> annotations) {
        BadRequestException e = assertThrows(BadRequestException.class, () -> claims.claimOf(pod(limits, annotations)));
        assertEquals(400, e.status());
        return e.getMessage();
    }

    @Test
    void sharedSliceWithEveryAnnotation() {
        Claim c = claim(Map.of("qgpu.io/gpu", "2", "qgpu.io/gpu-memory", "8", "qgpu.io/gpu-core", "25"),
                Map.of("qgpu.io/gpu-core-limit", "50", "qgpu.io/priority", "Online", "qgpu.io/affinity", "pipe",
                        "qgpu.io/anti-affinity", "rep", "qgpu.io/exclusion", "team-a", "qgpu.io/gpu-model", "Tesla T4, NVIDIA L4",
                        "qgpu.io/gpu-uuid-exclude", "GPU-bad", "qgpu.io/node-policy", "spread", "qgpu.io/gpu-policy", "binpack"));
        assertEquals("ns/p", c.tenantId());
        assertEquals(2, c.gpuCount());
        assertEquals(8 * GpuDevice.GIB, c.memoryPerGpuBytes());
        assertEquals(25, c.computeRequest());
        assertEquals(50, c.computeLimit());
        assertEquals(PriorityClass.ONLINE, c.priority());
        assertFalse(c.exclusive());
        assertEquals(Optional.of("pipe"), c.locality().affinity());
        assertEquals(Optional.of("rep"), c.locality().antiAffinity());
        assertEquals(Optional.of("team-a"), c.locality().exclusion());
        assertEquals(java.util.Set.of("Tesla T4", "NVIDIA L4"), c.selectors().includeModels());
        assertEquals(java.util.Set.of("GPU-bad"), c.selectors().excludeUuids());
        assertEquals(Optional.of(PlacementPolicy.SPREAD), c.nodePolicy());
        assertEquals(Optional.of(PlacementPolicy.BINPACK), c.gpuPolicy());
    }

    @Test
    void defaultsAndExclusiveWholeGpus() {
        Claim shared = claim(Map.of("qgpu.io/gpu-memory", "4"), Map.of());
        assertEquals(1, shared.gpuCount());
        assertEquals(0, shared.computeRequest());
        assertEquals(100, shared.computeLimit());
        assertEquals(PriorityClass.OFFLINE, shared.priority());
        Claim whole = claim(Map.of("qgpu.io/gpu", "4"), Map.of());
        assertTrue(whole.exclusive());
        assertEquals(4, whole.gpuCount());
        Claim explicit100 = claim(Map.of("qgpu.io/gpu", "1", "qgpu.io/gpu-core", "100"), Map.of());
        assertTrue(explicit100.exclusive());
    }

    @Test
    void memoryAsGibOrBinaryBytes() {
        assertEquals(8 * GpuDevice.GIB, claim(Map.of("qgpu.io/gpu-memory", "8Gi"), Map.of()).memoryPerGpuBytes());
        assertEquals(8 * GpuDevice.GIB, claim(Map.of("qgpu.io/gpu-memory", "8192Mi"), Map.of()).memoryPerGpuBytes());
        // 512 MiB is not a whole GiB: the qGPU rules refuse it, HAMi's accept it
        assertTrue(refused(Map.of("qgpu.io/gpu-memory", "512Mi"), Map.of()).contains("under the qgpu rules"));
        assertEquals(512 * GpuDevice.MIB, new PodClaims(GranularityRules.hami())
                .claimOf(pod(Map.of("qgpu.io/gpu-memory", "512Mi"), Map.of())).orElseThrow().memoryPerGpuBytes());
    }

    @Test
    void noGpuResourcesMeansNoClaim() {
        assertTrue(claims.claimOf(pod(Map.of("cpu", "2"), Map.of())).isEmpty());
        assertFalse(PodClaims.wantsGpu(pod(Map.of("cpu", "2"), Map.of())));
        assertTrue(PodClaims.wantsGpu(pod(Map.of("qgpu.io/gpu", "1"), Map.of())));
        // our own output annotations on a pod do not count as unknown
        assertTrue(claims.claimOf(pod(Map.of(), Map.of("qgpu.io/placement", "{}", "qgpu.io/visible-devices", "GPU-a0"))).isEmpty());
    }

    @Test
    void refusals() {
        assertTrue(refused(Map.of("qgpu.io/gpus", "1"), Map.of())
                .startsWith("Pod.spec.containers[0].resources.limits[qgpu.io/gpus] = \"1\": unknown qgpu.io resource"));
        assertTrue(refused(Map.of("qgpu.io/gpu-memory", "4"), Map.of("qgpu.io/prio", "x"))
                .startsWith("Pod.metadata.annotations[qgpu.io/prio] = \"x\": unknown qgpu.io annotation"));
        assertTrue(refused(Map.of("qgpu.io/gpu", "1.5"), Map.of()).contains("whole number between 1 and 1024"));
        assertTrue(refused(Map.of("qgpu.io/gpu", "2k"), Map.of()).contains("without a unit suffix"));
        assertTrue(refused(Map.of("qgpu.io/gpu-core", "40"), Map.of()).contains("without qgpu.io/gpu-memory the pod gets whole GPUs"));
        assertTrue(refused(Map.of("qgpu.io/gpu-memory", "4", "qgpu.io/gpu-core", "101"), Map.of()).contains("between 0 and 100"));
        assertTrue(refused(Map.of("qgpu.io/gpu-memory", "4"), Map.of("qgpu.io/gpu-core-limit", "abc"))
                .contains("qgpu.io/gpu-core-limit] = \"abc\": must be a whole number between 1 and 100"));
        assertTrue(refused(Map.of("qgpu.io/gpu-memory", "4"), Map.of("qgpu.io/affinity", " ")).contains("must not be blank"));
        assertTrue(refused(Map.of("qgpu.io/gpu-memory", "4"), Map.of("qgpu.io/gpu-model", "a,,b")).contains("without empty entries"));
        assertTrue(refused(Map.of("qgpu.io/gpu-memory", "4"), Map.of("qgpu.io/node-policy", "fill")).contains("binpack, spread, fragmentation"));
        assertTrue(refused(Map.of("qgpu.io/gpu-memory", "-4"), Map.of()).contains("positive"));
    }

    @Test
    void requestsFillInForMissingLimitsAndMustMatchThem() {
        Pod p = pod(Map.of(), Map.of());
        p.getSpec().getContainers().get(0).getResources().getRequests().put("qgpu.io/gpu-memory", new Quantity("6"));
        assertEquals(6 * GpuDevice.GIB, claims.claimOf(p).orElseThrow().memoryPerGpuBytes());
        p.getSpec().getContainers().get(0).getResources().getLimits().put("qgpu.io/gpu-memory", new Quantity("8"));
        BadRequestException e = assertThrows(BadRequestException.class, () -> claims.claimOf(p));
        assertTrue(e.getMessage().contains("must equal the limit 8"), e.getMessage());
    }
}
