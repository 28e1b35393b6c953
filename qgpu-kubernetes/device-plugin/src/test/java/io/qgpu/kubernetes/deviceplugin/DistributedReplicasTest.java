package io.qgpu.kubernetes.deviceplugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.Topology;
import io.qgpu.api.TopologyLevel;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementEngine;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Replicas of one request as NVIDIA's device plugin places them with its {@code distributed} policy: the
 * candidate GPUs ranked by how many of their replicas are already taken, fewest first, one replica per GPU
 * in turn. The table holds the cases of NVIDIA's own tests for that policy, translated to this plugin's ids
 * ({@code gpu0::r} is {@code GPU-0::r} here; a GPU's replicas are its tenant slots), and further cases of
 * ours with replicas already taken. Each runs through {@code GetPreferredAllocation} (the pool's
 * {@code preferred}) and then {@code Allocate} of the ids it chose, on a pool without sockets or disk.
 *
 * <p>Two deliberate differences: where the replicas stack only unevenly (5 on 2 GPUs: 3 + 2), NVIDIA hands
 * them out; this plugin's {@code GetPreferredAllocation} chooses as NVIDIA does, but {@code Allocate}
 * refuses with {@code RESOURCE_EXHAUSTED}, because a container's memory limit is the same on each of its
 * GPUs. And where NVIDIA's ranking stacks replicas although distinct GPUs have room, this plugin spreads them
 * ({@link #distinctGpusWhileTheyHaveRoomWhereNvidiaWouldStack}).
 */
class DistributedReplicasTest {
    static final long SLOT = GpuDevice.GIB;

    /** {@code gpus} 16 GiB GPUs on PCIe with {@code replicas} ids (tenant slots) each, engine as the plugin's. */
    static VirtualDevicePool pool(int gpus, int replicas) {
        List<GpuDevice> gs = new ArrayList<>();
        for (int i = 0; i < gpus; i++) {
            gs.add(GpuDevice.builder("GPU-" + i).index(i).model("Tesla T4").memoryBytes(16 * GpuDevice.GIB).build());
        }
        Node node = new Node("node-a", Map.of(), gs, Topology.uniform(gpus, new GpuLink.Pcie(TopologyLevel.HOSTBRIDGE)));
        GranularityRules rules = GranularityRules.custom().maxTenantsPerGpu(replicas).memoryPerTenantSlotBytes(0).build();
        Ledger ledger = Ledger.create(rules, List.of(node));
        PlacementEngine engine = PlacementEngine.builder(ledger).policies(PlacementPolicy.BINPACK, PlacementPolicy.SPREAD).build();
        return new VirtualDevicePool(node, ledger, engine, PodDecisions.none(), new PoolContentionTest.MemoryStore(), SLOT);
    }

    static String id(int gpu, int replica) {
        return VirtualDevice.idOf("GPU-" + gpu, replica);
    }

    /** Chosen ids per home GPU index. */
    static Map<Integer, Integer> perHome(List<String> ids) {
        Map<Integer, Integer> out = new TreeMap<>();
        ids.forEach(i -> out.merge(Integer.parseInt(VirtualDevice.homeOf(i).substring(4)), 1, Integer::sum));
        return out;
    }

    /** Replicas per physical GPU index of an allocation (one per GPU of a plain allocation). */
    static Map<Integer, Integer> perGpu(Allocation a) {
        Map<Integer, Integer> out = new TreeMap<>();
        if (a.replicas().isEmpty()) {
            a.gpus().forEach(g -> out.merge(Integer.parseInt(g.substring(4)), 1, Integer::sum));
        } else {
            for (Placement p : a.replicas()) {
                out.merge(Integer.parseInt(p.gpuUuids().get(0).substring(4)), 1, Integer::sum);
            }
        }
        return out;
    }

    /**
     * One case.
     *
     * @param taken    ids held by live containers (the kubelet does not offer them)
     * @param gone     ids held by containers that are gone (allocated before, then offered again by the kubelet)
     * @param offered  the kubelet's available ids; null: every id not in {@code taken}
     * @param expected replicas per GPU index as NVIDIA's policy places them; null: the request is refused
     * @param tie      NVIDIA breaks a tie by the order of its heap: compare the counts, not which GPU has which
     * @param uneven   the counts are uneven: {@code Allocate} refuses them (the deliberate difference)
     */
    record Case(String name, int gpus, int replicas, List<String> taken, List<String> gone, List<String> offered,
                int size, Map<Integer, Integer> expected, boolean tie, boolean uneven) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Case nvidia(String name, int gpus, int replicas, List<String> offered, int size, Map<Integer, Integer> expected) {
        return new Case("NVIDIA: " + name, gpus, replicas, List.of(), List.of(), offered, size, expected, false, false);
    }

    static Stream<Case> cases() {
        return Stream.of(
                nvidia("2 GPUs x 4 replicas, 2 asked: one of each", 2, 4, null, 2, Map.of(0, 1, 1, 1)),
                nvidia("3 GPUs x 2 replicas, 3 asked: one of each", 3, 2, null, 3,
                        Map.of(0, 1, 1, 1, 2, 1)),
                nvidia("2 GPUs x 4 replicas, 4 asked: two of each", 2, 4, null, 4, Map.of(0, 2, 1, 2)),
                nvidia("1 GPU x 4 replicas, 1 asked", 1, 4, null, 1, Map.of(0, 1)),
                nvidia("1 GPU x 2 replicas, 5 asked: refused", 1, 2, null, 5, null),
                new Case("NVIDIA: 2 GPUs x 4 replicas, GPU 0 full, 2 asked: both of GPU 1", 2, 4,
                        List.of(id(0, 0), id(0, 1), id(0, 2), id(0, 3)), List.of(), null, 2, Map.of(1, 2), false, false),
                new Case("NVIDIA: 2 GPUs x 2 replicas, GPU-1::0 taken, 2 asked: one of each", 2, 2, List.of(id(1, 0)), List.of(),
                        List.of(id(0, 0), id(0, 1), id(1, 1)), 2, Map.of(0, 1, 1, 1), false, false),
                nvidia("the default policy: 3 GPUs x 4 replicas, 3 asked: one of each", 3, 4, null, 3, Map.of(0, 1, 1, 1, 2, 1)),
                nvidia("against packing: 2 GPUs x 4 replicas, 4 asked: two of each", 2, 4, null, 4, Map.of(0, 2, 1, 2)),

                // ours: replicas already taken, as NVIDIA counts them
                new Case("issue 41 item 5: GPU-1::0 taken, GPU-1::1 held by a container that is gone", 2, 2,
                        List.of(id(1, 0)), List.of(id(1, 1)), List.of(id(0, 0), id(0, 1), id(1, 1)), 2, Map.of(0, 1, 1, 1),
                        false, false),
                new Case("one replica taken on GPU 0 of three: the two GPUs with none taken", 3, 2, List.of(id(0, 0)),
                        List.of(), null, 2, Map.of(1, 1, 2, 1), false, false),
                new Case("a container that is gone on each GPU counts for none", 2, 4, List.of(),
                        List.of(id(0, 0), id(0, 1), id(1, 0)), null, 4, Map.of(0, 2, 1, 2), false, false),
                new Case("2 GPUs, 4 replicas each, allocate 5: 3 + 2 (Allocate refuses)", 2, 4, List.of(), List.of(), null, 5,
                        Map.of(0, 3, 1, 2), true, true),
                new Case("one taken on GPU 1, allocate 3: GPU 0 takes two (Allocate refuses)", 2, 4, List.of(id(1, 0)),
                        List.of(), null, 3, Map.of(0, 2, 1, 1), false, true));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void placesReplicasAsTheDistributedPolicy(Case c) {
        VirtualDevicePool pool = pool(c.gpus(), c.replicas());
        for (String t : c.taken()) {
            pool.allocate(List.of(List.of(t)));
        }
        for (String g : c.gone()) {
            pool.allocate(List.of(List.of(g)));
        }
        List<String> offered = c.offered() != null ? c.offered()
                : pool.devices().stream().map(VirtualDevice::id).filter(i -> !c.taken().contains(i)).toList();
        if (c.expected() == null) {
            PluginException e = assertThrows(PluginException.class, () -> pool.preferred(offered, List.of(), c.size()));
            assertEquals(Status.Code.INVALID_ARGUMENT, e.code(), e.getMessage());
            return;
        }
        List<String> chosen = pool.preferred(offered, List.of(), c.size());
        assertEquals(c.size(), chosen.size(), chosen.toString());
        assertTrue(offered.containsAll(chosen), chosen + " not all offered");
        assertEquals(chosen.size(), chosen.stream().distinct().count(), chosen.toString());
        if (c.tie()) {
            assertEquals(c.expected().values().stream().sorted().toList(), perHome(chosen).values().stream().sorted().toList(),
                    "GetPreferredAllocation " + chosen);
        } else {
            assertEquals(c.expected(), perHome(chosen), "GetPreferredAllocation " + chosen);
        }
        int before = pool.allocations().size();
        if (c.uneven()) {
            PluginException e = assertThrows(PluginException.class, () -> pool.allocate(List.of(chosen)));
            assertEquals(Status.Code.RESOURCE_EXHAUSTED, e.code(), e.getMessage());
            assertEquals(before, pool.allocations().size());
            return;
        }
        Allocation a = pool.allocate(List.of(chosen)).get(0);
        assertEquals(c.expected().keySet().size(), a.gpus().size(), "Allocate " + a.gpuOf());
        if (!c.tie()) {
            assertEquals(c.expected(), perGpu(a), "Allocate " + a.gpuOf());
        }
        assertEquals(before - goneReleasedBy(c, chosen) + 1, pool.allocations().size());
    }

    /** The gone containers whose ids the request hands out again: Allocate releases them. */
    private static int goneReleasedBy(Case c, List<String> chosen) {
        return (int) c.gone().stream().filter(chosen::contains).count();
    }

    /**
     * The case step by step: two GPUs of two replicas each, GPU 1's first replica taken; its second was
     * held by a container that is gone, so the kubelet offers it. NVIDIA counts one replica taken on GPU 1 and
     * gives one replica of each GPU; so must this plugin, and Allocate must give the container both GPUs.
     */
    @Test
    void aGoneContainersReplicaIsNotCountedAsTaken() {
        VirtualDevicePool pool = pool(2, 2);
        pool.allocate(List.of(List.of(id(1, 1))));   // a container that is gone by now
        pool.allocate(List.of(List.of(id(1, 0))));   // a live one
        List<String> offered = List.of(id(0, 0), id(0, 1), id(1, 1));
        List<String> chosen = pool.preferred(offered, List.of(), 2);
        assertEquals(Map.of(0, 1, 1, 1), perHome(chosen), "one replica of each GPU: " + chosen);
        Allocation a = pool.allocate(List.of(chosen)).get(0);
        assertEquals(List.of("GPU-0", "GPU-1"), a.gpus().stream().sorted().toList(), "two GPUs' compute: " + a.gpuOf());
        assertEquals(2, pool.allocations().size(), "the gone container's allocation released");
    }

    /**
     * The deliberate difference where NVIDIA's policy stacks although distinct GPUs have room: two replicas
     * asked, GPU 0 with three of its four replicas taken, GPU 1 with none. NVIDIA ranks GPU 1 first both times
     * (0, then 1 taken, against 3) and gives two replicas of GPU 1, one GPU's compute; this plugin gives one of
     * each GPU, as a container asking for two replicas expects two GPUs whenever two have room.
     */
    @Test
    void distinctGpusWhileTheyHaveRoomWhereNvidiaWouldStack() {
        VirtualDevicePool pool = pool(2, 4);
        for (int r = 0; r < 3; r++) {
            pool.allocate(List.of(List.of(id(0, r))));
        }
        List<String> chosen = pool.preferred(List.of(id(0, 3), id(1, 0), id(1, 1), id(1, 2), id(1, 3)), List.of(), 2);
        assertEquals(Map.of(0, 1, 1, 1), perHome(chosen), chosen.toString());
        assertEquals(Map.of(0, 1, 1, 1), perGpu(pool.allocate(List.of(chosen)).get(0)));
    }

    /**
     * The policy as NVIDIA's device plugin states it, on the kubelet's view (our own code): each step, the GPU
     * with the fewest replicas taken (its ids minus those offered, plus those picked), ties to the GPU picked
     * from least in this request, then the lowest index, gives one offered id. Returns replicas per GPU index.
     */
    static Map<Integer, Integer> nvidiaDistributed(int gpus, int replicas, List<String> offered, int size) {
        int[] taken = new int[gpus];
        int[] left = new int[gpus];
        int[] picked = new int[gpus];
        java.util.Arrays.fill(taken, replicas);
        for (String o : offered) {
            int g = Integer.parseInt(VirtualDevice.homeOf(o).substring(4));
            taken[g]--;
            left[g]++;
        }
        Map<Integer, Integer> out = new TreeMap<>();
        for (int n = 0; n < size; n++) {
            int best = -1;
            for (int g = 0; g < gpus; g++) {
                if (left[g] > 0 && (best < 0 || taken[g] < taken[best] || taken[g] == taken[best] && picked[g] < picked[best])) {
                    best = g;
                }
            }
            taken[best]++;
            left[best]--;
            picked[best]++;
            out.merge(best, 1, Integer::sum);
        }
        return out;
    }

    /**
     * Seeded random nodes (1-4 GPUs of 1-4 replicas), live and gone containers of one replica each, and
     * requests no larger than the offer: the preference spans at least as many distinct GPUs as NVIDIA's policy
     * gives on the kubelet's view (one replica per GPU wherever NVIDIA's are all on distinct GPUs), and
     * {@code Allocate} of it, where it does not refuse an uneven stack, gives the container at least that many
     * GPUs.
     */
    @Test
    void neverFewerDistinctGpusThanNvidiasPolicy() {
        java.util.Random rnd = new java.util.Random(41);
        for (int round = 0; round < 300; round++) {
            int gpus = 1 + rnd.nextInt(4);
            int replicas = 1 + rnd.nextInt(4);
            VirtualDevicePool pool = pool(gpus, replicas);
            List<String> all = pool.devices().stream().map(VirtualDevice::id).toList();
            List<String> taken = new ArrayList<>();
            List<String> gone = new ArrayList<>();
            for (String i : all) {
                int r = rnd.nextInt(4);
                if (r == 0) {
                    taken.add(i);
                } else if (r == 1) {
                    gone.add(i);
                }
            }
            gone.forEach(i -> pool.allocate(List.of(List.of(i))));
            taken.forEach(i -> pool.allocate(List.of(List.of(i))));
            List<String> offered = all.stream().filter(i -> !taken.contains(i)).toList();
            if (offered.isEmpty()) {
                continue;
            }
            int size = 1 + rnd.nextInt(offered.size());
            String what = "round " + round + ": " + gpus + " x " + replicas + ", taken " + taken + ", gone " + gone + ", " + size;
            Map<Integer, Integer> nvidia = nvidiaDistributed(gpus, replicas, offered, size);
            List<String> chosen = pool.preferred(offered, List.of(), size);
            Map<Integer, Integer> ours = perHome(chosen);
            assertTrue(ours.size() >= nvidia.size(), what + ": ours " + ours + ", NVIDIA's " + nvidia);
            if (nvidia.size() == size) {
                assertEquals(size, ours.size(), what + ": ours " + ours + ", NVIDIA's " + nvidia);
            }
            try {
                Allocation a = pool.allocate(List.of(chosen)).get(0);
                assertTrue(a.gpus().size() >= nvidia.size(), what + ": Allocate " + perGpu(a) + ", NVIDIA's " + nvidia);
            } catch (PluginException e) {
                assertEquals(Status.Code.RESOURCE_EXHAUSTED, e.code(), what);
                assertTrue(e.getMessage().contains("only unevenly"), what + ": " + e.getMessage());
            }
        }
    }

    /** GetPreferredAllocation changes nothing: the gone container's allocation stays until its id is handed out. */
    @Test
    void thePreferenceChangesNothing() {
        VirtualDevicePool pool = pool(2, 2);
        pool.allocate(List.of(List.of(id(1, 1))));
        pool.allocate(List.of(List.of(id(1, 0))));
        List<Allocation> before = pool.allocations();
        var ledgerBefore = pool.ledger().snapshot();
        pool.preferred(List.of(id(0, 0), id(0, 1), id(1, 1)), List.of(), 2);
        assertEquals(before, pool.allocations());
        assertEquals(ledgerBefore, pool.ledger().snapshot());
    }
}
