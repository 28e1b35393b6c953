package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.HostRequest;
import io.qgpu.api.Node;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementConfig;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** The pod's CPU and memory requests read into the claim, as the kube-scheduler counts them. */
class PodHostRequestsTest {

    private static final long MIB = 1L << 20;

    private static Container container(String name, Map<String, String> requests, Map<String, String> limits) {
        Map<String, Quantity> r = new LinkedHashMap<>();
        requests.forEach((k, v) -> r.put(k, new Quantity(v)));
        Map<String, Quantity> l = new LinkedHashMap<>();
        limits.forEach((k, v) -> l.put(k, new Quantity(v)));
        return new ContainerBuilder().withName(name).withNewResources().withRequests(r).withLimits(l).endResources().build();
    }

    private static Pod pod(List<Container> containers, List<Container> init) {
        return new PodBuilder().withNewMetadata().withName("p").withNamespace("ns").endMetadata()
                .withNewSpec().withContainers(containers).withInitContainers(init).endSpec().build();
    }

    @Test
    void kubernetesQuantitiesBecomeMillicoresAndBytes() {
        Pod p = pod(List.of(container("a", Map.of("cpu", "500m", "memory", "1Gi"), Map.of()),
                container("b", Map.of("cpu", "2", "memory", "512M"), Map.of()),
                container("c", Map.of("cpu", "0.25"), Map.of())), List.of());
        assertEquals(new HostRequest(2750, GpuDevice.GIB + 512_000_000L), PodHostRequests.of(p));
        assertEquals(HostRequest.none(), PodHostRequests.of(pod(List.of(container("x", Map.of(), Map.of())), List.of())));
    }

    @Test
    void aLimitWithoutARequestIsTheRequest() {
        Pod p = pod(List.of(container("a", Map.of(), Map.of("cpu", "1", "memory", "2Gi")),
                container("b", Map.of("cpu", "100m"), Map.of("cpu", "4"))), List.of());
        assertEquals(new HostRequest(1100, 2 * GpuDevice.GIB), PodHostRequests.of(p));
    }

    @Test
    void initContainersAndSidecarsCountAsTheSchedulerCountsThem() {
        // regular containers: 1 CPU; a plain init container of 3 CPUs dominates
        Pod init = pod(List.of(container("a", Map.of("cpu", "1"), Map.of())),
                List.of(container("i", Map.of("cpu", "3", "memory", "64Mi"), Map.of())));
        assertEquals(new HostRequest(3000, 64 * MIB), PodHostRequests.of(init));
        // a sidecar (restartPolicy Always) of 500m runs beside the containers and the later init containers
        Container sidecar = new ContainerBuilder(container("s", Map.of("cpu", "500m"), Map.of())).withRestartPolicy("Always").build();
        Pod withSidecar = pod(List.of(container("a", Map.of("cpu", "1"), Map.of())),
                List.of(sidecar, container("i", Map.of("cpu", "1200m"), Map.of())));
        assertEquals(new HostRequest(1700, 0), PodHostRequests.of(withSidecar));   // max(1 + 0.5, 0.5 + 1.2)
        Pod plain = pod(List.of(container("a", Map.of("cpu", "2"), Map.of())), List.of(sidecar));
        assertEquals(new HostRequest(2500, 0), PodHostRequests.of(plain));
        // the pod overhead is added
        Pod overhead = new PodBuilder(plain).editSpec().addToOverhead("cpu", new Quantity("250m"))
                .addToOverhead("memory", new Quantity("120Mi")).endSpec().build();
        assertEquals(new HostRequest(2750, 120 * MIB), PodHostRequests.of(overhead));
    }

    @Test
    void badQuantitiesAreRefusedWithTheFieldAndTheValue() {
        BadRequestException fine = assertThrows(BadRequestException.class, () -> PodHostRequests.of(
                pod(List.of(container("a", Map.of("cpu", "0.0005"), Map.of())), List.of())));
        assertEquals("Pod.spec.containers[0].resources.requests[cpu] = \"0.0005\": must be a whole number of millicores"
                + " (1m at the finest)", fine.getMessage());
        assertEquals(400, fine.status());
        BadRequestException neg = assertThrows(BadRequestException.class, () -> PodHostRequests.of(
                pod(List.of(container("a", Map.of(), Map.of()), container("b", Map.of(), Map.of("memory", "-1Gi"))), List.of())));
        assertEquals("Pod.spec.containers[1].resources.limits[memory] = \"-1Gi\": must not be negative", neg.getMessage());
        BadRequestException junk = assertThrows(BadRequestException.class, () -> PodHostRequests.of(
                pod(List.of(), List.of(container("i", Map.of("memory", "lots"), Map.of())))));
        assertTrue(junk.getMessage().startsWith("Pod.spec.initContainers[0].resources.requests[memory] = \"lots\""),
                junk.getMessage());
        BadRequestException bytes = assertThrows(BadRequestException.class, () -> PodHostRequests.of(
                pod(List.of(container("a", Map.of("memory", "1.5"), Map.of())), List.of())));
        assertTrue(bytes.getMessage().endsWith("must be a whole number of bytes"), bytes.getMessage());
    }

    @Test
    void theClaimCarriesTheRequestsAndTheExtenderFiltersOnThem() {
        Container c = container("main", Map.of("cpu", "3", "memory", "8Gi"), Map.of());
        c.getResources().getLimits().put("qgpu.io/gpu-memory", new Quantity("4"));
        Pod p = pod(List.of(c), List.of());
        Claim claim = new PodClaims(GranularityRules.ofDefaults()).claimOf(p).orElseThrow();
        assertEquals(new HostRequest(3000, 8 * GpuDevice.GIB), claim.host());

        List<Node> nodes = new ArrayList<>();
        for (String[] n : new String[][] {{"small", "2000"}, {"busy", "4000"}, {"big", "16000"}}) {
            nodes.add(Node.builder(n[0]).gpu(GpuDevice.builder("GPU-" + n[0]).index(0).memoryGiB(16).build())
                    .cpuMillis(Long.parseLong(n[1])).hostMemoryGiB(64).build());
        }
        Ledger ledger = Ledger.create(nodes);
        Claim other = Claim.builder("ns/other").hostOnly().cpuMillis(2000).build();
        assertTrue(ledger.reserve(new io.qgpu.api.Placement(other, "busy", List.of())).reserved());
        DemoCluster demo = new DemoCluster();
        GpuExtender ext = new GpuExtender(ledger, PlacementConfig.defaults(), demo);
        ExtenderProtocol.FilterResult r = ext.filter(new ExtenderRequests.Args(p, true, List.of("small", "busy", "big"),
                Map.of(), null));
        assertEquals(List.of("big"), r.nodeNames());
        assertTrue(r.failedNodes().get("busy").contains("busy: INSUFFICIENT_CPU requested 3000 millicores, free 2000 millicores"),
                r.failedNodes().toString());
        // "small" could never hold 3 CPUs: unresolvable, so preemption is not tried there
        assertTrue(r.failedAndUnresolvableNodes().get("small").contains("INSUFFICIENT_CPU requested 3000 millicores, free 2000"),
                r.failedAndUnresolvableNodes().toString());
        demo.remember(p);
        assertEquals("", ext.bind(new ExtenderProtocol.BindingArgs("p", "ns", "", "big")).error());
        assertEquals(OptionalLong.of(13000), ledger.node("big").orElseThrow().cpuMillisFree());
    }

    @Test
    void aNodeRenamedFromItsAnnotationKeepsItsHostCapacity() {
        io.fabric8.kubernetes.api.model.Node k8s = new io.fabric8.kubernetes.api.model.NodeBuilder().withNewMetadata()
                .withName("worker-9").addToAnnotations(QgpuAnnotations.INVENTORY,
                        "{\"name\": \"other\", \"host\": {\"cpuMillis\": 8000, \"memoryGiB\": 32}}").endMetadata().build();
        Node n = NodeInventory.parse(k8s).orElseThrow();
        assertEquals("worker-9", n.name());
        assertEquals(io.qgpu.api.HostCapacity.of(8000, 32 * GpuDevice.GIB), n.host());
    }
}
