package io.qgpu.kubernetes.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.AllocationResult;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClass;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClassBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceRequestAllocationResult;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceRequestAllocationResultBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ExactDeviceRequestBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimBuilder;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.HostCapacity;
import io.qgpu.api.HostRequest;
import io.qgpu.api.Node;
import io.qgpu.api.TopologyLevel;
import io.qgpu.core.placement.PlacementConfig;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

class DraAllocatorTest {
    static final long GIB = 1L << 30;
    static final DeviceClass CLASS = new DeviceClassBuilder().withNewMetadata().withName(DraNames.DEVICE_CLASS).endMetadata()
            .withNewSpec().addNewSelector().withNewCel().withExpression("device.driver == \"gpu.qgpu.io\"").endCel().endSelector()
            .endSpec().build();
    static final Function<String, Optional<DeviceClass>> CLASSES = n -> n.equals(DraNames.DEVICE_CLASS) ? Optional.of(CLASS)
            : Optional.empty();

    /** A node as qgpu's driver publishes it under the qgpu rules: memory in GiB steps from 1 GiB, cores in 5s, tenants. */
    static PublishedNode node(String name, int gpus, long memoryGiB, String model) {
        Node.Builder b = Node.builder(name).defaultLink(new GpuLink.Pcie(TopologyLevel.SYSTEM));
        List<PublishedGpu> pub = new ArrayList<>();
        for (int i = 0; i < gpus; i++) {
            String uuid = "GPU-" + name + "-" + i;
            GpuDevice gpu = GpuDevice.builder(uuid).index(i).model(model).memoryGiB(memoryGiB).build();
            b.gpu(gpu);
            long mem = memoryGiB * GIB;
            int tenants = GranularityRules.ofDefaults().maxTenants(gpu);
            pub.add(new PublishedGpu(name, "gpu-" + i, uuid, new CapacityPolicy(mem, mem, List.of(), GIB, mem, GIB),
                    new CapacityPolicy(100, 100, List.of(), 5, 100, 5), new CapacityPolicy(tenants, 1, List.of(1L), 0, tenants, 0),
                    true));
        }
        return new PublishedNode(b.build(), pub);
    }

    static DraAllocator allocator(PublishedNode... nodes) {
        DraAllocator a = DraAllocator.create(Set.of(DraNames.DEVICE_CLASS), GranularityRules.ofDefaults(), PlacementConfig.defaults(),
                (c, classes) -> Optional.empty());
        a.inventory(List.of(nodes));
        return a;
    }

    static ResourceClaim claim(String name, String memory, String cores, int count, String... selectors) {
        ExactDeviceRequestBuilder e = new ExactDeviceRequestBuilder().withDeviceClassName(DraNames.DEVICE_CLASS)
                .withCount((long) count);
        if (memory != null || cores != null) {
            Map<String, Quantity> req = new HashMap<>();
            if (memory != null) {
                req.put("memory", new Quantity(memory));
            }
            if (cores != null) {
                req.put("cores", new Quantity(cores));
            }
            e.withNewCapacity().withRequests(req).endCapacity();
        }
        for (String s : selectors) {
            e.addNewSelector().withNewCel().withExpression(s).endCel().endSelector();
        }
        return new ResourceClaimBuilder().withNewMetadata().withNamespace("ns").withName(name).withUid("uid-" + name)
                .withResourceVersion("1").endMetadata()
                .withNewSpec().withNewDevices().addNewRequest().withName("gpu").withExactly(e.build()).endRequest().endDevices()
                .endSpec().build();
    }

    static ResourceClaim allocated(ResourceClaim rc, AllocationResult a) {
        return new ResourceClaimBuilder(rc).editOrNewStatus().withAllocation(a).endStatus().build();
    }

    static DraAllocator.Decision.Allocate allocate(DraAllocator a, ResourceClaim... claims) {
        DraAllocator.Decision d = a.decide(List.of(claims), CLASSES);
        return assertInstanceOf(DraAllocator.Decision.Allocate.class, d, () -> d.toString());
    }

    @Test
    void aShareIsRoundedUpToTheGridAndWrittenAsTheDriverPreparesIt() {
        DraAllocator a = allocator(node("n1", 2, 80, "H100"));
        DraAllocator.Decision.Allocate d = allocate(a, claim("c", "10000Mi", "33", 1));
        assertEquals("n1", d.node());
        AllocationResult r = d.claims().get(0).allocation();
        DeviceRequestAllocationResult res = r.getDevices().getResults().get(0);
        assertEquals("gpu", res.getRequest());
        assertEquals(DraNames.DRIVER, res.getDriver());
        assertEquals("n1", res.getPool());
        assertEquals(Map.of("memory", new Quantity(Long.toString(10 * GIB)), "cores", new Quantity("35"), "tenants", new Quantity("1")),
                res.getConsumedCapacity());
        assertEquals(36, res.getShareID().length());
        assertEquals("metadata.name", r.getNodeSelector().getNodeSelectorTerms().get(0).getMatchFields().get(0).getKey());
        assertEquals(List.of("n1"), r.getNodeSelector().getNodeSelectorTerms().get(0).getMatchFields().get(0).getValues());
    }

    @Test
    void aWholeGpuConsumesTheWholeCapacityAndTwoRequestsGetDistinctGpus() {
        DraAllocator a = allocator(node("n1", 2, 80, "H100"));
        ResourceClaim two = new ResourceClaimBuilder(claim("c", null, null, 1)).editSpec().editDevices().addNewRequest().withName("b")
                .withNewExactly().withDeviceClassName(DraNames.DEVICE_CLASS).endExactly().endRequest().endDevices().endSpec().build();
        AllocationResult r = allocate(a, two).claims().get(0).allocation();
        List<DeviceRequestAllocationResult> res = r.getDevices().getResults();
        assertEquals(List.of("gpu", "b"), res.stream().map(DeviceRequestAllocationResult::getRequest).toList());
        assertEquals(2, res.stream().map(DeviceRequestAllocationResult::getDevice).distinct().count());
        assertEquals(new Quantity(Long.toString(80 * GIB)), res.get(0).getConsumedCapacity().get("memory"));
        assertEquals(new Quantity("100"), res.get(0).getConsumedCapacity().get("cores"));
        // nothing is left for a third claim
        assertInstanceOf(DraAllocator.Decision.Refused.class, a.decide(List.of(claim("d", "1Gi", null, 1)), CLASSES));
    }

    @Test
    void anotherAllocatorsClaimIsCountedAndItsDeletionGivesTheShareBack() {
        DraAllocator a = allocator(node("n1", 1, 80, "H100"));
        ResourceClaim theirs = allocated(claim("k", null, null, 1), new io.fabric8.kubernetes.api.model.resource.v1.AllocationResultBuilder()
                .withNewDevices().addToResults(new DeviceRequestAllocationResultBuilder().withRequest("gpu").withDriver(DraNames.DRIVER)
                        .withPool("n1").withDevice("gpu-0").withConsumedCapacity(Map.of("memory", new Quantity("70Gi"),
                                "cores", new Quantity("50"), "tenants", new Quantity("1"))).withShareID("x").build()).endDevices().build());
        a.claimChanged(theirs);
        DraAllocator.Decision d = a.decide(List.of(claim("c", "20Gi", "10", 1)), CLASSES);
        DraAllocator.Decision.Refused refused = assertInstanceOf(DraAllocator.Decision.Refused.class, d);
        assertTrue(refused.reason().contains("claim ns/c"), refused.reason());
        a.claimGone(theirs);
        allocate(a, claim("c", "20Gi", "10", 1));
    }

    @Test
    void selectorsOfTheFormsListedAreHonouredAndOthersRefusedWithTheReason() {
        DraAllocator a = allocator(node("n1", 1, 80, "H100"), node("n2", 1, 40, "A100"));
        assertEquals("n2", allocate(a, claim("c", "1Gi", null, 1,
                "device.attributes[\"gpu.qgpu.io\"].productName == \"A100\"")).node());
        DraAllocator.Decision d = a.decide(List.of(claim("d", "1Gi", null, 1, "device.capacity[\"gpu.qgpu.io\"].memory.compareTo(quantity(\"1Gi\")) > 0")),
                CLASSES);
        String reason = assertInstanceOf(DraAllocator.Decision.Refused.class, d).reason();
        assertTrue(reason.contains("spec.devices.requests[0].exactly.selectors[0].cel.expression"), reason);
        assertTrue(reason.contains("not a form the qgpu allocator understands"), reason);
        String idx = assertInstanceOf(DraAllocator.Decision.Refused.class, a.decide(List.of(claim("e", "1Gi", null, 1,
                "device.attributes[\"gpu.qgpu.io\"].index == 7")), CLASSES)).reason();
        assertTrue(idx.contains("no published GPU matches"), idx);
    }

    @Test
    void twoGpusGoToTheNvLinkPairTheSliceDescribes() {
        // gpu-2 and gpu-3 are linked by NVLink (the driver's nvlink attribute), gpu-0 and gpu-1 only by PCIe
        SliceInventoryTest.Dev[] devs = new SliceInventoryTest.Dev[4];
        for (int i = 0; i < 4; i++) {
            devs[i] = SliceInventoryTest.gpu("n1", i).num("numaNode", 0).cap("memory", SliceInventoryTest.range("80Gi", "80Gi", "1Gi", "80Gi", "1Gi"))
                    .cap("cores", SliceInventoryTest.range("100", "100", "5", "100", "5"));
        }
        devs[2].str("nvlink", "3:4");
        devs[3].str("nvlink", "2:4");
        SliceInventory inv = SliceInventory.of(List.of(SliceInventoryTest.slice("n1", devs)));
        assertEquals(List.of(), inv.problems());
        DraAllocator a = DraAllocator.create(Set.of(DraNames.DEVICE_CLASS), GranularityRules.ofDefaults(), PlacementConfig.defaults(),
                (c, classes) -> Optional.empty());
        a.inventory(inv.nodes());
        AllocationResult r = allocate(a, claim("c", null, null, 2)).claims().get(0).allocation();
        assertEquals(Set.of("gpu-2", "gpu-3"), r.getDevices().getResults().stream().map(DeviceRequestAllocationResult::getDevice)
                .collect(java.util.stream.Collectors.toSet()));
    }

    @Test
    void aGpuConfigIsCheckedAndCopiedButPriorityNeverPassesThePublishedCores() {
        DraAllocator a = DraAllocator.create(Set.of(DraNames.DEVICE_CLASS), GranularityRules.ofDefaults(), PlacementConfig.defaults(),
                new ClaimPriority());
        a.inventory(List.of(node("n1", 1, 80, "H100")));
        ResourceClaim online = new ResourceClaimBuilder(claim("c", "10Gi", "100", 1)).editSpec().editDevices().addNewConfig()
                .withNewOpaque().withDriver(DraNames.DRIVER).withParameters(Map.of("apiVersion", "gpu.qgpu.io/v1alpha1",
                        "kind", "GpuConfig", "priority", "online")).endOpaque().endConfig().endDevices().endSpec().build();
        DraAllocator.Decision.Allocate d = allocate(a, online);
        assertEquals("FromClaim", d.claims().get(0).allocation().getDevices().getConfig().get(0).getSource());
        assertEquals("online", ((Map<?, ?>) d.claims().get(0).allocation().getDevices().getConfig().get(0).getOpaque().getParameters())
                .get("priority"));
        // the GPU's one cores capacity is spent: an offline claim does not get another 100 beside the online one
        String full = assertInstanceOf(DraAllocator.Decision.Refused.class, a.decide(List.of(claim("d", "10Gi", "100", 1)), CLASSES))
                .reason();
        assertTrue(full.contains("ns/d"), full);
        ResourceClaim bad = new ResourceClaimBuilder(claim("e", "10Gi", "10", 1)).editSpec().editDevices().addNewConfig()
                .withNewOpaque().withDriver(DraNames.DRIVER).withParameters(Map.of("apiVersion", "gpu.qgpu.io/v1alpha1",
                        "kind", "GpuConfig", "priority", "urgent")).endOpaque().endConfig().endDevices().endSpec().build();
        String reason = assertInstanceOf(DraAllocator.Decision.Refused.class, a.decide(List.of(bad), CLASSES)).reason();
        assertTrue(reason.contains("spec.devices.config[0].opaque.parameters.priority"), reason);
    }

    @Test
    void aNodeWhoseDriverPublishesAnotherGridIsNotGivenAShareOffIt() {
        // the node's driver runs the gpu-manager rules (memory in 256 MiB steps): a 10000 MiB share rounded by the
        // allocator's qgpu rules (10 GiB) is on that grid; cores 33 rounded to 35 is not on a grid of 10s
        GpuDevice gpu = GpuDevice.builder("GPU-x").index(0).model("H100").memoryGiB(80).build();
        long mem = 80 * GIB;
        PublishedNode n = new PublishedNode(Node.builder("n1").gpu(gpu).build(), List.of(new PublishedGpu("n1", "gpu-0", "GPU-x",
                new CapacityPolicy(mem, mem, List.of(), 256L << 20, mem, 256L << 20), new CapacityPolicy(100, 100, List.of(), 10, 100, 10),
                null, true)));
        DraAllocator a = allocator(n);
        String reason = assertInstanceOf(DraAllocator.Decision.Refused.class, a.decide(List.of(claim("c", "10000Mi", "33", 1)), CLASSES))
                .reason();
        assertTrue(reason.contains("other rules than --rules"), reason);
        assertEquals(0, a.ledger().size(), "nothing stays reserved");
        allocate(a, claim("d", "10Gi", "40", 1));
    }

    @Test
    void aClaimMixingSharesIsRefusedWithTheReason() {
        DraAllocator a = allocator(node("n1", 2, 80, "H100"));
        ResourceClaim mixed = new ResourceClaimBuilder(claim("c", "10Gi", null, 1)).editSpec().editDevices().addNewRequest().withName("b")
                .withNewExactly().withDeviceClassName(DraNames.DEVICE_CLASS).endExactly().endRequest().endDevices().endSpec().build();
        String reason = assertInstanceOf(DraAllocator.Decision.Refused.class, a.decide(List.of(mixed), CLASSES)).reason();
        assertTrue(reason.contains("the same share on each of its GPUs"), reason);
    }

    @Test
    void twoClaimsOfOnePodGoToOneNode() {
        DraAllocator a = allocator(node("n1", 1, 80, "H100"), node("n2", 1, 80, "H100"));
        allocate(a, claim("x", "50Gi", "10", 1));   // n1 or n2 holds 50 GiB now
        DraAllocator.Decision.Allocate d = allocate(a, claim("c1", "20Gi", "10", 1), claim("c2", "20Gi", "10", 1));
        assertEquals(2, d.claims().size());
        assertEquals(d.claims().get(0).allocation().getNodeSelector(), d.claims().get(1).allocation().getNodeSelector());
    }

    /**
     * Whoever allocates (this allocator's decisions written back, and another allocator's first fit), the consumed
     * memory, cores and tenants of every device stay within its capacity; every deletion gives the share back.
     */
    @Test
    void theSumOfConsumedCapacityNeverExceedsTheDevice() {
        assertEquals(java.util.List.of(), capacityViolations(true));
    }

    /** The property's self-test: an allocator that does not count the other allocator's claims is caught. */
    @Test
    void thePropertyCatchesAnAllocatorBlindToOtherAllocators() {
        List<String> v = capacityViolations(false);
        assertTrue(!v.isEmpty(), "a blind allocator went unnoticed in 20 seeded runs");
    }

    /**
     * 20 seeded runs of 200 steps mixing this allocator's decisions, another allocator's first fit and deletions;
     * the first violation of each run ({@code countOthers} false: the other allocator's claims are hidden from this
     * one, the bug the property must catch).
     */
    private static List<String> capacityViolations(boolean countOthers) {
        List<String> violations = new ArrayList<>();
        for (long seed = 0; seed < 20; seed++) {
            Random rnd = new Random(seed);
            PublishedNode n1 = node("n1", 2, 16, "T4");
            PublishedNode n2 = node("n2", 2, 16, "T4");
            DraAllocator a = allocator(n1, n2);
            Map<String, ResourceClaim> live = new HashMap<>();
            for (int step = 0; step < 200; step++) {
                int op = rnd.nextInt(10);
                if (op < 5) {
                    ResourceClaim c = claim("c" + step, (1 + rnd.nextInt(8)) + "Gi", Integer.toString(5 * (1 + rnd.nextInt(10))), 1);
                    if (a.decide(List.of(c), CLASSES) instanceof DraAllocator.Decision.Allocate d) {
                        ResourceClaim done = allocated(c, d.claims().get(0).allocation());
                        a.claimChanged(done);
                        live.put(c.getMetadata().getUid(), done);
                    }
                } else if (op < 7) {
                    // another allocator's first fit against the published capacity minus everything allocated
                    ResourceClaim c = claim("k" + step, null, null, 1);
                    firstFit(live, List.of(n1, n2), 1 + rnd.nextInt(6), 5 * (1 + rnd.nextInt(4))).ifPresent(res -> {
                        ResourceClaim done = allocated(c, new io.fabric8.kubernetes.api.model.resource.v1.AllocationResultBuilder()
                                .withNewDevices().addToResults(res).endDevices().build());
                        if (countOthers) {
                            a.claimChanged(done);
                        }
                        live.put(c.getMetadata().getUid(), done);
                    });
                } else if (!live.isEmpty()) {
                    String uid = new ArrayList<>(live.keySet()).get(rnd.nextInt(live.size()));
                    a.claimGone(live.remove(uid));
                }
                String v = violation(live, seed, step);
                if (v != null) {
                    violations.add(v);
                    break;
                }
            }
        }
        return violations;
    }

    private static Optional<DeviceRequestAllocationResult> firstFit(Map<String, ResourceClaim> live, List<PublishedNode> nodes,
                                                                    int memGiB, int cores) {
        for (PublishedNode n : nodes) {
            for (PublishedGpu g : n.gpus()) {
                long[] used = used(live, g);
                if (used[0] + memGiB * GIB <= g.memory().value() && used[1] + cores <= 100 && used[2] + 1 <= g.tenants().value()) {
                    return Optional.of(new DeviceRequestAllocationResultBuilder().withRequest("gpu").withDriver(DraNames.DRIVER)
                            .withPool(g.pool()).withDevice(g.device()).withShareID("s").withConsumedCapacity(Map.of(
                                    "memory", new Quantity(memGiB + "Gi"), "cores", new Quantity(Integer.toString(cores)),
                                    "tenants", new Quantity("1"))).build());
                }
            }
        }
        return Optional.empty();
    }

    /**
     * A replay's nodes carry host CPU and memory: what a decision reserved with the pod's claim stays with the claim
     * when its allocation comes back through the informer and when the published nodes change, and returns with it.
     */
    @Test
    void thePodsCpuAndMemoryStayWithItsClaimUntilTheClaimIsGone() {
        DraAllocator a = allocator(withHost(node("n1", 2, 80, "H100"), 32_000));
        ResourceClaim c = claim("c", "10Gi", "30", 1);
        HostRequest host = new HostRequest(8_000, 16 * GIB);
        DraAllocator.Decision d = a.decide(List.of(c), CLASSES, host);
        AllocationResult r = assertInstanceOf(DraAllocator.Decision.Allocate.class, d, d::toString).claims().get(0).allocation();
        assertEquals(host, a.ledger().placement("uid-c").orElseThrow().claim().host());
        ResourceClaim written = allocated(c, r);
        a.claimChanged(written);
        assertEquals(host, a.ledger().placement("uid-c").orElseThrow().claim().host(), "kept when the allocation comes back");
        a.inventory(List.of(withHost(node("n1", 3, 80, "H100"), 32_000)));
        assertEquals(host, a.ledger().placement("uid-c").orElseThrow().claim().host(), "kept when the ledger is rebuilt");
        // 24 of the 32 cores are left: a pod asking for 30 does not fit until the claim is gone
        ResourceClaim big = claim("big", "10Gi", "30", 1);
        assertInstanceOf(DraAllocator.Decision.Refused.class, a.decide(List.of(big), CLASSES, new HostRequest(30_000, GIB)));
        a.claimGone(written);
        assertTrue(a.ledger().placement("uid-c").isEmpty());
        assertInstanceOf(DraAllocator.Decision.Allocate.class, a.decide(List.of(big), CLASSES, new HostRequest(30_000, GIB)));
    }

    /** The node with a host capacity of {@code cpuMillis} and 256 GiB (nodes read from slices have none). */
    static PublishedNode withHost(PublishedNode n, long cpuMillis) {
        Node q = n.node();
        return new PublishedNode(new Node(q.name(), q.labels(), q.gpus(), q.topology(), HostCapacity.of(cpuMillis, 256 * GIB)), n.gpus());
    }

    private static long[] used(Map<String, ResourceClaim> live, PublishedGpu g) {
        long[] u = new long[3];
        for (ResourceClaim c : live.values()) {
            for (DeviceRequestAllocationResult r : c.getStatus().getAllocation().getDevices().getResults()) {
                if (r.getPool().equals(g.pool()) && r.getDevice().equals(g.device())) {
                    u[0] += Quantity.getAmountInBytes(r.getConsumedCapacity().get("memory")).longValue();
                    u[1] += Quantity.getAmountInBytes(r.getConsumedCapacity().get("cores")).longValue();
                    u[2] += 1;
                }
            }
        }
        return u;
    }

    /** The first device over its memory, cores or tenants, or null. */
    private static String violation(Map<String, ResourceClaim> live, long seed, int step) {
        for (String n : List.of("n1", "n2")) {
            for (int i = 0; i < 2; i++) {
                PublishedGpu g = node(n, 2, 16, "T4").gpus().get(i);
                long[] u = used(live, g);
                if (u[0] > 16 * GIB || u[1] > 100 || u[2] > g.tenants().value()) {
                    return "seed " + seed + " step " + step + " " + n + "/gpu-" + i + ": memory " + u[0] + ", cores " + u[1]
                            + ", tenants " + u[2];
                }
            }
        }
        return null;
    }
}
