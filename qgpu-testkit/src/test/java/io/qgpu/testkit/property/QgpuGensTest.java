package io.qgpu.testkit.property;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.PriorityClass;
import io.qgpu.json.Inventory;
import io.qgpu.json.QgpuJson;
import io.qgpu.testkit.machines.Machines;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class QgpuGensTest {

    @Test
    void claimsAreAlwaysOnTheGridOfTheRules() {
        for (GranularityRules rules : List.of(GranularityRules.ofDefaults(), GranularityRules.hami(),
                GranularityRules.gpuManager())) {
            Gen<Claim> claims = QgpuGens.claims(ClaimOptions.defaults().withRules(rules));
            SplittableRandom r = new SplittableRandom(3);
            for (int i = 0; i < 2000; i++) {
                Shrinkable<Claim> s = claims.sample(r);
                rules.validate(s.value());
                if (i % 10 == 0) {
                    // and so is every shrink candidate, two levels down
                    s.shrinks().limit(20).forEach(c -> {
                        rules.validate(c.value());
                        c.shrinks().limit(5).forEach(cc -> rules.validate(cc.value()));
                    });
                }
            }
        }
    }

    @Test
    void claimsCoverEveryFeatureTheOptionsAllow() {
        List<Claim> cs = QgpuGens.claims(ClaimOptions.defaults()).samples(1, 3000);
        assertTrue(cs.stream().anyMatch(Claim::exclusive));
        assertTrue(cs.stream().anyMatch(c -> c.gpuCount() == 4));
        assertTrue(cs.stream().anyMatch(c -> c.priority() == PriorityClass.ONLINE));
        assertTrue(cs.stream().anyMatch(c -> c.locality().affinity().isPresent()));
        assertTrue(cs.stream().anyMatch(c -> c.locality().antiAffinity().isPresent()));
        assertTrue(cs.stream().anyMatch(c -> c.locality().exclusion().isPresent()));
        assertTrue(cs.stream().anyMatch(c -> !c.selectors().includeModels().isEmpty()));
        assertTrue(cs.stream().anyMatch(c -> !c.selectors().nodeLabels().isEmpty()));
        assertTrue(cs.stream().anyMatch(c -> c.memoryPerGpuBytes() > 32 * GpuDevice.GIB));
        assertTrue(cs.stream().anyMatch(c -> c.computeRequest() == 0));
        long plain = cs.stream().filter(c -> c.locality().isNone() && c.selectors().isNone()).count();
        assertTrue(plain > cs.size() / 3, "most claims are plain: " + plain);

        List<Claim> restricted = QgpuGens.claims(ClaimOptions.defaults().withMaxGpus(1).withLocality(false)
                .withSelectors(false).withExclusive(false).withPriorities(List.of(PriorityClass.ONLINE))).samples(2, 1000);
        assertTrue(restricted.stream().allMatch(c -> c.gpuCount() == 1 && c.locality().isNone() && c.selectors().isNone()
                && !c.exclusive() && c.priority() == PriorityClass.ONLINE));
    }

    @Test
    void inventoriesUseThePresetsAndRoundTripThroughJson() {
        Gen<Inventory> invs = QgpuGens.inventories(InventoryOptions.defaults().withReservedFor(true));
        Set<String> machines = new HashSet<>();
        boolean unhealthy = false;
        boolean reserved = false;
        int i = 0;
        for (Inventory inv : invs.samples(4, 300)) {
            assertTrue(inv.nodes().size() >= 1 && inv.nodes().size() <= 3);
            for (Node n : inv.nodes()) {
                machines.add(n.labels().get(Machines.LABEL_MACHINE));
                unhealthy |= n.gpus().stream().anyMatch(g -> !g.healthy());
                reserved |= n.gpus().stream().anyMatch(g -> g.reservedFor().isPresent());
            }
            if (i++ % 20 == 0) {
                assertEquals(inv, QgpuJson.readInventory(QgpuJson.writeInventory(inv)));
            }
        }
        assertEquals(InventoryOptions.defaults().machines().stream().map(t -> t.name()).collect(Collectors.toSet()), machines);
        assertTrue(unhealthy);
        assertTrue(reserved);
    }

    @Test
    void operationsNameEarlierTenantsAndShrinkConsistently() {
        Gen<List<Op>> ops = QgpuGens.operations(QgpuGens.claims(ClaimOptions.defaults()), 40);
        for (List<Op> seq : ops.samples(9, 200)) {
            Set<String> placed = new HashSet<>();
            for (Op op : seq) {
                if (op instanceof Op.Place p) {
                    assertEquals("t" + placed.size(), p.claim().tenantId());
                    placed.add(p.claim().tenantId());
                } else {
                    String t = ((Op.Release) op).tenantId();
                    assertTrue(t.equals("nobody") || placed.contains(t), t);
                }
            }
        }
        // shrinking the sequence keeps ids dense and releases pointing backwards
        Shrinkable<List<Op>> s = ops.sample(new SplittableRandom(10));
        s.shrinks().limit(50).forEach(c -> {
            int n = 0;
            for (Op op : c.value()) {
                if (op instanceof Op.Place p) {
                    assertEquals("t" + n++, p.claim().tenantId());
                }
            }
        });
    }

    @Test
    void scenariosAreReproducibleFromTheirSeedAndReadable() {
        Gen<PropertyScenario> g = QgpuGens.scenarios(InventoryOptions.defaults(), ClaimOptions.defaults(), 20);
        assertEquals(g.samples(42, 30), g.samples(42, 30));
        PropertyScenario s = g.generate(new SplittableRandom(42));
        String text = s.toString();
        assertTrue(text.startsWith("PropertyScenario rules qgpu, nodes:"), text);
        assertTrue(text.contains("ops:"), text);
    }

    @Test
    void describeIsShortAndComplete() {
        Claim c = Claim.builder("t3").gpus(2).memoryGiB(4).compute(20, 50).priority(PriorityClass.ONLINE)
                .locality(io.qgpu.api.Locality.none().withAntiAffinity("a0"))
                .selectors(io.qgpu.api.Selectors.builder().nodeLabel("pool", "a").build()).build();
        assertEquals("t3: 2 GPU x 4 GiB, compute 20/50, online, anti=a0, select node labels {pool=a}", Describe.claim(c));
        assertEquals("t4: 1 GPU exclusive, offline", Describe.claim(Claim.builder("t4").exclusive().build()));
        assertEquals("512 MiB", Describe.bytes(512 * GpuDevice.MIB));
        assertEquals("7 B", Describe.bytes(7));
    }
}
