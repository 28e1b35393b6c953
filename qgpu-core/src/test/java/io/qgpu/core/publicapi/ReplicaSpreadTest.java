package io.qgpu.core.publicapi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.Gang;
import io.qgpu.api.GangResult;
import io.qgpu.api.GangScope;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.Selectors;
import io.qgpu.api.TopologyLevel;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.LedgerSnapshot;
import io.qgpu.core.placement.GangPlacer;
import io.qgpu.core.placement.PlacementEngine;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Replicas of one request ({@link Gang#replicas}, {@link GangScope#sameNodeSpread()}) through the public
 * API: distinct GPUs first, then stacked as evenly as the GPUs' room allows, all reserved and released as
 * one. The cases with equal GPUs are the inputs and expected outputs of NVIDIA's device plugin tests for
 * its {@code distributed} replica policy, in our words: a GPU's "replicas" are its tenant slots here
 * ({@link GranularityRules#maxTenants}), a replica taken by someone else is another tenant on the GPU.
 */
class ReplicaSpreadTest {

    static final long GIB = GpuDevice.GIB;

    /** {@code gpus} x 16 GiB GPUs on PCIe with {@code slots} tenant slots each. */
    static Ledger ledger(int slots, int... gpusPerNode) {
        List<Node> nodes = new ArrayList<>();
        for (int n = 0; n < gpusPerNode.length; n++) {
            Node.Builder b = Node.builder("n" + n).defaultLink(new GpuLink.Pcie(TopologyLevel.HOSTBRIDGE));
            for (int i = 0; i < gpusPerNode[n]; i++) {
                b.gpu(GpuDevice.builder("GPU-" + n + "-" + i).index(i).model("Tesla T4").memoryGiB(16).build());
            }
            nodes.add(b.build());
        }
        GranularityRules rules = GranularityRules.ofDefaults().toBuilder().maxTenantsPerGpu(slots)
                .memoryPerTenantSlotBytes(0).build();
        return Ledger.create(rules, nodes);
    }

    static PlacementEngine engine(Ledger l, PlacementPolicy gpuPolicy) {
        return PlacementEngine.builder(l).policies(PlacementPolicy.BINPACK, gpuPolicy).build();
    }

    static Claim replica(String id) {
        return Claim.builder(id).memoryGiB(1).compute(0, 100).build();
    }

    /** Another tenant on one GPU (a replica taken by someone else). */
    static void occupy(PlacementEngine e, String id, String gpu) {
        Claim c = Claim.builder(id).memoryGiB(1).compute(0, 100).selectors(Selectors.builder().includeUuid(gpu).build()).build();
        assertInstanceOf(PlacementResult.Placed.class, e.place(c));
    }

    static GangResult.Placed placed(GangResult r) {
        return assertInstanceOf(GangResult.Placed.class, r, () -> r instanceof GangResult.Unschedulable u ? u.summary() : "");
    }

    /** Replicas per GPU, by GPU UUID (GPUs without one are absent). */
    static Map<String, Integer> perGpu(GangResult.Placed p) {
        Map<String, Integer> out = new TreeMap<>();
        for (Placement x : p.placements()) {
            assertEquals(1, x.gpuUuids().size());
            out.merge(x.gpuUuids().get(0), 1, Integer::sum);
        }
        return out;
    }

    @ParameterizedTest
    @EnumSource(value = PlacementPolicy.class, names = {"BINPACK", "SPREAD"})
    void twoReplicasWithOneSlotTakenOnGpu1GetOneOfEachGpu(PlacementPolicy gpuPolicy) {
        // the case, whatever the GPU policy: binpack alone would stack both on the fuller GPU 1
        Ledger l = ledger(2, 2);
        PlacementEngine e = engine(l, gpuPolicy);
        occupy(e, "other", "GPU-0-1");
        GangResult.Placed p = placed(new GangPlacer(e).place(Gang.replicas(replica("pod"), 2)));
        assertEquals(Map.of("GPU-0-0", 1, "GPU-0-1", 1), perGpu(p));
        assertEquals(List.of("pod-0", "pod-1"), p.placements().stream().map(Placement::tenantId).toList());
    }

    @Test
    void separateClaimsUnderBinpackStackWhereTheGangSpreads() {
        // the contrast that shows the spread comes from the gang, not from the policy
        Ledger l = ledger(4, 2);
        PlacementEngine e = engine(l, PlacementPolicy.BINPACK);
        PlacementResult.Placed a = assertInstanceOf(PlacementResult.Placed.class, e.place(replica("a")));
        PlacementResult.Placed b = assertInstanceOf(PlacementResult.Placed.class, e.place(replica("b")));
        assertEquals(a.placement().gpuUuids(), b.placement().gpuUuids());
        e.release("a");
        e.release("b");
        assertEquals(Map.of("GPU-0-0", 1, "GPU-0-1", 1), perGpu(placed(new GangPlacer(e).place(Gang.replicas(replica("pod"), 2)))));
    }

    // ------------------------------------------------------------ NVIDIA's distributed cases, our words

    /** Replicas per GPU when {@code n} replicas of one pod are placed on {@code l} under binpack. */
    private static Map<String, Integer> binpackedReplicas(Ledger l, int n) {
        return perGpu(placed(new GangPlacer(engine(l, PlacementPolicy.BINPACK)).place(Gang.replicas(replica("pod"), n))));
    }

    @Test
    void twoGpusOfFourSlotsTwoReplicasOneOfEach() {
        assertEquals(Map.of("GPU-0-0", 1, "GPU-0-1", 1), binpackedReplicas(ledger(4, 2), 2));
    }

    @Test
    void threeGpusOfTwoSlotsThreeReplicasOneOfEach() {
        assertEquals(Map.of("GPU-0-0", 1, "GPU-0-1", 1, "GPU-0-2", 1), binpackedReplicas(ledger(2, 3), 3));
    }

    @Test
    void twoGpusOfFourSlotsFourReplicasTwoEach() {
        assertEquals(Map.of("GPU-0-0", 2, "GPU-0-1", 2), binpackedReplicas(ledger(4, 2), 4));
    }

    @Test
    void oneReplicaOnOneGpu() {
        assertEquals(Map.of("GPU-0-0", 1), binpackedReplicas(ledger(4, 1), 1));
    }

    @Test
    void moreReplicasThanSlotsIsRefusedAndWritesNothing() {
        Ledger l = ledger(2, 1);
        LedgerSnapshot before = l.snapshot();
        GangResult r = new GangPlacer(engine(l, PlacementPolicy.BINPACK)).place(Gang.replicas(replica("pod"), 5));
        GangResult.Unschedulable u = assertInstanceOf(GangResult.Unschedulable.class, r);
        assertEquals(before, l.snapshot());
        assertTrue(u.summary().contains("pod-2"), u.summary());   // the third replica is the one that did not fit
    }

    @Test
    void aFullGpuLeavesTheOtherToTakeBoth() {
        Ledger l = ledger(4, 2);
        PlacementEngine e = engine(l, PlacementPolicy.SPREAD);
        for (int i = 0; i < 4; i++) {
            occupy(e, "other-" + i, "GPU-0-0");
        }
        assertEquals(Map.of("GPU-0-1", 2), perGpu(placed(new GangPlacer(e).place(Gang.replicas(replica("pod"), 2)))));
    }

    // ------------------------------------------------------------ even stacking among other tenants

    @Test
    void stacksEvenlyAroundOtherTenants() {
        Ledger l = ledger(4, 2);
        PlacementEngine e = engine(l, PlacementPolicy.BINPACK);
        occupy(e, "other", "GPU-0-0");   // room 3 and 4: 2 + 2 still fits, and binpack must not make it 3 + 1
        assertEquals(Map.of("GPU-0-0", 2, "GPU-0-1", 2), perGpu(placed(new GangPlacer(e).place(Gang.replicas(replica("pod"), 4)))));
    }

    @Test
    void unevenOnlyWhereTheRoomForcesIt() {
        Ledger l = ledger(4, 2);
        PlacementEngine e = engine(l, PlacementPolicy.SPREAD);
        for (int i = 0; i < 3; i++) {
            occupy(e, "other-" + i, "GPU-0-0");   // room 1 and 4
        }
        assertEquals(Map.of("GPU-0-0", 1, "GPU-0-1", 3), perGpu(placed(new GangPlacer(e).place(Gang.replicas(replica("pod"), 4)))));
    }

    @Test
    void otherTenantsLimitRoomButDoNotPushReplicasAway() {
        // where NVIDIA's distributed policy (ranked by every taken replica) would put both on the empty GPU 1
        Ledger l = ledger(4, 2);
        PlacementEngine e = engine(l, PlacementPolicy.SPREAD);
        for (int i = 0; i < 3; i++) {
            occupy(e, "other-" + i, "GPU-0-0");
        }
        assertEquals(Map.of("GPU-0-0", 1, "GPU-0-1", 1), perGpu(placed(new GangPlacer(e).place(Gang.replicas(replica("pod"), 2)))));
    }

    /**
     * Seeded random rooms and counts: whenever the gang is placed, no GPU holds two replicas more than
     * another GPU that still has room (the counts are as even as the room allows), and the gang is
     * refused exactly when the node's room is smaller than the count.
     */
    @Test
    void countsAreAsEvenAsTheRoomAllows() {
        Random rnd = new Random(42);
        for (int round = 0; round < 150; round++) {
            int gpus = 1 + rnd.nextInt(4);
            int slots = 1 + rnd.nextInt(5);
            Ledger l = ledger(slots, gpus);
            PlacementEngine e = engine(l, rnd.nextBoolean() ? PlacementPolicy.BINPACK : PlacementPolicy.SPREAD);
            int room = 0;
            int[] free = new int[gpus];
            for (int g = 0; g < gpus; g++) {
                int others = rnd.nextInt(slots + 1);
                for (int k = 0; k < others; k++) {
                    occupy(e, "o-" + g + "-" + k, "GPU-0-" + g);
                }
                free[g] = slots - others;
                room += free[g];
            }
            int count = 1 + rnd.nextInt(gpus * slots);
            GangResult r = new GangPlacer(e).place(Gang.replicas(replica("pod"), count));
            String what = "round " + round + ": free " + java.util.Arrays.toString(free) + ", " + count + " replicas";
            if (count > room) {
                assertInstanceOf(GangResult.Unschedulable.class, r, what);
                continue;
            }
            Map<String, Integer> got = perGpu(placed(r));
            for (int i = 0; i < gpus; i++) {
                for (int j = 0; j < gpus; j++) {
                    int ci = got.getOrDefault("GPU-0-" + i, 0);
                    int cj = got.getOrDefault("GPU-0-" + j, 0);
                    assertTrue(ci <= cj + 1 || cj == free[j], what + ": " + got);
                }
            }
        }
    }

    // ------------------------------------------------------------ nodes, ledger, validation

    @Test
    void goesToANodeThatHoldsEveryReplica() {
        Ledger l = ledger(2, 1, 2);   // n0: room 2, n1: room 4
        GangResult.Placed p = placed(new GangPlacer(engine(l, PlacementPolicy.BINPACK)).place(Gang.replicas(replica("pod"), 3)));
        assertTrue(p.placements().stream().allMatch(x -> x.nodeName().equals("n1")));
        assertEquals(List.of(1, 2), perGpu(p).values().stream().sorted().toList());
    }

    @Test
    void everyReplicaIsReservedAndReleasedAsOne() {
        Ledger l = ledger(4, 2);
        PlacementEngine e = engine(l, PlacementPolicy.BINPACK);
        occupy(e, "other", "GPU-0-1");
        LedgerSnapshot before = l.snapshot();
        GangPlacer placer = new GangPlacer(e);
        Gang pod = Gang.replicas(replica("pod"), 3);
        GangResult.Placed p = placed(placer.place(pod));
        assertEquals(4, l.size());
        for (Placement x : p.placements()) {
            assertEquals(x, l.placement(x.tenantId()).orElseThrow());
            assertEquals(replica("pod").memoryPerGpuBytes(), x.slices().get(0).memoryBytes());
            assertEquals(Selectors.none(), x.claim().selectors());   // the member's own claim, not the trial's restriction
        }
        assertEquals(p.placements(), placer.release(pod));
        assertEquals(before, l.snapshot());
        assertEquals(List.of(), placer.release(pod));
    }

    @Test
    void aReplicaIdAlreadyHeldRefusesTheGang() {
        Ledger l = ledger(4, 2);
        PlacementEngine e = engine(l, PlacementPolicy.BINPACK);
        assertInstanceOf(PlacementResult.Placed.class, e.place(replica("pod-1")));
        GangResult.Unschedulable u = assertInstanceOf(GangResult.Unschedulable.class,
                new GangPlacer(e).place(Gang.replicas(replica("pod"), 2)));
        assertEquals(1, l.size(), u.summary());
    }

    @Test
    void theFactoryFailsFastNamingTheField() {
        InvalidValueException none = assertThrows(InvalidValueException.class, () -> Gang.replicas(replica("pod"), 0));
        assertEquals("gang[pod].replicas", none.field());
        assertEquals(0, none.value());
        InvalidValueException many = assertThrows(InvalidValueException.class,
                () -> Gang.replicas(replica("pod"), Gang.MAX_REPLICAS + 1));
        assertEquals("gang[pod].replicas", many.field());
        InvalidValueException two = assertThrows(InvalidValueException.class,
                () -> Gang.replicas(Claim.builder("pod").gpus(2).memoryGiB(1).build(), 2));
        assertEquals("gang[pod].replica.gpuCount", two.field());
        assertEquals(2, two.value());
        assertThrows(InvalidValueException.class, () -> Gang.replicas(null, 2));
    }

    @Test
    void aHandBuiltSpreadGangMayMixHostOnlyAndTwoGpuMembers() {
        Ledger l = ledger(4, 3);
        Gang g = Gang.builder("job").together(GangScope.sameNodeSpread())
                .member(Claim.builder("job-two").gpus(2).memoryGiB(1).build())
                .member(replica("job-one"))
                .member(Claim.builder("job-cpu").hostOnly().cpuMillis(100).build())
                .build();
        GangResult.Placed p = placed(new GangPlacer(engine(l, PlacementPolicy.BINPACK)).place(g));
        // the two-GPU member takes two GPUs, the one-GPU member the third (the fewest members there)
        assertEquals(Map.of("GPU-0-0", 1, "GPU-0-1", 1, "GPU-0-2", 1), perGpuAnySize(p));
        assertEquals(List.of(), p.placements().get(2).gpuUuids());
    }

    static Map<String, Integer> perGpuAnySize(GangResult.Placed p) {
        Map<String, Integer> out = new TreeMap<>();
        p.placements().forEach(x -> x.gpuUuids().forEach(g -> out.merge(g, 1, Integer::sum)));
        return out;
    }

    @Test
    void userSelectorsStillApply() {
        Ledger l = ledger(4, 3);
        Claim c = Claim.builder("pod").memoryGiB(1).compute(0, 100)
                .selectors(Selectors.builder().excludeUuid("GPU-0-1").build()).build();
        GangResult.Placed p = placed(new GangPlacer(engine(l, PlacementPolicy.BINPACK)).place(Gang.replicas(c, 4)));
        assertEquals(Map.of("GPU-0-0", 2, "GPU-0-2", 2), perGpu(p));
    }
}
