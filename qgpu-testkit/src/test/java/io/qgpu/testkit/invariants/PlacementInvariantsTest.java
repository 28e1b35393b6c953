package io.qgpu.testkit.invariants;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Locality;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Selectors;
import io.qgpu.api.Slice;
import io.qgpu.api.TopologyLevel;
import io.qgpu.json.Inventory;
import io.qgpu.testkit.machines.FakeCluster;
import io.qgpu.testkit.machines.Machines;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The oracle on hand-made placements: each invariant is reported, with a message that says what broke. */
class PlacementInvariantsTest {

    private final Inventory inv = FakeCluster.builder()
            .nodes(Machines.PCIE_4X_T4, 1, g -> g.label("pool", "a").unhealthyGpus(3))
            .nodes(Machines.GN10XP_2XLARGE40, 1, g -> g.reservedFor(PriorityClass.ONLINE))
            .build();
    private final Node t4 = inv.nodes().get(0);
    private final Node v100 = inv.nodes().get(1);

    private String gpu(int i) {
        return t4.gpus().get(i).uuid();
    }

    private static Placement on(Claim c, Node node, int... positions) {
        List<Slice> slices = new ArrayList<>();
        for (int p : positions) {
            GpuDevice g = node.gpus().get(p);
            long mem = c.exclusive() ? g.memoryBytes() : c.memoryPerGpuBytes();
            slices.add(new Slice(g.uuid(), mem, c.computeRequest(), c.computeLimit()));
        }
        return new Placement(c, node.name(), slices);
    }

    private List<Violation> check(Placement... ps) {
        return PlacementInvariants.check(inv, List.of(ps));
    }

    private static void only(Invariant expected, List<Violation> found, String fragment) {
        assertEquals(1, found.size(), () -> "expected one " + expected + " violation, found " + found);
        assertEquals(expected, found.get(0).invariant());
        assertTrue(found.get(0).toString().contains(fragment), () -> found.get(0) + " should mention " + fragment);
    }

    private static Claim gib(String id, int gib) {
        return Claim.builder(id).memoryGiB(gib).build();
    }

    @Test
    void aZeroRequestTenantOnAFullyBookedGpuIsAViolationUnlessTheRulesAdmitIt() {
        Placement zero = on(gib("a", 8), t4, 0);
        Placement full = on(Claim.builder("b").memoryGiB(8).compute(100, 100).build(), t4, 0);
        only(Invariant.COMPUTE, check(zero, full), "request 0");
        Inventory admitting = new Inventory(inv.rules().toBuilder().admitZeroRequestOnBookedGpu(true).build(), inv.nodes());
        assertEquals(List.of(), PlacementInvariants.check(admitting, List.of(zero, full)));
    }

    @Test
    void aValidStateHasNoViolations() {
        assertEquals(List.of(), check(
                on(gib("a", 8), t4, 0),
                on(Claim.builder("b").memoryGiB(8).compute(95, 95).build(), t4, 0),
                on(Claim.builder("c").exclusive().build(), t4, 1),
                on(Claim.builder("d").gpus(1).memoryGiB(4).priority(PriorityClass.ONLINE).build(), v100, 0)));
    }

    @Test
    void memory() {
        only(Invariant.MEMORY, check(on(gib("a", 10), t4, 0), on(gib("b", 7), t4, 0)),
                "pcie-4xt4-0/gpu0 (" + gpu(0) + "): 17 GiB reserved of 16 GiB by [a 10 GiB, b 7 GiB]");
    }

    @Test
    void computePerClass() {
        Claim on1 = Claim.builder("on1").memoryGiB(1).compute(60, 60).priority(PriorityClass.ONLINE).build();
        Claim off1 = Claim.builder("off1").memoryGiB(1).compute(60, 60).build();
        assertEquals(List.of(), check(on(on1, t4, 0), on(off1, t4, 0)), "classes are admitted separately");
        Claim on2 = Claim.builder("on2").memoryGiB(1).compute(45, 45).priority(PriorityClass.ONLINE).build();
        only(Invariant.COMPUTE, check(on(on1, t4, 0), on(off1, t4, 0), on(on2, t4, 0)),
                "online guaranteed compute 105% > 100% by [on1 60%, on2 45%]");
    }

    @Test
    void tenantsPerGpu() {
        List<Placement> ps = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            ps.add(on(gib("t" + i, 1), t4, 2));
        }
        only(Invariant.TENANTS, PlacementInvariants.check(inv, ps), "5 tenants, at most 4 under the qgpu rules");
        Inventory hami = new Inventory(GranularityRules.hami(), inv.nodes());
        assertEquals(List.of(), PlacementInvariants.check(hami, ps), "HAMi allows 10 per GPU");
    }

    /** A hand-made node of two 40 GiB MIG instances (room for ten tenants by memory slots alone). */
    private static Node migNode() {
        return Node.builder("mig-0").defaultLink(new GpuLink.Pcie(TopologyLevel.SINGLE))
                .gpu(GpuDevice.builder("MIG-aaaaaaaa-0000-0000-0000-000000000000").index(0).model("A100 MIG 3g.40gb")
                        .memoryGiB(40).build())
                .gpu(GpuDevice.builder("MIG-bbbbbbbb-0000-0000-0000-000000000000").index(1).model("A100 MIG 3g.40gb")
                        .memoryGiB(40).build())
                .build();
    }

    @Test
    void aSharedMigInstanceIsAViolationUnlessTheRulesShareInstances() {
        Node mig = migNode();
        Placement a = on(gib("a", 8), mig, 0);
        Placement b = on(gib("b", 8), mig, 0);
        // the deliberately broken state: two tenants on one MIG instance under the default rules
        only(Invariant.TENANTS, PlacementInvariants.check(GranularityRules.ofDefaults(), List.of(mig), List.of(a, b)),
                "mig-0/gpu0 (MIG-aaaaaaaa-0000-0000-0000-000000000000): MIG instance shared by 2 tenants, at most 1");
        assertEquals(List.of(), PlacementInvariants.check(GranularityRules.ofDefaults(), List.of(mig),
                List.of(a, on(gib("b", 8), mig, 1))), "one tenant per instance is fine");
        assertEquals(List.of(), PlacementInvariants.check(GranularityRules.ofDefaults().toBuilder().shareMigInstances(true).build(),
                List.of(mig), List.of(a, b)), "the rule lets tenants share an instance");
        assertEquals(List.of(), check(on(gib("a", 1), t4, 2), on(gib("b", 1), t4, 2)), "a GPU-... device is not an instance");
    }

    @Test
    void exclusiveSharedOrNotWhole() {
        Claim ex = Claim.builder("ex").exclusive().build();
        List<Violation> shared = check(on(ex, t4, 1), on(gib("b", 1), t4, 1));
        assertTrue(shared.stream().anyMatch(v -> v.invariant() == Invariant.EXCLUSIVE
                && v.message().contains("held exclusively but shared by [ex exclusive, b]")), shared::toString);
        Placement partial = new Placement(ex, t4.name(), List.of(new Slice(gpu(1), 8 * GpuDevice.GIB, 100, 100)));
        only(Invariant.EXCLUSIVE, check(partial), "exclusive tenant ex holds 8 GiB of its 16 GiB");
    }

    @Test
    void granularity() {
        Claim off = Claim.builder("odd").memoryBytes(1536 * GpuDevice.MIB).compute(33, 40).build();
        List<Violation> v = check(on(off, t4, 0));
        assertEquals(2, v.size(), v::toString);
        assertTrue(v.stream().allMatch(x -> x.invariant() == Invariant.GRANULARITY));
        assertTrue(v.get(0).message().contains("memory 1610612736 bytes is not a multiple of 1073741824"), v::toString);
        assertTrue(v.get(1).message().contains("compute 33/40 is not in units of 5%"), v::toString);
    }

    @Test
    void affinity() {
        Locality x = Locality.none().withAffinity("x");
        assertEquals(List.of(), check(on(Claim.builder("a").memoryGiB(1).locality(x).build(), t4, 0),
                on(Claim.builder("b").memoryGiB(1).locality(x).build(), t4, 0)));
        only(Invariant.AFFINITY, check(on(Claim.builder("a").memoryGiB(1).locality(x).build(), t4, 0),
                on(Claim.builder("b").memoryGiB(1).locality(x).build(), t4, 1)),
                "tenants with affinity label x are on different GPU sets");
        Claim pair = Claim.builder("p").gpus(2).memoryGiB(1).locality(x).build();
        only(Invariant.AFFINITY, check(on(pair, t4, 0, 1), on(Claim.builder("q").gpus(2).memoryGiB(1).locality(x).build(),
                t4, 0, 2)), "p on pcie-4xt4-0");
    }

    @Test
    void antiAffinity() {
        Locality r = Locality.none().withAntiAffinity("r");
        assertEquals(List.of(), check(on(Claim.builder("a").memoryGiB(1).locality(r).build(), t4, 0),
                on(Claim.builder("b").memoryGiB(1).locality(r).build(), t4, 1)));
        only(Invariant.ANTI_AFFINITY, check(on(Claim.builder("a").memoryGiB(1).locality(r).build(), t4, 0),
                on(Claim.builder("b").memoryGiB(1).locality(r).build(), t4, 0)), "2 tenants with anti-affinity label r: [a, b]");
    }

    @Test
    void exclusion() {
        Claim a = Claim.builder("a").memoryGiB(1).locality(Locality.none().withExclusion("team-a")).build();
        Claim a2 = Claim.builder("a2").memoryGiB(1).locality(Locality.none().withExclusion("team-a")).build();
        Claim b = Claim.builder("b").memoryGiB(1).locality(Locality.none().withExclusion("team-b")).build();
        assertEquals(List.of(), check(on(a, t4, 0), on(a2, t4, 0)));
        only(Invariant.EXCLUSION, check(on(a, t4, 0), on(b, t4, 0)), "mixes exclusion labels: [a excl=team-a, b excl=team-b]");
        only(Invariant.EXCLUSION, check(on(a, t4, 0), on(gib("plain", 1), t4, 0)), "plain no label");
    }

    @Test
    void selectors() {
        Claim model = Claim.builder("m").memoryGiB(1).selectors(Selectors.builder().includeModel(Machines.V100_SXM2_32GB)
                .build()).build();
        only(Invariant.SELECTORS, check(on(model, t4, 0)), "model Tesla T4 of " + gpu(0) + " is not selected");
        Claim uuid = Claim.builder("u").memoryGiB(1).selectors(Selectors.builder().excludeUuid(gpu(0)).build()).build();
        only(Invariant.SELECTORS, check(on(uuid, t4, 0)), "GPU " + gpu(0) + " is not selected");
        Claim label = Claim.builder("l").memoryGiB(1).selectors(Selectors.builder().nodeLabel("pool", "b").build()).build();
        only(Invariant.SELECTORS, check(on(label, t4, 0)), "node selector pool=b but node pcie-4xt4-0 has pool=a");
    }

    @Test
    void reservedClassAndUnhealthy() {
        only(Invariant.RESERVED_CLASS, check(on(gib("off", 1), v100, 0)), "kept for online tenants but holds offline tenant off");
        only(Invariant.UNHEALTHY, check(on(gib("sick", 1), t4, 3)), "tenant sick placed on this unhealthy GPU");
    }

    @Test
    void targetsAndDuplicates() {
        Claim c = gib("x", 1);
        only(Invariant.TARGETS, check(new Placement(c, "nowhere", List.of(new Slice(gpu(0), GpuDevice.GIB, 0, 100)))),
                "placed on unknown node nowhere");
        only(Invariant.TARGETS, check(new Placement(c, t4.name(), List.of(new Slice("GPU-x", GpuDevice.GIB, 0, 100)))),
                "placed on unknown GPU GPU-x");
        only(Invariant.TARGETS, check(new Placement(c, v100.name(), List.of(new Slice(gpu(0), GpuDevice.GIB, 0, 100)))),
                "is on node pcie-4xt4-0, not on the placement's node gn10xp-1xv100-0");
        only(Invariant.DUPLICATE_TENANT, check(on(c, t4, 0), on(c, t4, 1)), "tenant is placed more than once");
    }

    @Test
    void assertHoldsListsEveryViolation() {
        AssertionError e = assertThrows(AssertionError.class, () -> PlacementInvariants.assertHolds(inv,
                List.of(on(gib("a", 10), t4, 0), on(gib("b", 7), t4, 0), on(gib("sick", 1), t4, 3))));
        assertTrue(e.getMessage().startsWith("placement invariants: 2 violations"), e.getMessage());
        assertTrue(e.getMessage().contains("\n  - [MEMORY] "), e.getMessage());
        assertTrue(e.getMessage().contains("\n  - [UNHEALTHY] "), e.getMessage());
        assertTrue(e.getMessage().contains("(rule: memory is never oversubscribed)"), e.getMessage());
        PlacementInvariants.assertHolds(inv, List.of(on(gib("a", 10), t4, 0)));
    }

    @Test
    void feasibilityOnAnEmptyCluster() {
        assertTrue(Feasibility.fitsEmpty(inv.rules(), inv.nodes(), gib("a", 16)));
        assertEquals("no node has 1 usable GPUs (best 0)", Feasibility.whyNot(inv.rules(), inv.nodes(), gib("a", 33)).orElseThrow());
        Claim three = Claim.builder("three").gpus(3).exclusive().build();
        assertTrue(Feasibility.fitsEmpty(inv.rules(), inv.nodes(), three), "three healthy T4s");
        Claim four = Claim.builder("four").gpus(4).exclusive().build();
        assertEquals("no node has 4 usable GPUs (best 3)", Feasibility.whyNot(inv.rules(), inv.nodes(), four).orElseThrow());
        Claim online = Claim.builder("on").memoryGiB(20).priority(PriorityClass.ONLINE).build();
        assertTrue(Feasibility.fitsEmpty(inv.rules(), inv.nodes(), online), "the V100 is kept for online");
        assertTrue(Feasibility.whyNot(inv.rules(), inv.nodes(), Claim.builder("x").memoryBytes(GpuDevice.MIB).build())
                .orElseThrow().contains("off the qgpu grid"));
    }
}
